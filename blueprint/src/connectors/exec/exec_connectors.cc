#include "connectors/exec/exec_connectors.h"

#include <fmt/format.h>

#include <set>

#include "attribution/codec.h"
#include "connectors/exec/exec_lines.h"
#include "connectors/files/template.h"

namespace attribution::blueprint {
namespace {

bool positive_int(const YAML::Node& n, const char* key, int64_t& out, std::string& error) {
  if (!n[key]) return true;
  int64_t v = 0;
  if (!n[key].IsScalar() || !YAML::convert<int64_t>::decode(n[key], v) || v <= 0) {
    error = fmt::format("{}: must be a positive integer", key);
    return false;
  }
  out = v;
  return true;
}

std::string replace_all(std::string s, const std::string& from, const std::string& to) {
  for (size_t p = 0; (p = s.find(from, p)) != std::string::npos; p += to.size()) s.replace(p, from.size(), to);
  return s;
}

std::string seconds(TimeNs t) { return t == kNoTime ? "" : std::to_string(t / 1000000000); }
std::string rfc3339(TimeNs t) { return t == kNoTime ? "" : format_rfc3339(t); }

// "`cmd`: <what>; exit 2; 1 invalid line(s): line 3: ...; stderr: ..." and the status.
struct RunSummary {
  std::string status;
  std::string reason;
};

RunSummary summarize(const ExecCommandConfig& cfg, const process::Result& r, const std::string& delivered, bool empty,
                     uint64_t invalid, const std::vector<std::string>& errors) {
  RunSummary s;
  std::string failure = r.failure();
  s.reason = fmt::format("`{}`: {}", process::describe_command(cfg.command), delivered);
  if (!failure.empty()) s.reason += "; " + failure;
  if (r.long_lines > 0) s.reason += fmt::format("; {} line(s) cut at {} bytes", r.long_lines, cfg.limits.max_line_bytes);
  if (invalid > 0) {
    s.reason += fmt::format("; {} invalid line(s) skipped (schema api/exec-connector.schema.json)", invalid);
    for (const auto& e : errors) s.reason += "; " + e;
    if (invalid > errors.size()) s.reason += fmt::format("; … {} more", invalid - errors.size());
  }
  std::string err = r.stderr_text;
  while (!err.empty() && (err.back() == '\n' || err.back() == '\r')) err.pop_back();
  // One line in reports and `run -o text`: stderr's line breaks become " | ".
  std::string flat;
  for (char c : err) {
    if (c == '\n') flat += " | ";
    else if (c != '\r') flat += c;
  }
  if (!flat.empty()) s.reason += "; stderr: " + flat;
  s.status = !failure.empty() || invalid > 0 || r.long_lines > 0 ? "error" : (empty ? "empty" : "ok");
  return s;
}

}  // namespace

bool parse_exec_command_config(const YAML::Node& config, const std::string& default_name, ExecCommandConfig& out,
                               std::string& error) {
  if (config && !config.IsMap() && !config.IsNull()) {
    error = "must be a mapping with command: ...";
    return false;
  }
  static const std::set<std::string> known = {"type",      "name",         "command",      "env",
                                              "cwd",       "timeout_s",    "max_stderr_bytes", "max_output_bytes",
                                              "max_line_bytes", "max_errors", "format",     "source",
                                              "margin_s"};
  for (const auto& kv : config) {
    std::string k = kv.first.as<std::string>("");
    if (!known.count(k)) {
      error = fmt::format("{}: unknown key for an exec connector", k);
      return false;
    }
  }
  out.name = config["name"] && config["name"].IsScalar() ? config["name"].Scalar() : default_name;
  const YAML::Node& cmd = config["command"];
  if (cmd && cmd.IsScalar() && !cmd.Scalar().empty()) {
    out.command = {"/bin/sh", "-c", cmd.Scalar()};
  } else if (cmd && cmd.IsSequence() && cmd.size() > 0) {
    for (const auto& a : cmd) {
      if (!a.IsScalar()) {
        error = "command: every argument must be a string";
        return false;
      }
      out.command.push_back(a.Scalar());
    }
  } else {
    error = "command: required (a list of arguments, run without a shell, or a string run by /bin/sh -c)";
    return false;
  }
  if (const auto& env = config["env"]) {
    if (!env.IsMap()) {
      error = "env: must be a mapping of variable names to strings";
      return false;
    }
    for (const auto& kv : env) {
      if (!kv.second.IsScalar()) {
        error = fmt::format("env.{}: must be a string", kv.first.as<std::string>(""));
        return false;
      }
      out.env[kv.first.as<std::string>("")] = kv.second.Scalar();
    }
  }
  if (config["cwd"]) out.cwd = config["cwd"].as<std::string>("");
  int64_t v = out.limits.timeout_s;
  if (!positive_int(config, "timeout_s", v, error)) return false;
  out.limits.timeout_s = static_cast<int>(std::min<int64_t>(v, 86400));
  v = static_cast<int64_t>(out.limits.max_stderr_bytes = 2048);
  if (!positive_int(config, "max_stderr_bytes", v, error)) return false;
  out.limits.max_stderr_bytes = static_cast<size_t>(v);
  v = static_cast<int64_t>(out.limits.max_stdout_bytes);
  if (!positive_int(config, "max_output_bytes", v, error)) return false;
  out.limits.max_stdout_bytes = static_cast<uint64_t>(v);
  v = static_cast<int64_t>(out.limits.max_line_bytes);
  if (!positive_int(config, "max_line_bytes", v, error)) return false;
  out.limits.max_line_bytes = static_cast<uint64_t>(v);
  v = static_cast<int64_t>(out.max_errors);
  if (!positive_int(config, "max_errors", v, error)) return false;
  out.max_errors = static_cast<size_t>(v);
  return true;
}

bool parse_exec_collector_config(const YAML::Node& config, ExecCollectorConfig& out, std::string& error) {
  if (!parse_exec_command_config(config, "exec", out.exec, error)) return false;
  std::string format = config["format"] ? config["format"].as<std::string>("") : "jsonl";
  if (format != "jsonl" && format != "text") {
    error = fmt::format("format: must be jsonl (observations and text blocks, one JSON object a line) or text "
                        "(stdout is the text of one source), not \"{}\"",
                        format);
    return false;
  }
  out.raw_text = format == "text";
  out.text_source.name = out.exec.name;
  if (const auto& s = config["source"]) {
    if (!s.IsMap()) {
      error = "source: must be a mapping {name, kind, node, rank, utc_offset_s}";
      return false;
    }
    for (const auto& kv : s) {
      std::string k = kv.first.as<std::string>("");
      if (k != "name" && k != "kind" && k != "node" && k != "rank" && k != "utc_offset_s" && k != "gpu") {
        error = fmt::format("source.{}: unknown key (name, kind, node, rank, gpu, utc_offset_s)", k);
        return false;
      }
    }
    if (s["name"]) out.text_source.name = s["name"].as<std::string>("");
    if (s["kind"]) {
      auto k = parse_observation_kind(s["kind"].as<std::string>(""));
      if (!k) {
        error = fmt::format("source.kind: unknown observation kind '{}'", s["kind"].as<std::string>(""));
        return false;
      }
      out.text_source.kind = *k;
    }
    if (s["node"]) out.text_source.node = s["node"].as<std::string>("");
    if (s["gpu"]) out.text_source.gpu = s["gpu"].as<std::string>("");
    if (s["rank"]) out.text_source.rank = s["rank"].as<int>(kNoRank);
    if (s["utc_offset_s"]) out.text_source.utc_offset_s = s["utc_offset_s"].as<int64_t>(0);
  } else if (out.raw_text) {
    error = "source: required with format: text ({name, kind, node})";
    return false;
  }
  int64_t m = out.margin_s;
  if (config["margin_s"] && (!YAML::convert<int64_t>::decode(config["margin_s"], m) || m < 0)) {
    error = "margin_s: must be a non-negative integer";
    return false;
  }
  out.margin_s = m;
  return true;
}

// ---------------------------------------------------------------------------------------------
// Adapter

bool ExecAdapter::run(const std::map<std::string, std::string>& vars, TimeNs from, TimeNs to,
                      std::vector<WorkloadAttempt>& out, std::string& error) {
  std::vector<std::string> argv = config_.command;
  for (size_t i = 1; i < argv.size(); ++i) {
    for (const auto& [k, v] : vars) {
      if (k.rfind("{", 0) == 0) argv[i] = replace_all(argv[i], k, v);
    }
  }
  std::map<std::string, std::string> env = config_.env;
  for (const auto& [k, v] : vars) {
    if (k.rfind("{", 0) != 0) env[k] = v;
  }
  std::vector<WorkloadAttempt> found;
  std::vector<std::string> errors;
  uint64_t invalid = 0, outside = 0;
  process::Request request{argv, env, config_.cwd, config_.limits};
  process::Result r = process::run_lines(request, [&](std::string_view line, uint64_t n) {
    if (line.find_first_not_of(" \t") == std::string_view::npos) return;
    ExecContextLine parsed;
    std::string e;
    if (!parse_exec_context_line(line, parsed, e)) {
      ++invalid;
      if (errors.size() < config_.max_errors) errors.push_back(fmt::format("line {}: {}", n, e));
      return;
    }
    if (from != kNoTime && (parsed.context.end < from || parsed.context.end > to)) {
      ++outside;
      return;
    }
    WorkloadAttempt a;
    a.context = std::move(parsed.context);
    a.evidence_files = std::move(parsed.evidence_files);
    found.push_back(std::move(a));
  });
  std::string delivered = fmt::format("{} context(s)", found.size());
  if (outside > 0) delivered += fmt::format(", {} ending outside the range dropped", outside);
  RunSummary s = summarize(config_, r, delivered, found.empty(), invalid, errors);
  if (found.empty() && s.status == "error") {
    error = fmt::format("{}: {}", config_.name, s.reason);
    return false;
  }
  ConnectorReport report{config_.name, s.status, s.reason, found.size(), r.stdout_bytes};
  for (auto& a : found) {
    a.reports.push_back(report);
    out.push_back(std::move(a));
  }
  return true;
}

bool ExecAdapter::by_job(const std::string& job_id, std::vector<WorkloadAttempt>& out, std::string& error) {
  return run({{"ATTRIBUTION_QUERY", "job"}, {"ATTRIBUTION_QUERY_JOB", job_id}, {"{job_id}", job_id}}, kNoTime,
             kNoTime, out, error);
}

bool ExecAdapter::ended_between(TimeNs from, TimeNs to, std::vector<WorkloadAttempt>& out, std::string& error) {
  return run({{"ATTRIBUTION_QUERY", "range"},
              {"ATTRIBUTION_QUERY_FROM", rfc3339(from)},
              {"ATTRIBUTION_QUERY_TO", rfc3339(to)},
              {"ATTRIBUTION_QUERY_FROM_S", seconds(from)},
              {"ATTRIBUTION_QUERY_TO_S", seconds(to)},
              {"{from}", rfc3339(from)},
              {"{to}", rfc3339(to)},
              {"{from_s}", seconds(from)},
              {"{to_s}", seconds(to)}},
             from, to, out, error);
}

// ---------------------------------------------------------------------------------------------
// Collector

std::map<std::string, std::string> exec_job_environment(const ExecutionContext& c, int64_t margin_s) {
  std::string nodes;
  for (const auto& n : c.nodes) nodes += (nodes.empty() ? "" : ",") + n;
  TimeNs margin = margin_s * 1000000000LL;
  TimeNs wstart = c.start == kNoTime ? kNoTime : c.start - margin;
  TimeNs wend = c.end == kNoTime ? kNoTime : c.end + margin;
  return {{"ATTRIBUTION_JOB_ID", c.id},
          {"ATTRIBUTION_JOB_ATTEMPT", std::to_string(c.attempt)},
          {"ATTRIBUTION_JOB_NAME", c.name},
          {"ATTRIBUTION_JOB_USER", c.user},
          {"ATTRIBUTION_JOB_QUEUE", c.queue},
          {"ATTRIBUTION_JOB_CLUSTER", c.cluster},
          {"ATTRIBUTION_JOB_SCHEDULER", c.scheduler},
          {"ATTRIBUTION_JOB_STATE", c.state},
          {"ATTRIBUTION_JOB_NODES", nodes},
          {"ATTRIBUTION_JOB_START", rfc3339(c.start)},
          {"ATTRIBUTION_JOB_END", rfc3339(c.end)},
          {"ATTRIBUTION_JOB_START_S", seconds(c.start)},
          {"ATTRIBUTION_JOB_END_S", seconds(c.end)},
          {"ATTRIBUTION_JOB_WINDOW_START", rfc3339(wstart)},
          {"ATTRIBUTION_JOB_WINDOW_END", rfc3339(wend)},
          {"ATTRIBUTION_JOB_WINDOW_START_S", seconds(wstart)},
          {"ATTRIBUTION_JOB_WINDOW_END_S", seconds(wend)},
          {"ATTRIBUTION_JOB_CONTEXT", context_to_json(c)}};
}

ConnectorReport ExecCollector::collect(const WorkloadAttempt& attempt, EvidenceSink& sink) {
  const auto& cfg = config_.exec;
  // A command whose arguments use {node}, {rank} or {day} runs once per node, rank or day of the
  // job (one after another, each with its own timeout); otherwise once.
  std::string args;
  for (size_t i = 1; i < cfg.command.size(); ++i) args.append(cfg.command[i]).push_back('\x1f');
  const char* unit = template_uses(args, "rank") ? "rank" : template_uses(args, "node") ? "node"
                     : template_uses(args, "day")  ? "day"
                                                   : nullptr;
  if (unit == nullptr) return collect_one(attempt, TemplateBinding{}, false, sink);
  std::vector<TemplateBinding> bindings = template_bindings(args, attempt.context);
  ConnectorReport total{cfg.name, "empty", "", 0, 0};
  if (bindings.empty()) {
    total.reason = fmt::format("`{}`: once per {}, but the job has none", process::describe_command(cfg.command), unit);
    return total;
  }
  size_t ok = 0, empty = 0, failed = 0;
  std::string failures;
  for (const TemplateBinding& b : bindings) {
    ConnectorReport one = collect_one(attempt, b, true, sink);
    total.observations += one.observations;
    total.bytes += one.bytes;
    std::string item = !b.node.empty() && b.rank == kNoRank ? b.node
                       : b.rank != kNoRank                  ? fmt::format("rank {}", b.rank)
                                                            : b.day;
    if (one.status == "error") {
      ++failed;
      if (failures.size() < 4096) failures += fmt::format("; [{}] {}", item, one.reason);
    } else if (one.status == "ok") {
      ++ok;
    } else {
      ++empty;
    }
  }
  total.status = failed > 0 ? "error" : ok > 0 ? "ok" : "empty";
  total.reason = fmt::format("`{}` once per {}: {} run(s), {} ok, {} empty, {} failed; {} observation(s){}",
                             process::describe_command(cfg.command), unit, bindings.size(), ok, empty, failed,
                             total.observations, failures);
  return total;
}

ConnectorReport ExecCollector::collect_one(const WorkloadAttempt& attempt, const TemplateBinding& binding, bool per_item,
                                           EvidenceSink& sink) {
  const auto& cfg = config_.exec;
  ConnectorReport report{cfg.name, "error", "", 0, 0};
  std::vector<std::string> argv = cfg.command;
  for (size_t i = 1; i < argv.size(); ++i) {
    std::string error;
    auto expanded = expand_template(argv[i], attempt.context, binding, TemplateEscape::kNone, error);
    if (!expanded) {
      report.reason = fmt::format("`{}`: argument {}: {}", process::describe_command(cfg.command), i, error);
      return report;
    }
    argv[i] = *expanded;
  }
  std::map<std::string, std::string> env = cfg.env;
  for (auto& [k, v] : exec_job_environment(attempt.context, config_.margin_s)) env[k] = v;
  // format: text — the whole stdout is one source; once per node it is that node's.
  TextSource text_source = config_.text_source;
  if (per_item) {
    if (!binding.node.empty()) env["ATTRIBUTION_NODE"] = binding.node;
    if (binding.rank != kNoRank) env["ATTRIBUTION_RANK"] = std::to_string(binding.rank);
    if (!binding.day.empty()) env["ATTRIBUTION_DAY"] = binding.day;
    std::string e;
    const bool named_per_item = template_uses(text_source.name, "node") || template_uses(text_source.name, "rank") ||
                                template_uses(text_source.name, "day");
    if (auto name = expand_template(text_source.name, attempt.context, binding, TemplateEscape::kNone, e)) text_source.name = *name;
    if (auto node = expand_template(text_source.node, attempt.context, binding, TemplateEscape::kNone, e)) text_source.node = *node;
    if (text_source.node.empty()) text_source.node = binding.node;
    if (text_source.rank == kNoRank) text_source.rank = binding.rank;
    if (!named_per_item) {
      if (!binding.node.empty()) text_source.name += ":" + binding.node;
      if (binding.rank != kNoRank) text_source.name += ":rank" + std::to_string(binding.rank);
      if (!binding.day.empty()) text_source.name += ":" + binding.day;
    }
  }

  std::vector<std::string> errors;
  uint64_t invalid = 0, observations = 0, blocks = 0, text_lines = 0;
  // format: text — whole stdout lines, handed over in blocks of about 1 MiB.
  std::string block;
  uint64_t block_first = 1;
  auto flush = [&] {
    if (block.empty()) return;
    sink.text(text_source, block, block_first);
    block.clear();
  };
  process::Request request{argv, env, cfg.cwd, cfg.limits};
  process::Result r = process::run_lines(request, [&](std::string_view line, uint64_t n) {
    if (config_.raw_text) {
      if (block.empty()) block_first = n;
      block.append(line);
      block.push_back('\n');
      ++text_lines;
      if (block.size() >= (1u << 20)) flush();
      return;
    }
    if (line.find_first_not_of(" \t") == std::string_view::npos) return;
    ExecEvidenceLine parsed;
    std::string e;
    if (!parse_exec_evidence_line(line, parsed, e)) {
      ++invalid;
      if (errors.size() < cfg.max_errors) errors.push_back(fmt::format("line {}: {}", n, e));
      return;
    }
    if (parsed.is_text) {
      if (!parsed.text.empty() && parsed.text.back() != '\n') parsed.text.push_back('\n');
      uint64_t lines = 0;
      for (char c : parsed.text) lines += c == '\n';
      text_lines += lines;
      ++blocks;
      sink.text(parsed.source, parsed.text, parsed.first_line);
      return;
    }
    if (parsed.observation.source.source.empty()) {
      parsed.observation.source.source = cfg.name;
      parsed.observation.source.line = n;
    }
    ++observations;
    sink.observation(parsed.observation);
  });
  flush();
  std::string delivered;
  if (config_.raw_text) {
    delivered = fmt::format("{} line(s) of text as {}", text_lines, text_source.name);
  } else {
    delivered = fmt::format("{} observation(s), {} text block(s) ({} line(s))", observations, blocks, text_lines);
  }
  RunSummary s = summarize(cfg, r, delivered, observations + text_lines == 0, invalid, errors);
  report.status = s.status;
  report.reason = s.reason;
  report.observations = observations + text_lines;
  report.bytes = r.stdout_bytes;
  return report;
}

namespace {

const AdapterRegistrar kExecAdapterRegistrar("exec", [](const YAML::Node& config, std::string& error)
                                                         -> std::unique_ptr<Adapter> {
  ExecCommandConfig c;
  if (!parse_exec_command_config(config, "exec", c, error)) {
    error = "adapters.exec." + error;
    return nullptr;
  }
  return std::make_unique<ExecAdapter>(std::move(c));
});

const CollectorRegistrar kExecCollectorRegistrar("exec", [](const YAML::Node& config, std::string& error)
                                                             -> std::unique_ptr<Collector> {
  ExecCollectorConfig c;
  if (!parse_exec_collector_config(config, c, error)) return nullptr;
  return std::make_unique<ExecCollector>(std::move(c));
});

}  // namespace

extern "C" void attribution_connector_exec_anchor() {}

}  // namespace attribution::blueprint
