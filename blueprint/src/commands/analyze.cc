#include "commands/analyze.h"

#include <fmt/format.h>

#include <fstream>
#include <iostream>
#include <sstream>

#include "io/file_reader.h"
#include "io/parallel_scan.h"
#include "attribution/edge/rules_dir.h"
#include "service_client.h"
#include "attribution/text.h"

namespace attribution::blueprint {
namespace {

std::string read_small_file(const std::string& path, std::string& error) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    error = fmt::format("{}: cannot read", path);
    return "";
  }
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::vector<Observation> metric_observations(const BundleFile& f, std::string& error, std::string& warning) {
  std::vector<Observation> out;
  std::string text = read_small_file(f.path, error);
  if (!error.empty()) return out;
  MetricParse parsed = parse_metrics_text(text);
  if (!parsed.errors.empty()) {
    warning = fmt::format("{}: {} malformed sample(s), first: {}", f.relative, parsed.errors.size(), parsed.errors.front());
  }
  uint64_t n = 0;
  for (auto& s : parsed.samples) {
    Observation o;
    o.kind = ObservationKind::kNodeMetrics;
    o.node = f.source.node;
    o.rank = f.source.rank;
    o.source = {f.relative, ++n};
    o.observed_at = s.t;
    o.metric = std::move(s);
    out.push_back(std::move(o));
  }
  return out;
}

ConnectorReport report_for(const Bundle::SourceStatus& st, uint64_t observations, uint64_t bytes,
                           const std::string& read_error) {
  ConnectorReport r;
  r.connector = "files:" + st.pattern;
  r.observations = observations;
  r.bytes = bytes;
  if (!read_error.empty()) {
    r.status = "error";
    r.reason = read_error;
  } else if (!st.error.empty() && st.files == 0) {
    r.status = st.error.find("leaves the bundle") != std::string::npos ? "error" : "empty";
    r.reason = st.error;
  } else if (observations == 0) {
    r.status = "empty";
    r.reason = st.error.empty() ? "no lines" : st.error;
  } else {
    r.status = "ok";
    r.reason = st.error;
  }
  return r;
}

}  // namespace

std::vector<ConnectorReport> collect_bundle(const Bundle& bundle, Session& session, const AnalyzeOptions& options,
                                            uint64_t& bytes, uint64_t& lines) {
  size_t n = bundle.statuses.size();
  std::vector<uint64_t> obs(n, 0), byt(n, 0);
  std::vector<std::string> errors(n);
  std::vector<ScanInput> inputs;
  inputs.reserve(bundle.text_files.size());
  for (const auto& f : bundle.text_files) inputs.push_back({&f.path, &f.source});
  ScanOptions so;
  so.threads = options.threads;
  so.chunk_bytes = options.chunk_bytes;
  Extraction merged = session.new_extraction();
  auto results = scan_files(
      std::shared_ptr<const RuleSet>(std::shared_ptr<const RuleSet>{}, &session.rules()),
      [&] { return session.new_extraction(); }, inputs, so, merged);
  session.merge(std::move(merged));
  for (size_t i = 0; i < results.size(); ++i) {
    size_t si = bundle.text_files[i].source_index;
    obs[si] += results[i].lines;
    byt[si] += results[i].bytes;
    bytes += results[i].bytes;
    lines += results[i].lines;
    if (!results[i].error.empty() && errors[si].empty()) errors[si] = results[i].error;
  }
  for (const auto& f : bundle.metric_files) {
    std::string error, warning;
    auto samples = metric_observations(f, error, warning);
    for (const auto& o : samples) session.ingest(o);
    obs[f.source_index] += samples.size();
    byt[f.source_index] += file_size(f.path);
    if (!error.empty() && errors[f.source_index].empty()) errors[f.source_index] = error;
  }
  std::vector<ConnectorReport> reports;
  for (size_t i = 0; i < n; ++i) reports.push_back(report_for(bundle.statuses[i], obs[i], byt[i], errors[i]));
  return reports;
}

std::vector<Observation> bundle_observations(const Bundle& bundle, std::vector<ConnectorReport>& reports,
                                             std::string& error) {
  size_t n = bundle.statuses.size();
  std::vector<uint64_t> obs(n, 0), byt(n, 0);
  std::vector<std::string> errors(n);
  std::vector<Observation> out;
  for (const auto& f : bundle.text_files) {
    std::string open_error;
    auto reader = ChunkReader::open(f.path, 0, 0, 4u << 20, open_error);
    if (!reader) {
      errors[f.source_index] = open_error;
      continue;
    }
    Chunk chunk;
    uint64_t line = 1;
    while (reader->next(chunk)) {
      std::string_view block = chunk.buffer.substr(chunk.scan_from);
      Observation o;
      o.kind = f.source.kind;
      o.node = f.source.node;
      o.rank = f.source.rank;
      o.gpu = f.source.gpu;
      o.source = {f.relative, line};
      o.text = std::string(block);
      o.boot_time = f.source.boot_time;
      o.utc_offset_s = f.source.utc_offset_s;
      o.note = f.source.note;
      uint64_t nl = count_lines(block);
      line += nl;
      obs[f.source_index] += nl;
      out.push_back(std::move(o));
    }
    byt[f.source_index] += reader->bytes_read();
    if (!reader->error().empty()) errors[f.source_index] = reader->error();
  }
  for (const auto& f : bundle.metric_files) {
    std::string err, warning;
    auto samples = metric_observations(f, err, warning);
    obs[f.source_index] += samples.size();
    byt[f.source_index] += file_size(f.path);
    if (!err.empty()) errors[f.source_index] = err;
    for (auto& o : samples) out.push_back(std::move(o));
  }
  for (size_t i = 0; i < n; ++i) reports.push_back(report_for(bundle.statuses[i], obs[i], byt[i], errors[i]));
  (void)error;
  return out;
}

AnalysisResult analyze_bundle(Bundle bundle, const std::shared_ptr<const RuleSet>& rules,
                              const AnalyzeOptions& options) {
  AnalysisResult result;
  auto session = std::make_unique<Session>(rules, std::move(bundle.manifest.context));
  result.reports = collect_bundle(bundle, *session, options, result.bytes, result.lines);
  bundle = Bundle{};
  for (const auto& r : result.reports) session->add_connector_report(r);
  result.verdict = session->attribute();
#if !defined(__SANITIZE_ADDRESS__)
  if (!options.free_session) (void)session.release();  // reclaimed with the process (see AnalyzeOptions)
#endif
  return result;
}

int run_analyze(const AnalyzeOptions& options, std::ostream& out, std::ostream& err) {
  if (options.output != "json" && options.output != "text") {
    err << "error: --output must be json or text\n";
    return kExitUsage;
  }
  Bundle bundle;
  std::string error;
  if (!read_bundle(options.bundle, bundle, error)) {
    err << "error: " << error << "\n";
    return kExitError;
  }
  Verdict verdict;
  std::vector<ConnectorReport> reports;
  uint64_t lines = 0;
  if (!options.service_url.empty()) {
    auto observations = bundle_observations(bundle, reports, error);
    for (const auto& r : reports) lines += r.observations;
    ServiceClient client(options.service_url, options.token);
    client.keep_session(options.keep_session);
    bool analyzed = client.analyze(bundle.manifest.context, observations, reports, verdict.json, error);
    if (options.service_stats)
      err << "service: batches sent " << client.batches_sent() << " acknowledged " << client.batches_acknowledged()
          << " replayed " << client.batches_replayed() << " retries " << client.retries() << "\n";
    else if (client.retries() > 0)
      err << "note: " << client.retries() << " service request(s) retried\n";
    if (!analyzed) {
      err << "error: " << error << "\n";
      return kExitError;
    }
    if (options.output == "text") {
      err << "note: --output text with --service-url prints the service's verdict JSON\n";
    }
    out << verdict.json << "\n";
  } else {
    std::vector<std::string> errors;
    auto rules = edge::load_rules_from(edge::resolve_rules_location(options.rules), errors);
    if (!rules) {
      for (const auto& e : errors) err << "error: " << e << "\n";
      return kExitError;
    }
    AnalysisResult result = analyze_bundle(std::move(bundle), rules, options);
    verdict = std::move(result.verdict);
    reports = std::move(result.reports);
    lines = result.lines;
    out << (options.output == "json" ? verdict.json + "\n" : verdict.summary);
  }
  bool failed = std::any_of(reports.begin(), reports.end(), [](const ConnectorReport& r) { return r.status == "error"; });
  if (lines == 0) {
    err << "warning: no evidence could be read from the bundle\n";
    return kExitNoData;
  }
  return failed ? kExitPartial : kExitOk;
}

}  // namespace attribution::blueprint
