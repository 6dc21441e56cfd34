#include "attribution/codec.h"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <charconv>
#include <cmath>
#include <nlohmann/json.hpp>

namespace attribution {
namespace {

using nlohmann::json;

std::string str_field(const json& j, const char* key, std::string& error, const std::string& where) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return "";
  if (it->is_string()) return it->get<std::string>();
  if (it->is_number_integer()) return std::to_string(it->get<int64_t>());
  error = fmt::format("{}{}: must be a string", where, key);
  return "";
}

TimeNs time_field(const json& j, const char* key, std::string& error, const std::string& where) {
  std::string s = str_field(j, key, error, where);
  if (s.empty() || !error.empty()) return kNoTime;
  auto t = parse_rfc3339(s);
  if (!t.ok()) {
    error = fmt::format("{}{}: {}", where, key, t.error);
    return kNoTime;
  }
  return t.value;
}

void fill_context(const json& j, ExecutionContext& c, std::string& error, const std::string& where) {
  if (!j.is_object()) {
    error = where.empty() ? "context must be a JSON object" : where + " must be an object";
    return;
  }
  c.id = str_field(j, "id", error, where);
  if (error.empty() && c.id.empty()) error = where + "id: required";
  if (auto s = str_field(j, "scheduler", error, where); !s.empty()) c.scheduler = s;
  c.cluster = str_field(j, "cluster", error, where);
  if (auto it = j.find("attempt"); it != j.end() && !it->is_null()) {
    if (it->is_number_integer()) c.attempt = it->get<int>();
    else error = where + "attempt: must be an integer";
  }
  c.step = str_field(j, "step", error, where);
  c.name = str_field(j, "name", error, where);
  c.user = str_field(j, "user", error, where);
  c.queue = str_field(j, "queue", error, where);
  c.state = str_field(j, "state", error, where);
  c.terminal_state = str_field(j, "terminal_state", error, where);
  c.exit_code = str_field(j, "exit_code", error, where);
  c.reason = str_field(j, "reason", error, where);
  c.start = time_field(j, "start", error, where);
  c.end = time_field(j, "end", error, where);
  if (auto it = j.find("nodes"); it != j.end() && !it->is_null()) {
    if (!it->is_array()) {
      error = where + "nodes: must be a list of strings";
    } else {
      for (const auto& n : *it) {
        if (!n.is_string()) {
          error = where + "nodes: must be a list of strings";
          break;
        }
        c.nodes.push_back(n.get<std::string>());
      }
    }
  }
  if (auto it = j.find("ranks"); it != j.end() && !it->is_null()) {
    if (!it->is_object()) {
      error = where + "ranks: must map rank numbers to nodes";
    } else {
      for (const auto& [k, v] : it->items()) {
        int r = -1;
        auto res = std::from_chars(k.data(), k.data() + k.size(), r);
        if (res.ec != std::errc() || r < 0 || !v.is_string()) {
          error = fmt::format("{}ranks.{}: must map a rank number to a node name", where, k);
          break;
        }
        c.ranks[r] = v.get<std::string>();
      }
    }
  }
  if (auto it = j.find("labels"); it != j.end() && it->is_object()) {
    for (const auto& [k, v] : it->items()) c.labels[k] = v.is_string() ? v.get<std::string>() : v.dump();
  }
}

}  // namespace

Parsed<ExecutionContext> context_from_json(std::string_view text) {
  Parsed<ExecutionContext> out;
  json j = json::parse(text, nullptr, false);
  if (j.is_discarded()) {
    out.error = "context: malformed JSON";
    return out;
  }
  fill_context(j, out.value, out.error, "");
  return out;
}

std::string context_to_json(const ExecutionContext& c) {
  json j = {{"id", c.id},       {"scheduler", c.scheduler}, {"cluster", c.cluster},
            {"attempt", c.attempt}, {"step", c.step},       {"name", c.name},
            {"user", c.user},   {"queue", c.queue},         {"nodes", c.nodes},
            {"state", c.state}, {"terminal_state", c.terminal_state},
            {"exit_code", c.exit_code}, {"reason", c.reason}, {"labels", c.labels}};
  json ranks = json::object();
  for (const auto& [r, n] : c.ranks) ranks[std::to_string(r)] = n;
  j["ranks"] = ranks;
  j["start"] = c.start == kNoTime ? json(nullptr) : json(format_rfc3339(c.start));
  j["end"] = c.end == kNoTime ? json(nullptr) : json(format_rfc3339(c.end));
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

Parsed<Observation> observation_from_json(std::string_view text) {
  Parsed<Observation> out;
  json j = json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) {
    out.error = "observation: malformed JSON object";
    return out;
  }
  Observation& o = out.value;
  std::string& err = out.error;
  std::string kind = str_field(j, "kind", err, "");
  auto k = parse_observation_kind(kind);
  if (!k) {
    out.error = fmt::format("kind: unknown observation kind '{}'", kind);
    return out;
  }
  o.kind = *k;
  o.node = str_field(j, "node", err, "");
  o.gpu = str_field(j, "gpu", err, "");
  if (auto it = j.find("rank"); it != j.end() && !it->is_null()) {
    if (it->is_number_integer() && it->get<int64_t>() >= 0 && it->get<int64_t>() < (1 << 24)) o.rank = it->get<int>();
    else err = "rank: must be a non-negative integer";
  }
  o.observed_at = time_field(j, "observed_at", err, "");
  o.boot_time = time_field(j, "boot_time", err, "");
  o.note = str_field(j, "note", err, "");
  if (auto it = j.find("utc_offset_s"); it != j.end() && !it->is_null()) {
    if (it->is_number_integer() && std::llabs(it->get<int64_t>()) <= 18 * 3600) o.utc_offset_s = it->get<int64_t>();
    else err = "utc_offset_s: must be an integer number of seconds within ±18 h";
  }
  if (auto it = j.find("source"); it != j.end() && it->is_object()) {
    o.source.source = str_field(*it, "source", err, "source.");
    if (auto l = it->find("line"); l != it->end() && l->is_number_unsigned()) o.source.line = l->get<uint64_t>();
  }
  if (auto it = j.find("metric"); it != j.end() && !it->is_null()) {
    if (!it->is_object()) {
      err = "metric: must be an object";
      return out;
    }
    MetricSample m;
    m.name = str_field(*it, "name", err, "metric.");
    auto v = it->find("value");
    if (v == it->end() || !v->is_number()) {
      err = "metric.value: must be a number";
      return out;
    }
    m.value = v->get<double>();
    if (auto l = it->find("labels"); l != it->end() && l->is_object()) {
      for (const auto& [lk, lv] : l->items()) {
        if (lv.is_string()) m.labels[lk] = lv.get<std::string>();
      }
    }
    m.t = o.observed_at;
    if (m.name.empty() && err.empty()) err = "metric.name: required";
    o.metric = std::move(m);
  } else {
    auto t = j.find("text");
    if (t == j.end() || !t->is_string()) {
      if (err.empty()) err = "text: required (a log line) unless metric is given";
      return out;
    }
    o.text = t->get<std::string>();
  }
  return out;
}

std::string observation_to_json(const Observation& o) {
  json j = {{"kind", std::string(to_string(o.kind))}, {"node", o.node}};
  if (o.rank != kNoRank) j["rank"] = o.rank;
  if (!o.gpu.empty()) j["gpu"] = o.gpu;
  if (o.observed_at != kNoTime) j["observed_at"] = format_rfc3339_ns(o.observed_at);
  if (o.boot_time != kNoTime) j["boot_time"] = format_rfc3339_ns(o.boot_time);
  if (o.utc_offset_s != 0) j["utc_offset_s"] = o.utc_offset_s;
  if (!o.note.empty()) j["note"] = o.note;
  j["source"] = {{"source", o.source.source}, {"line", o.source.line}};
  if (o.metric) {
    j["metric"] = {{"name", o.metric->name}, {"labels", o.metric->labels}, {"value", o.metric->value}};
  } else {
    j["text"] = o.text;
  }
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

namespace {

// yaml-cpp node → json, for reusing fill_context on the workload block.
json yaml_to_json(const YAML::Node& n) {
  switch (n.Type()) {
    case YAML::NodeType::Map: {
      json o = json::object();
      for (const auto& kv : n) o[kv.first.Scalar()] = yaml_to_json(kv.second);
      return o;
    }
    case YAML::NodeType::Sequence: {
      json a = json::array();
      for (const auto& e : n) a.push_back(yaml_to_json(e));
      return a;
    }
    case YAML::NodeType::Scalar: {
      const std::string& s = n.Scalar();
      if (n.Tag() != "!" ) {
        int64_t v = 0;
        auto r = std::from_chars(s.data(), s.data() + s.size(), v);
        if (r.ec == std::errc() && r.ptr == s.data() + s.size() && !s.empty()) return v;
      }
      return s;
    }
    default:
      return nullptr;
  }
}

}  // namespace

Parsed<BundleManifest> parse_bundle_manifest(std::string_view yaml_text, std::string_view name) {
  Parsed<BundleManifest> out;
  auto fail = [&](const YAML::Mark& m, const std::string& msg) {
    out.error = fmt::format("{}:{}:{}: {}", name, m.line + 1, m.column + 1, msg);
  };
  YAML::Node root;
  try {
    root = YAML::Load(std::string(yaml_text));
  } catch (const YAML::Exception& e) {
    fail(e.mark, e.msg);
    return out;
  }
  if (!root.IsMap()) {
    out.error = fmt::format("{}: must be a mapping with 'workload' and 'sources'", name);
    return out;
  }
  YAML::Node w = root["workload"];
  if (!w || !w.IsMap()) {
    fail(root.Mark(), "missing 'workload' mapping");
    return out;
  }
  static const std::set<std::string> kWorkloadKeys = {"id", "scheduler", "cluster", "attempt", "step", "name", "user", "queue", "state",
                                                      "terminal_state", "exit_code", "reason", "start", "end", "nodes", "ranks", "labels"};
  for (const auto& kv : w) {
    if (!kWorkloadKeys.count(kv.first.Scalar())) {
      fail(kv.first.Mark(), fmt::format("unknown key 'workload.{}'", kv.first.Scalar()));
      return out;
    }
  }
  json wj = yaml_to_json(w);
  if (wj.contains("id") && wj["id"].is_number_integer()) wj["id"] = std::to_string(wj["id"].get<int64_t>());
  if (wj.contains("step") && wj["step"].is_number()) wj["step"] = wj["step"].dump();
  if (wj.contains("exit_code") && wj["exit_code"].is_number()) wj["exit_code"] = wj["exit_code"].dump();
  for (const char* k : {"start", "end"}) {
    if (wj.contains(k) && wj[k].is_number()) {
      fail(w[k].Mark(), fmt::format("workload.{}: not an RFC 3339 time", k));
      return out;
    }
  }
  std::string error;
  fill_context(wj, out.value.context, error, "workload.");
  if (!error.empty()) {
    // Point at the offending key when we can.
    std::string key = error.substr(9, error.find(':') - 9);
    auto dot = key.find('.');
    if (dot != std::string::npos) key = key.substr(0, dot);
    fail(w[key] ? w[key].Mark() : w.Mark(), error);
    return out;
  }
  YAML::Node sources = root["sources"];
  if (!sources) return out;
  if (!sources.IsSequence()) {
    fail(sources.Mark(), "'sources' must be a list");
    return out;
  }
  static const std::set<std::string> kSourceKeys = {"path", "kind", "node", "rank", "local_rank", "gpu", "pod", "container",
                                                    "namespace", "boot_time", "timezone", "note"};
  for (const auto& s : sources) {
    if (!s.IsMap()) {
      fail(s.Mark(), "each source must be a mapping with 'path' and 'kind'");
      return out;
    }
    for (const auto& kv : s) {
      if (!kSourceKeys.count(kv.first.Scalar())) {
        fail(kv.first.Mark(), fmt::format("unknown key '{}' in source", kv.first.Scalar()));
        return out;
      }
    }
    BundleSource b;
    b.manifest_line = s.Mark().line + 1;
    if (!s["path"] || !s["path"].IsScalar() || s["path"].Scalar().empty()) {
      fail(s.Mark(), "source needs 'path'");
      return out;
    }
    b.path = s["path"].Scalar();
    std::string kind = s["kind"] ? s["kind"].Scalar() : "applog";
    auto k = parse_observation_kind(kind);
    if (!k) {
      fail(s["kind"].Mark(), fmt::format("unknown kind '{}' (applog, syslog, node_metrics, node_report, scheduler, k8s_event)", kind));
      return out;
    }
    b.defaults.kind = *k;
    b.defaults.name = b.path;
    if (s["node"]) b.defaults.node = s["node"].Scalar();
    for (const char* key : {"rank", "local_rank"}) {
      if (!s[key]) continue;
      int v = -1;
      const std::string& txt = s[key].Scalar();
      auto r = std::from_chars(txt.data(), txt.data() + txt.size(), v);
      if (r.ec != std::errc() || v < 0) {
        fail(s[key].Mark(), fmt::format("{} must be a non-negative integer", key));
        return out;
      }
      (std::string(key) == "rank" ? b.defaults.rank : b.local_rank) = v;
    }
    if (s["gpu"]) b.defaults.gpu = s["gpu"].Scalar();
    if (s["note"]) b.defaults.note = s["note"].Scalar();
    if (s["timezone"]) b.timezone = s["timezone"].Scalar();
    if (s["boot_time"]) {
      auto t = parse_rfc3339(s["boot_time"].Scalar());
      if (!t.ok()) {
        fail(s["boot_time"].Mark(), "boot_time: " + t.error);
        return out;
      }
      b.defaults.boot_time = t.value;
    }
    out.value.sources.push_back(std::move(b));
  }
  return out;
}

namespace {

bool parse_labels(std::string_view s, size_t& p, std::map<std::string, std::string>& labels, std::string& err) {
  // at '{'
  ++p;
  while (p < s.size()) {
    while (p < s.size() && (s[p] == ' ' || s[p] == ',')) ++p;
    if (p < s.size() && s[p] == '}') {
      ++p;
      return true;
    }
    size_t ks = p;
    while (p < s.size() && s[p] != '=' && s[p] != '}') ++p;
    if (p >= s.size() || s[p] != '=') {
      err = "label without '='";
      return false;
    }
    std::string key(s.substr(ks, p - ks));
    ++p;
    if (p >= s.size() || s[p] != '"') {
      err = "label value must be quoted";
      return false;
    }
    ++p;
    std::string value;
    while (p < s.size() && s[p] != '"') {
      if (s[p] == '\\' && p + 1 < s.size()) {
        ++p;
        value += s[p] == 'n' ? '\n' : s[p];
      } else {
        value += s[p];
      }
      ++p;
    }
    if (p >= s.size()) {
      err = "unterminated label value";
      return false;
    }
    ++p;
    labels[key] = value;
  }
  err = "unterminated label set";
  return false;
}

bool parse_number(std::string_view s, double& v) {
  std::string t(s);
  if (t == "NaN") { v = std::nan(""); return true; }
  if (t == "+Inf") { v = INFINITY; return true; }
  if (t == "-Inf") { v = -INFINITY; return true; }
  auto r = std::from_chars(t.data(), t.data() + t.size(), v);
  return r.ec == std::errc() && r.ptr == t.data() + t.size();
}

void parse_query_json(std::string_view text, MetricParse& out) {
  json j = json::parse(text, nullptr, false);
  if (j.is_discarded()) {
    out.errors.push_back("malformed JSON");
    return;
  }
  if (j.value("status", "") != "success" || !j.contains("data")) {
    out.errors.push_back(fmt::format("query response status is '{}': {}", j.value("status", ""), j.value("error", "")));
    return;
  }
  const json& result = j["data"]["result"];
  if (!result.is_array()) {
    out.errors.push_back("data.result is not a list");
    return;
  }
  for (size_t i = 0; i < result.size(); ++i) {
    const json& series = result[i];
    MetricSample base;
    if (series.contains("metric") && series["metric"].is_object()) {
      for (const auto& [k, v] : series["metric"].items()) {
        if (!v.is_string()) continue;
        if (k == "__name__") base.name = v.get<std::string>();
        else base.labels[k] = v.get<std::string>();
      }
    }
    auto add = [&](const json& pair) {
      if (!pair.is_array() || pair.size() < 2 || !pair[0].is_number() || !pair[1].is_string()) {
        out.errors.push_back(fmt::format("data.result[{}]: a sample must be [time, \"value\"]", i));
        return;
      }
      MetricSample m = base;
      double secs = pair[0].get<double>();
      if (!(std::fabs(secs) < 7.0e9)) {  // beyond year 2191 (and NaN): not a sample time
        out.errors.push_back(fmt::format("data.result[{}]: sample time out of range", i));
        return;
      }
      m.t = static_cast<TimeNs>(std::llround(secs * 1e3)) * 1000000LL;
      if (!parse_number(pair[1].get<std::string>(), m.value)) {
        out.errors.push_back(fmt::format("data.result[{}]: value is not a number", i));
        return;
      }
      out.samples.push_back(std::move(m));
    };
    if (series.contains("values")) {
      for (const auto& p : series["values"]) add(p);
    } else if (series.contains("value")) {
      add(series["value"]);
    }
  }
}

}  // namespace

MetricParse parse_metrics_text(std::string_view text) {
  MetricParse out;
  size_t first = text.find_first_not_of(" \t\r\n");
  if (first != std::string_view::npos && text[first] == '{') {
    parse_query_json(text, out);
    return out;
  }
  size_t line_no = 0;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    std::string_view line = text.substr(pos, nl == std::string_view::npos ? std::string_view::npos : nl - pos);
    pos = nl == std::string_view::npos ? text.size() : nl + 1;
    ++line_no;
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.remove_suffix(1);
    size_t p = 0;
    while (p < line.size() && line[p] == ' ') ++p;
    if (p >= line.size() || line[p] == '#') continue;
    MetricSample m;
    size_t ns = p;
    while (p < line.size() && line[p] != '{' && line[p] != ' ') ++p;
    m.name = std::string(line.substr(ns, p - ns));
    std::string err;
    if (p < line.size() && line[p] == '{' && !parse_labels(line, p, m.labels, err)) {
      out.errors.push_back(fmt::format("line {}: {}", line_no, err));
      continue;
    }
    while (p < line.size() && line[p] == ' ') ++p;
    size_t vs = p;
    while (p < line.size() && line[p] != ' ') ++p;
    if (!parse_number(line.substr(vs, p - vs), m.value)) {
      out.errors.push_back(fmt::format("line {}: value '{}' is not a number", line_no, line.substr(vs, p - vs)));
      continue;
    }
    while (p < line.size() && line[p] == ' ') ++p;
    if (p < line.size()) {
      int64_t ms = 0;
      auto r = std::from_chars(line.data() + p, line.data() + line.size(), ms);
      if (r.ec != std::errc()) {
        out.errors.push_back(fmt::format("line {}: timestamp is not an integer (milliseconds)", line_no));
        continue;
      }
      if (__builtin_mul_overflow(ms, int64_t{1000000}, &m.t)) {
        out.errors.push_back(fmt::format("line {}: timestamp out of range", line_no));
        continue;
      }
    }
    out.samples.push_back(std::move(m));
  }
  return out;
}

}  // namespace attribution
