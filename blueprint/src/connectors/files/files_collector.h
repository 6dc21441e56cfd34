// The local files collector (SPEC §9): path templates over the attempt's context, glob expansion,
// plain or gzip files, streamed in chunks into the EvidenceSink. Also reads the files an adapter
// found (e.g. Slurm StdOut/StdErr) when `include_adapter_files: true`.
//
// Config (collector block):
//   type: files
//   name: files/logs                  # report name (default "files")
//   include_adapter_files: false       # also read the adapter's evidence files (run reads them already)
//   chunk_bytes: 4194304
//   max_files: 10000                  # per collect(); beyond: status error, reason says so
//   sources:
//     - path: /shared/jobs/{job}/rank{rank}.log*   # templates: see template.h; then glob(3)
//       kind: applog                  # applog | syslog | node_report | scheduler | k8s_event
//       node: "{node}"                # optional node template (default: the {node}/{rank} binding)
//       note: "..."
//       utc_offset_s: 0               # for zone-less local times
//       boot_time: 2024-04-20T08:00:00Z
//
// Thread-safety: one collect() at a time per instance.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "connectors/connector.h"

namespace attribution::blueprint {

struct FilesSourceConfig {
  std::string path;
  TextSource defaults;
  std::string node_template;
};

struct FilesCollectorConfig {
  std::string name = "files";
  bool include_adapter_files = false;  // the run pipeline reads them itself
  size_t chunk_bytes = 4u << 20;
  size_t max_files = 10000;
  std::vector<FilesSourceConfig> sources;
};

// Parses the YAML block; false with `error` naming the key.
bool parse_files_config(const YAML::Node& config, FilesCollectorConfig& out, std::string& error);

class FilesCollector : public Collector {
 public:
  explicit FilesCollector(FilesCollectorConfig config) : config_(std::move(config)) {}
  std::string name() const override { return config_.name; }
  ConnectorReport collect(const WorkloadAttempt& attempt, EvidenceSink& sink) override;

 private:
  FilesCollectorConfig config_;
};

// Streams one file (plain or gzip) into the sink in line-aligned blocks. Adds bytes/lines read.
// False with `error` (naming the path) on a read error.
bool stream_file(const std::string& path, const TextSource& source, size_t chunk_bytes, EvidenceSink& sink,
                 uint64_t& bytes, uint64_t& lines, std::string& error);

}  // namespace attribution::blueprint
