#include "connectors/exec/exec_lines.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cstdlib>
#include <set>

#include "attribution/codec.h"

namespace attribution::blueprint {
namespace {

using nlohmann::json;

// Parses one line as a JSON object; the error says where the syntax broke.
bool parse_object(std::string_view line, json& out, std::string& error) {
  try {
    out = json::parse(line);
  } catch (const json::parse_error& e) {
    std::string what = e.what();
    auto p = what.find("parse error");
    error = fmt::format("malformed JSON: {}", p == std::string::npos ? what : what.substr(p));
    return false;
  }
  if (!out.is_object()) {
    error = fmt::format("must be a JSON object, not {}", out.type_name());
    return false;
  }
  return true;
}

bool only_known(const json& j, const std::set<std::string>& known, const std::string& where, std::string& error) {
  for (const auto& [k, v] : j.items()) {
    if (known.count(k)) continue;
    std::string list;
    for (const auto& n : known) list += (list.empty() ? "" : ", ") + n;
    error = fmt::format("{}{}: unknown field (expected one of: {})", where, k, list);
    return false;
  }
  return true;
}

bool string_field(const json& j, const char* key, std::string& out, const std::string& where, std::string& error) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return true;
  if (!it->is_string()) {
    error = fmt::format("{}{}: must be a string, not {}", where, key, it->type_name());
    return false;
  }
  out = it->get<std::string>();
  return true;
}

// The TextSource fields shared by evidence_files entries and text blocks.
bool fill_source(const json& j, TextSource& s, const std::string& where, std::string& error) {
  std::string kind;
  if (!string_field(j, "kind", kind, where, error)) return false;
  if (kind.empty()) {
    error = where + "kind: required (applog, syslog, node_metrics, node_report, scheduler, k8s_event)";
    return false;
  }
  auto k = parse_observation_kind(kind);
  if (!k) {
    error = fmt::format("{}kind: unknown observation kind '{}' (applog, syslog, node_metrics, node_report, "
                        "scheduler, k8s_event)",
                        where, kind);
    return false;
  }
  s.kind = *k;
  if (!string_field(j, "node", s.node, where, error) || !string_field(j, "gpu", s.gpu, where, error) ||
      !string_field(j, "note", s.note, where, error))
    return false;
  if (auto it = j.find("rank"); it != j.end() && !it->is_null()) {
    if (!it->is_number_integer() || it->get<int64_t>() < 0 || it->get<int64_t>() >= (1 << 24)) {
      error = where + "rank: must be a non-negative integer";
      return false;
    }
    s.rank = it->get<int>();
  }
  if (auto it = j.find("utc_offset_s"); it != j.end() && !it->is_null()) {
    if (!it->is_number_integer() || std::llabs(it->get<int64_t>()) > 18 * 3600) {
      error = where + "utc_offset_s: must be an integer number of seconds within ±18 h";
      return false;
    }
    s.utc_offset_s = it->get<int64_t>();
  }
  std::string boot;
  if (!string_field(j, "boot_time", boot, where, error)) return false;
  if (!boot.empty()) {
    auto t = parse_rfc3339(boot);
    if (!t.ok()) {
      error = fmt::format("{}boot_time: {}", where, t.error);
      return false;
    }
    s.boot_time = t.value;
  }
  return true;
}

}  // namespace

bool parse_exec_context_line(std::string_view line, ExecContextLine& out, std::string& error) {
  json j;
  if (!parse_object(line, j, error)) return false;
  static const std::set<std::string> known = {
      "id",   "scheduler", "cluster", "attempt", "step",           "name",      "user",   "queue",  "nodes",
      "ranks", "start",    "end",     "state",   "terminal_state", "exit_code", "reason", "labels", "evidence_files"};
  if (!only_known(j, known, "", error)) return false;
  json context = j;
  context.erase("evidence_files");
  if (auto it = j.find("exit_code"); it != j.end() && !it->is_string() && !it->is_number_integer() && !it->is_null()) {
    error = "exit_code: must be a string (\"1:0\", \"137\") or an integer";
    return false;
  }
  if (auto it = j.find("labels"); it != j.end() && !it->is_null() && !it->is_object()) {
    error = "labels: must be an object of strings";
    return false;
  }
  auto parsed = context_from_json(context.dump());
  if (!parsed.ok()) {
    error = parsed.error;
    return false;
  }
  out.context = std::move(parsed.value);
  if (out.context.end == kNoTime) {
    error = "end: required (an ended job's end time, RFC 3339)";
    return false;
  }
  out.evidence_files.clear();
  if (auto it = j.find("evidence_files"); it != j.end() && !it->is_null()) {
    if (!it->is_array()) {
      error = "evidence_files: must be a list of {path, kind, ...}";
      return false;
    }
    static const std::set<std::string> file_keys = {"path", "kind", "node", "rank", "gpu", "boot_time",
                                                     "utc_offset_s", "note"};
    for (size_t i = 0; i < it->size(); ++i) {
      const json& f = (*it)[i];
      std::string where = fmt::format("evidence_files[{}].", i);
      if (!f.is_object()) {
        error = fmt::format("evidence_files[{}]: must be an object {{path, kind, ...}}", i);
        return false;
      }
      if (!only_known(f, file_keys, where, error)) return false;
      std::string path;
      if (!string_field(f, "path", path, where, error)) return false;
      if (path.empty()) {
        error = where + "path: required";
        return false;
      }
      TextSource s;
      if (!fill_source(f, s, where, error)) return false;
      s.name = path;
      out.evidence_files.emplace_back(path, std::move(s));
    }
  }
  return true;
}

bool parse_exec_evidence_line(std::string_view line, ExecEvidenceLine& out, std::string& error) {
  json j;
  if (!parse_object(line, j, error)) return false;
  std::string type = "observation";
  if (!string_field(j, "type", type, "", error)) return false;
  if (type == "text") {
    if (!only_known(j, {"type", "source", "text", "first_line"}, "", error)) return false;
    auto src = j.find("source");
    if (src == j.end() || !src->is_object()) {
      error = "source: required, an object {name, kind, node, ...}";
      return false;
    }
    if (!only_known(*src, {"name", "kind", "node", "rank", "gpu", "boot_time", "utc_offset_s", "note"}, "source.",
                    error))
      return false;
    out = ExecEvidenceLine{};
    out.is_text = true;
    if (!string_field(*src, "name", out.source.name, "source.", error)) return false;
    if (out.source.name.empty()) {
      error = "source.name: required (shown in evidence, e.g. \"lsf/job-42.out\")";
      return false;
    }
    if (!fill_source(*src, out.source, "source.", error)) return false;
    auto t = j.find("text");
    if (t == j.end() || !t->is_string()) {
      error = "text: required, a string of whole lines";
      return false;
    }
    out.text = t->get<std::string>();
    if (auto f = j.find("first_line"); f != j.end() && !f->is_null()) {
      if (!f->is_number_unsigned() || f->get<uint64_t>() == 0) {
        error = "first_line: must be a positive integer";
        return false;
      }
      out.first_line = f->get<uint64_t>();
    }
    return true;
  }
  if (type != "observation") {
    error = fmt::format("type: must be \"observation\" or \"text\", not \"{}\"", type);
    return false;
  }
  if (!only_known(j, {"type", "kind", "node", "rank", "gpu", "observed_at", "source", "text", "metric", "boot_time",
                      "utc_offset_s", "note"},
                  "", error))
    return false;
  if (!j.contains("kind")) {
    error = "kind: required (applog, syslog, node_metrics, node_report, scheduler, k8s_event)";
    return false;
  }
  json o = j;
  o.erase("type");
  auto parsed = observation_from_json(o.dump());
  if (!parsed.ok()) {
    error = parsed.error;
    return false;
  }
  out = ExecEvidenceLine{};
  out.observation = std::move(parsed.value);
  return true;
}

}  // namespace attribution::blueprint
