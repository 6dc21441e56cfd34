#include "run/pipeline.h"

#include <fmt/format.h>

#include <algorithm>
#include <exception>

#include "bundle/bundle_reader.h"
#include "commands/analyze.h"
#include "connectors/static/static_adapter.h"
#include "io/file_reader.h"
#include "attribution/edge/rules_dir.h"
#include "attribution/text.h"

namespace attribution::blueprint {
namespace {

// Feeds collected evidence into the session, counting lines and bytes for the report.
class SessionSink : public EvidenceSink {
 public:
  explicit SessionSink(Session& s) : session_(s) {}
  void text(const TextSource& source, std::string_view block, uint64_t first_line) override {
    session_.ingest_text(source, block, first_line == 0 ? 1 : first_line);
    bytes += block.size();
    uint64_t nl = count_lines(block);
    lines += nl;
  }
  void observation(const Observation& o) override {
    session_.ingest(o);
    bytes += o.text.size();
    ++lines;
  }
  uint64_t lines = 0, bytes = 0;

 private:
  Session& session_;
};

// Reads one evidence file the adapter named (e.g. a Slurm job's StdOut) into the session.
ConnectorReport read_evidence_file(const std::string& adapter, const std::string& path, const TextSource& source,
                                   Session& session, uint64_t& lines_total) {
  ConnectorReport r;
  r.connector = fmt::format("{}:{}", adapter, source.name.empty() ? path : source.name);
  std::string error;
  auto reader = ChunkReader::open(path, 0, 0, 4u << 20, error);
  if (!reader) {
    r.status = "error";
    r.reason = error;
    return r;
  }
  Chunk chunk;
  uint64_t line = 1;
  TextSource src = source;
  if (src.name.empty()) src.name = path;
  while (reader->next(chunk)) {
    std::string_view block = chunk.buffer.substr(chunk.scan_from);
    session.ingest_text(src, block, line);
    uint64_t nl = count_lines(block);
    line += nl;
  }
  r.observations = line - 1;
  r.bytes = reader->bytes_read();
  lines_total += r.observations;
  if (!reader->error().empty()) {
    r.status = "error";
    r.reason = reader->error();
  } else if (r.observations == 0) {
    r.status = "empty";
    r.reason = "no lines";
  }
  return r;
}

YAML::Node collector_blocks(const YAML::Node& config) {
  // `collectors:` is a list of {type: name, ...}; a mapping name → block is accepted too.
  YAML::Node list(YAML::NodeType::Sequence);
  YAML::Node c = config["collectors"];
  if (!c) return list;
  if (c.IsSequence()) return c;
  if (c.IsMap()) {
    for (const auto& kv : c) {
      YAML::Node b = kv.second.IsMap() ? YAML::Clone(kv.second) : YAML::Node(YAML::NodeType::Map);
      if (!b["type"]) b["type"] = kv.first.as<std::string>();
      list.push_back(b);
    }
  }
  return list;
}

}  // namespace

bool AttemptOutcome::connector_failed() const {
  return std::any_of(reports.begin(), reports.end(), [](const ConnectorReport& r) { return r.status == "error"; });
}

Pipeline::~Pipeline() = default;

std::unique_ptr<Pipeline> Pipeline::create(const PipelineSetup& setup, bool default_sqlite,
                                           std::vector<std::string>& errors) {
  std::unique_ptr<Pipeline> p(new Pipeline());
  p->setup_ = setup;
  const YAML::Node& cfg = setup.config;
  const std::string& name = setup.config_name;
  p->cluster_ = cfg["cluster"] ? cfg["cluster"].as<std::string>("") : "";
  p->threads_ = cfg["threads"] ? cfg["threads"].as<unsigned>(0) : 0;
  p->adapter_name_ = cfg["adapter"] ? cfg["adapter"].as<std::string>("static") : "static";

  // Adapter.
  if (p->adapter_name_ == "static") {
    std::vector<std::string> bundles = setup.bundles;
    YAML::Node block = cfg["adapters"] ? cfg["adapters"]["static"] : YAML::Node();
    if (block && block["bundles"] && block["bundles"].IsSequence())
      for (const auto& b : block["bundles"]) bundles.push_back(b.as<std::string>(""));
    p->adapter_ = std::make_unique<StaticAdapter>(std::move(bundles));
  } else {
    auto it = adapter_registry().find(p->adapter_name_);
    if (it == adapter_registry().end()) {
      std::string known;
      for (const auto& [n, f] : adapter_registry()) known += (known.empty() ? "" : ", ") + n;
      errors.push_back(fmt::format("{}: adapter: unknown adapter \"{}\" (known: {})", name, p->adapter_name_, known));
      return nullptr;
    }
    YAML::Node block = cfg["adapters"] && cfg["adapters"][p->adapter_name_] ? YAML::Clone(cfg["adapters"][p->adapter_name_])
                                                                            : YAML::Node(YAML::NodeType::Map);
    if (!p->cluster_.empty() && block.IsMap() && !block["cluster"]) block["cluster"] = p->cluster_;
    std::string error;
    try {
      p->adapter_ = it->second(block, error);
    } catch (const std::exception& e) {
      error = e.what();
    }
    if (!p->adapter_) {
      errors.push_back(fmt::format("{}: {}", name, error.empty() ? "adapters." + p->adapter_name_ + ": cannot create" : error));
      return nullptr;
    }
  }

  // Collectors.
  build_collectors(*p, setup, errors);

  // Stores.
  YAML::Node stores = cfg["stores"];
  bool any_store = false;
  if (stores && stores.IsMap()) {
    for (const char* kind : {"sqlite", "postgres", "jsonl", "webhook"}) {
      YAML::Node block = stores[kind];
      if (!block || block.IsNull()) continue;
      if (block.IsMap() && block["enabled"] && !block["enabled"].as<bool>(true)) continue;
      any_store = true;
      auto it = store_registry().find(kind);
      if (it == store_registry().end()) {
        errors.push_back(fmt::format("{}: stores.{}: this build has no {} store", name, kind, kind));
        continue;
      }
      std::string error;
      std::unique_ptr<VerdictStore> s;
      try {
        s = it->second(block, std::string("stores.") + kind, error);
      } catch (const std::exception& e) {
        error = fmt::format("stores.{}: {}", kind, e.what());
      }
      if (!s) {
        errors.push_back(fmt::format("{}: {}", name, error));
        continue;
      }
      p->stores_.push_back(std::move(s));
    }
  }
  if (!any_store && default_sqlite) {
    YAML::Node block(YAML::NodeType::Map);
    block["path"] = "attribution.sqlite";
    std::string error;
    auto s = store_registry().at("sqlite")(block, "stores.sqlite", error);
    if (!s) errors.push_back(fmt::format("{}: {}", name, error));
    else p->stores_.push_back(std::move(s));
  }

  // Rules.
  std::string rules = cfg["rules"] ? cfg["rules"].as<std::string>("") : "";
  std::vector<std::string> rule_errors;
  p->rules_ = edge::load_rules_from(edge::resolve_rules_location(rules), rule_errors);
  if (!p->rules_) {
    for (auto& e : rule_errors) errors.push_back(fmt::format("rules: {}", e));
  }
  if (!errors.empty()) return nullptr;
  p->rules_digest_ = describe(*p->rules_).digest;
  return p;
}

bool Pipeline::build_collectors(Pipeline& p, const PipelineSetup& setup, std::vector<std::string>& errors) {
  const YAML::Node& cfg = setup.config;
  const std::string& name = setup.config_name;
  size_t errors_before = errors.size();
  YAML::Node blocks = collector_blocks(cfg);
  for (size_t i = 0; i < blocks.size(); ++i) {
    std::string type = blocks[i]["type"] ? blocks[i]["type"].as<std::string>("") : "";
    auto it = collector_registry().find(type);
    if (it == collector_registry().end()) {
      std::string known;
      for (const auto& [n, f] : collector_registry()) known += (known.empty() ? "" : ", ") + n;
      errors.push_back(fmt::format("{}: collectors[{}].type: unknown collector \"{}\" (known: {})", name, i, type,
                                   known.empty() ? "none built in" : known));
      continue;
    }
    std::string error;
    std::unique_ptr<Collector> c;
    try {
      c = it->second(blocks[i], error);
    } catch (const std::exception& e) {
      error = e.what();
    }
    if (!c) {
      errors.push_back(fmt::format("{}: collectors[{}]: {}", name, i, error.empty() ? "cannot create" : error));
      continue;
    }
    p.collectors_.push_back(std::move(c));
  }

  return errors.size() == errors_before;
}

VerdictStore* Pipeline::cursor_store() {
  for (auto& s : stores_)
    if (s->supports_cursors()) return s.get();
  return nullptr;
}

AttemptOutcome Pipeline::process(const WorkloadAttempt& attempt) {
  AttemptOutcome out = attribute(attempt);
  store(out);
  return out;
}

std::unique_ptr<Pipeline> Pipeline::worker(unsigned threads, std::vector<std::string>& errors) const {
  std::unique_ptr<Pipeline> w(new Pipeline());
  w->adapter_name_ = adapter_name_;
  w->cluster_ = cluster_;
  w->rules_ = rules_;
  w->rules_digest_ = rules_digest_;
  w->threads_ = threads ? threads : threads_;
  w->setup_ = setup_;
  if (!build_collectors(*w, setup_, errors)) return nullptr;
  return w;
}

AttemptOutcome Pipeline::attribute(const WorkloadAttempt& attempt) {
  AttemptOutcome out;
  out.context = attempt.context;
  if (out.context.cluster.empty()) out.context.cluster = cluster_;
  Session session(rules_, out.context);

  // The adapter's own evidence: a bundle's sources, or files it named (Slurm StdOut/StdErr).
  std::string bundle_dir = StaticAdapter::bundle_dir(attempt);
  if (!bundle_dir.empty()) {
    Bundle bundle;
    std::string error;
    if (!read_bundle(bundle_dir, bundle, error)) {
      out.reports.push_back({"static:" + bundle_dir, "error", error, 0, 0});
    } else {
      AnalyzeOptions options;
      options.threads = threads_;
      auto reports = collect_bundle(bundle, session, options, out.bytes, out.lines);
      out.reports.insert(out.reports.end(), reports.begin(), reports.end());
    }
  }
  for (const auto& [path, source] : attempt.evidence_files) {
    out.reports.push_back(read_evidence_file(adapter_name_, path, source, session, out.lines));
    out.bytes += out.reports.back().bytes;
  }

  // What the adapter reported about finding this attempt (exec adapter).
  out.reports.insert(out.reports.end(), attempt.reports.begin(), attempt.reports.end());

  // Configured collectors. A collector never aborts the run.
  for (auto& c : collectors_) {
    SessionSink sink(session);
    ConnectorReport r;
    std::string cname;
    try {
      cname = c->name();
      r = c->collect(attempt, sink);
    } catch (const std::exception& e) {
      r.status = "error";
      r.reason = fmt::format("collector threw: {}", e.what());
    } catch (...) {
      r.status = "error";
      r.reason = "collector threw an unknown exception";
    }
    if (r.connector.empty()) r.connector = cname;
    if (r.status.empty()) r.status = "ok";
    out.lines += sink.lines;
    out.bytes += sink.bytes;
    out.reports.push_back(std::move(r));
  }
  for (const auto& r : out.reports) session.add_connector_report(r);
  out.verdict = session.attribute();
  return out;
}

void Pipeline::store(AttemptOutcome& out) {
  RunRecord record{out.context, out.verdict, rules_digest_, now_rfc3339()};
  record.context.labels.clear();
  for (auto& s : stores_) {
    int64_t id = 0;
    std::string error;
    bool ok = false;
    try {
      ok = s->put(record, id, error);
    } catch (const std::exception& e) {
      error = e.what();
    }
    if (ok) out.stored.emplace_back(s->name(), id);
    else out.store_errors.push_back(fmt::format("{}: {}", s->name(), error));
  }
}

}  // namespace attribution::blueprint
