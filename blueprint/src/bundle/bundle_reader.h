// Reads a workload bundle directory (SPEC §7): workload.yaml, then each source's files (globs
// relative to the bundle; paths that leave the bundle are refused). Resolves per-file defaults:
// rank from "rank12"-style file names, node from a job node name in the path, time zone offsets.
#pragma once

#include <string>
#include <vector>

#include "attribution/codec.h"
#include "io/parallel_scan.h"

namespace attribution::blueprint {

struct BundleFile {
  std::string path;      // on disk
  std::string relative;  // as shown in evidence
  TextSource source;
  size_t source_index = 0;  // which `sources:` entry
};

struct Bundle {
  std::string dir;
  BundleManifest manifest;
  std::vector<BundleFile> text_files;    // scanned as text
  std::vector<BundleFile> metric_files;  // node_metrics: parsed as samples
  // One entry per `sources:` item: files matched, or why none.
  struct SourceStatus {
    std::string pattern;
    size_t files = 0;
    std::string error;
  };
  std::vector<SourceStatus> statuses;
};

// Returns false with `error` ("bundle/workload.yaml:12:5: ...") when the bundle cannot be read.
bool read_bundle(const std::string& dir, Bundle& bundle, std::string& error);

}  // namespace attribution::blueprint
