#include "connectors/files/files_collector.h"

#include <fmt/format.h>
#include <glob.h>

#include <algorithm>
#include <set>

#include "attribution/codec.h"
#include "connectors/files/template.h"
#include "io/file_reader.h"
#include "attribution/text.h"

namespace attribution::blueprint {

bool stream_file(const std::string& path, const TextSource& source, size_t chunk_bytes, EvidenceSink& sink,
                 uint64_t& bytes, uint64_t& lines, std::string& error) {
  auto reader = ChunkReader::open(path, 0, 0, chunk_bytes, error);
  if (!reader) return false;
  Chunk chunk;
  uint64_t line = 1;
  while (reader->next(chunk)) {
    std::string_view block = chunk.buffer.substr(chunk.scan_from);
    if (block.empty()) continue;
    sink.text(source, block, line);
    uint64_t n = count_lines(block);
    line += n;
    lines += n;
    bytes += block.size();
  }
  if (!reader->error().empty()) {
    error = reader->error();
    return false;
  }
  return true;
}

bool parse_files_config(const YAML::Node& config, FilesCollectorConfig& out, std::string& error) {
  try {
    if (!config || !config.IsMap()) {
      error = "files: the collector block must be a map";
      return false;
    }
    if (config["name"]) out.name = config["name"].as<std::string>();
    if (config["include_adapter_files"]) out.include_adapter_files = config["include_adapter_files"].as<bool>();
    if (config["chunk_bytes"]) out.chunk_bytes = std::max<size_t>(4096, config["chunk_bytes"].as<size_t>());
    if (config["max_files"]) out.max_files = config["max_files"].as<size_t>();
    auto parse_source = [&](const YAML::Node& n, const std::string& where) -> bool {
      FilesSourceConfig s;
      if (!n["path"]) {
        error = where + ".path: missing";
        return false;
      }
      s.path = n["path"].as<std::string>();
      std::string kind = n["kind"] ? n["kind"].as<std::string>() : "applog";
      auto k = parse_observation_kind(kind);
      if (!k || *k == ObservationKind::kNodeMetrics) {
        error = fmt::format("{}.kind: unknown text kind '{}' (applog, syslog, node_report, scheduler, k8s_event)",
                            where, kind);
        return false;
      }
      s.defaults.kind = *k;
      if (n["node"]) s.node_template = n["node"].as<std::string>();
      if (n["note"]) s.defaults.note = n["note"].as<std::string>();
      if (n["utc_offset_s"]) s.defaults.utc_offset_s = n["utc_offset_s"].as<int64_t>();
      if (n["boot_time"]) {
        auto t = parse_rfc3339(n["boot_time"].as<std::string>());
        if (!t.ok()) {
          error = where + ".boot_time: " + t.error;
          return false;
        }
        s.defaults.boot_time = t.value;
      }
      out.sources.push_back(std::move(s));
      return true;
    };
    if (config["path"] && !parse_source(config, "files")) return false;
    if (YAML::Node srcs = config["sources"]) {
      if (!srcs.IsSequence()) {
        error = "files.sources: must be a list";
        return false;
      }
      for (size_t i = 0; i < srcs.size(); ++i)
        if (!parse_source(srcs[i], fmt::format("files.sources[{}]", i))) return false;
    }
    return true;
  } catch (const YAML::Exception& e) {
    error = fmt::format("files: {}", e.what());
    return false;
  }
}

ConnectorReport FilesCollector::collect(const WorkloadAttempt& attempt, EvidenceSink& sink) {
  ConnectorReport report;
  report.connector = config_.name;
  const ExecutionContext& ctx = attempt.context;
  std::vector<std::pair<std::string, TextSource>> files;
  std::set<std::string> seen;
  std::vector<std::string> errors;
  size_t unmatched = 0;
  if (config_.include_adapter_files) {
    for (const auto& f : attempt.evidence_files)
      if (seen.insert(f.first).second) files.push_back(f);
  }
  for (const auto& src : config_.sources) {
    for (const auto& binding : template_bindings(src.path, ctx)) {
      std::string err;
      auto pattern = expand_template(src.path, ctx, binding, TemplateEscape::kNone, err);
      if (!pattern) {
        errors.push_back(err);
        continue;
      }
      TextSource ts = src.defaults;
      ts.node = binding.node;
      ts.rank = binding.rank;
      if (!src.node_template.empty()) {
        auto node = expand_template(src.node_template, ctx, binding, TemplateEscape::kNone, err);
        if (node) ts.node = *node;
      }
      glob_t g{};
      int rc = glob(pattern->c_str(), GLOB_NOSORT, nullptr, &g);
      std::vector<std::string> matches;
      if (rc == 0)
        for (size_t i = 0; i < g.gl_pathc; ++i) matches.emplace_back(g.gl_pathv[i]);
      globfree(&g);
      if (rc != 0 && rc != GLOB_NOMATCH) errors.push_back(fmt::format("{}: glob failed", *pattern));
      if (matches.empty()) ++unmatched;
      std::sort(matches.begin(), matches.end());
      for (auto& m : matches) {
        if (!seen.insert(m).second) continue;
        TextSource fs = ts;
        fs.name = m;
        files.emplace_back(m, std::move(fs));
      }
    }
  }
  size_t read_files = 0;
  uint64_t lines = 0;
  for (const auto& [path, source] : files) {
    if (read_files >= config_.max_files) {
      errors.push_back(fmt::format("more than max_files={} files matched; the rest were not read", config_.max_files));
      break;
    }
    TextSource s = source;
    if (s.name.empty()) s.name = path;
    std::string err;
    if (!stream_file(path, s, config_.chunk_bytes, sink, report.bytes, lines, err)) {
      errors.push_back(err);
      continue;
    }
    ++read_files;
  }
  report.observations = lines;
  if (!errors.empty()) {
    report.status = "error";
    report.reason = errors.front();
    if (errors.size() > 1) report.reason += fmt::format(" (and {} more errors)", errors.size() - 1);
  } else if (lines == 0) {
    report.status = "empty";
    report.reason = files.empty() ? fmt::format("no file matched ({} patterns expanded)", unmatched)
                                  : fmt::format("{} files matched, all empty", files.size());
  } else {
    report.reason = fmt::format("{} files, {} lines", read_files, lines);
  }
  return report;
}

namespace {
const CollectorRegistrar kFilesRegistrar("files", [](const YAML::Node& config, std::string& error)
                                                      -> std::unique_ptr<Collector> {
  FilesCollectorConfig c;
  if (!parse_files_config(config, c, error)) return nullptr;
  return std::make_unique<FilesCollector>(std::move(c));
});
}  // namespace

}  // namespace attribution::blueprint

// Pulled in by the linker through `-u` (blueprint/collectors.cmake): keeps the registrar above in
// static links.
extern "C" void attribution_connector_files_anchor() {}
