#include "ingest.h"

#include <simdjson.h>

#include <charconv>
#include <cmath>
#include <cstdlib>

#include "attribution/codec.h"

namespace attribution::service {
namespace {

using simdjson::dom::element;
using simdjson::dom::element_type;

void set_fatal(IngestResult& r, simdjson::error_code err) {
  r.fatal_code = err == simdjson::UTF8_ERROR ? "invalid_utf8" : "malformed_json";
  r.fatal = std::string(simdjson::error_message(err));
}

std::string parse_error_reason(simdjson::error_code err) {
  if (err == simdjson::UTF8_ERROR) return "invalid UTF-8";
  return std::string("malformed JSON: ") + simdjson::error_message(err);
}

bool get_string(const element& e, std::string& out) {
  std::string_view sv;
  if (e.get_string().get(sv)) return false;
  out.assign(sv);
  return true;
}

// Label value lookup with a priority list.
std::string first_label(const std::map<std::string, std::string>& labels,
                        std::initializer_list<const char*> keys) {
  for (const char* k : keys) {
    auto it = labels.find(k);
    if (it != labels.end() && !it->second.empty()) return it->second;
  }
  return {};
}

std::string node_from_labels(const std::map<std::string, std::string>& labels) {
  std::string node = first_label(labels, {"node", "hostname", "Hostname", "host", "nodename"});
  if (!node.empty()) return node;
  node = first_label(labels, {"instance"});
  // "host:port" → host (exporter address); keep IPv6 literals and plain names as they are.
  auto colon = node.rfind(':');
  if (colon != std::string::npos && node.find(':') == colon && colon + 1 < node.size() &&
      node.find_first_not_of("0123456789", colon + 1) == std::string::npos)
    node.resize(colon);
  return node;
}

bool read_labels(const element& e, std::map<std::string, std::string>& out, std::string& reason,
                 const char* what) {
  simdjson::dom::object obj;
  if (e.get_object().get(obj)) {
    reason = std::string(what) + ": not an object";
    return false;
  }
  for (auto field : obj) {
    std::string v;
    if (!get_string(field.value, v)) {
      reason = std::string(what) + "." + std::string(field.key) + ": not a string";
      return false;
    }
    out[std::string(field.key)] = std::move(v);
  }
  return true;
}

// Seconds (float, Prometheus style) → ns, rounding to milliseconds like Prometheus.
TimeNs seconds_to_ns(double s) {
  double secs = std::floor(s);
  auto ms = static_cast<int64_t>(std::llround((s - secs) * 1000.0));
  return static_cast<int64_t>(secs) * 1000000000LL + ms * 1000000LL;
}

bool parse_double_text(std::string_view s, double& out) {
  std::string tmp(s);
  char* end = nullptr;
  out = std::strtod(tmp.c_str(), &end);
  return !tmp.empty() && end == tmp.c_str() + tmp.size();
}

}  // namespace

bool truncate_utf8(std::string& text, size_t max) {
  if (text.size() <= max) return false;
  size_t cut = max;
  // Back off continuation bytes so we do not split a code point.
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
  text.resize(cut);
  return true;
}

bool decode_observation(const element& e, const IngestOptions& options, Observation& o,
                        bool& truncated, std::string& reason) {
  truncated = false;
  simdjson::dom::object obj;
  if (e.get_object().get(obj)) {
    reason = "not a JSON object";
    return false;
  }
  bool have_kind = false, have_text = false;
  for (auto field : obj) {
    std::string_view key = field.key;
    const element& v = field.value;
    if (key == "kind") {
      std::string_view s;
      if (v.get_string().get(s)) { reason = "kind: not a string"; return false; }
      auto k = parse_observation_kind(s);
      if (!k) { reason = "kind: unknown kind \"" + std::string(s) + "\""; return false; }
      o.kind = *k;
      have_kind = true;
    } else if (key == "node") {
      if (v.is_null()) continue;
      if (!get_string(v, o.node)) { reason = "node: not a string"; return false; }
    } else if (key == "rank") {
      if (v.is_null()) continue;
      int64_t r;
      if (v.get_int64().get(r) || r < -1 || r > 100000000) {
        reason = "rank: not an integer rank";
        return false;
      }
      o.rank = static_cast<int>(r);
    } else if (key == "gpu") {
      if (v.is_null()) continue;
      int64_t g;
      if (v.is_int64() && !v.get_int64().get(g)) o.gpu = std::to_string(g);
      else if (!get_string(v, o.gpu)) { reason = "gpu: not a string or integer"; return false; }
    } else if (key == "observed_at") {
      if (v.is_null()) continue;
      std::string_view s;
      int64_t ns;
      if (!v.get_string().get(s)) {
        auto t = parse_rfc3339(s);
        if (!t.ok()) { reason = "observed_at: " + t.error; return false; }
        o.observed_at = t.value;
      } else if (!v.get_int64().get(ns)) {
        o.observed_at = ns;
      } else {
        reason = "observed_at: not an RFC 3339 string or integer nanoseconds";
        return false;
      }
    } else if (key == "source") {
      if (v.is_null()) continue;
      if (v.is_string()) {
        get_string(v, o.source.source);
        continue;
      }
      simdjson::dom::object so;
      if (v.get_object().get(so)) { reason = "source: not an object or string"; return false; }
      for (auto sf : so) {
        if (sf.key == "source" || sf.key == "name") {
          if (sf.value.is_null()) continue;
          if (!get_string(sf.value, o.source.source)) { reason = "source.source: not a string"; return false; }
        } else if (sf.key == "line") {
          if (sf.value.is_null()) continue;
          uint64_t line;
          if (sf.value.get_uint64().get(line)) { reason = "source.line: not a non-negative integer"; return false; }
          o.source.line = line;
        }
      }
    } else if (key == "boot_time") {
      // Source defaults (codec.h observation_to_json): dmesg anchor, zone offset, note.
      if (v.is_null()) continue;
      std::string_view s;
      if (v.get_string().get(s)) { reason = "boot_time: not an RFC 3339 string"; return false; }
      auto t = parse_rfc3339(s);
      if (!t.ok()) { reason = "boot_time: " + t.error; return false; }
      o.boot_time = t.value;
    } else if (key == "utc_offset_s") {
      if (v.is_null()) continue;
      int64_t off;
      if (v.get_int64().get(off) || off < -18 * 3600 || off > 18 * 3600) {
        reason = "utc_offset_s: must be an integer number of seconds within ±18 h";
        return false;
      }
      o.utc_offset_s = off;
    } else if (key == "note") {
      if (v.is_null()) continue;
      if (!get_string(v, o.note)) { reason = "note: not a string"; return false; }
    } else if (key == "text") {
      if (v.is_null()) continue;
      if (!get_string(v, o.text)) { reason = "text: not a string"; return false; }
      have_text = true;
    } else if (key == "metric") {
      if (v.is_null()) continue;
      simdjson::dom::object mo;
      if (v.get_object().get(mo)) { reason = "metric: not an object"; return false; }
      MetricSample m;
      bool have_name = false, have_value = false;
      for (auto mf : mo) {
        if (mf.key == "name") {
          if (!get_string(mf.value, m.name)) { reason = "metric.name: not a string"; return false; }
          have_name = true;
        } else if (mf.key == "labels") {
          if (mf.value.is_null()) continue;
          if (!read_labels(mf.value, m.labels, reason, "metric.labels")) return false;
        } else if (mf.key == "value") {
          double d;
          std::string_view s;
          if (!mf.value.get_double().get(d)) m.value = d;
          else if (!mf.value.get_string().get(s) && parse_double_text(s, d)) m.value = d;
          else { reason = "metric.value: not a number"; return false; }
          have_value = true;
        } else if (mf.key == "t") {
          if (mf.value.is_null()) continue;
          std::string_view s;
          int64_t ns;
          if (!mf.value.get_string().get(s)) {
            auto t = parse_rfc3339(s);
            if (!t.ok()) { reason = "metric.t: " + t.error; return false; }
            m.t = t.value;
          } else if (!mf.value.get_int64().get(ns)) {
            m.t = ns;
          } else { reason = "metric.t: not a time"; return false; }
        }
      }
      if (!have_name || m.name.empty()) { reason = "metric.name: required"; return false; }
      if (!have_value) { reason = "metric.value: required"; return false; }
      o.metric = std::move(m);
    }
    // Unknown fields are ignored (forward compatibility).
  }
  if (!have_kind) { reason = "kind: required"; return false; }
  if (!have_text && !o.metric) { reason = "an observation needs \"text\" or \"metric\""; return false; }
  if (o.metric && o.metric->t == kNoTime) o.metric->t = o.observed_at;
  truncated = truncate_utf8(o.text, options.max_line_bytes);
  return true;
}

IngestResult parse_observations(std::string_view body, const IngestOptions& options) {
  IngestResult r;
  size_t start = body.find_first_not_of(" \t\r\n");
  if (start == std::string_view::npos) return r;  // empty batch
  simdjson::dom::parser parser;
  auto take = [&](const element& e, size_t index) {
    r.items++;
    if (r.observations.size() >= options.max_items) {
      r.rejected.push_back({index, "too many items in one request"});
      return;
    }
    Observation o;
    bool truncated;
    std::string reason;
    if (decode_observation(e, options, o, truncated, reason)) {
      r.truncated += truncated;
      r.observations.push_back(std::move(o));
    } else {
      r.rejected.push_back({index, std::move(reason)});
    }
  };
  if (body[start] == '[') {
    element doc;
    auto err = parser.parse(body.data(), body.size(), true).get(doc);
    if (err) { set_fatal(r, err); return r; }
    simdjson::dom::array arr;
    if (doc.get_array().get(arr)) { r.fatal_code = "invalid_body"; r.fatal = "expected a JSON array"; return r; }
    size_t i = 0;
    for (element e : arr) take(e, i++);
    return r;
  }
  // NDJSON: one document per line; a malformed line is one rejected item.
  size_t index = 0, pos = 0;
  while (pos < body.size()) {
    size_t nl = body.find('\n', pos);
    if (nl == std::string_view::npos) nl = body.size();
    std::string_view line = body.substr(pos, nl - pos);
    pos = nl + 1;
    if (line.find_first_not_of(" \t\r") == std::string_view::npos) continue;
    element doc;
    auto err = parser.parse(line.data(), line.size(), true).get(doc);
    if (err) {
      r.items++;
      r.rejected.push_back({index++, parse_error_reason(err)});
      continue;
    }
    take(doc, index++);
  }
  return r;
}

IngestResult parse_loki(std::string_view body, const IngestOptions& options,
                        std::string_view default_kind) {
  IngestResult r;
  simdjson::dom::parser parser;
  element doc;
  auto err = parser.parse(body.data(), body.size(), true).get(doc);
  if (err) { set_fatal(r, err); return r; }
  simdjson::dom::array streams;
  if (doc["streams"].get_array().get(streams) && doc["data"]["result"].get_array().get(streams)) {
    r.fatal_code = "invalid_body";
    r.fatal = "expected {\"streams\": [...]} (Loki push) or a Loki query response";
    return r;
  }
  std::optional<ObservationKind> forced;
  if (!default_kind.empty()) forced = parse_observation_kind(default_kind);
  size_t index = 0, stream_no = 0;
  for (element stream : streams) {
    std::map<std::string, std::string> labels;
    std::string reason;
    simdjson::dom::array values;
    element lab;
    if (stream["stream"].get(lab) || !read_labels(lab, labels, reason, "stream")) {
      if (reason.empty()) reason = "stream: required";
    } else if (stream["values"].get_array().get(values)) {
      reason = "values: not an array";
    }
    if (!reason.empty()) {
      // The whole stream is one rejected item, indexed at the next value position.
      r.items++;
      r.rejected.push_back({index++, "streams[" + std::to_string(stream_no) + "]." + reason});
      stream_no++;
      continue;
    }
    ObservationKind kind = ObservationKind::kAppLog;
    std::optional<ObservationKind> from_label;
    if (auto it = labels.find("kind"); it != labels.end()) from_label = parse_observation_kind(it->second);
    if (from_label) kind = *from_label;
    else if (forced) kind = *forced;
    else {
      std::string hint = first_label(labels, {"job", "filename", "source", "service_name", "unit", "stream"});
      for (const char* s : {"syslog", "kern", "dmesg", "journal", "messages"})
        if (hint.find(s) != std::string::npos) kind = ObservationKind::kSyslog;
    }
    std::string node = node_from_labels(labels);
    int rank = kNoRank;
    if (auto it = labels.find("rank"); it != labels.end()) {
      int v;
      auto [p, ec] = std::from_chars(it->second.data(), it->second.data() + it->second.size(), v);
      if (ec == std::errc() && p == it->second.data() + it->second.size() && v >= 0) rank = v;
    }
    std::string gpu = first_label(labels, {"gpu"});
    std::string source = first_label(labels, {"filename", "source"});
    if (source.empty()) {
      source = "loki:{";
      bool first = true;
      for (const auto& [k, v] : labels) {
        if (!first) source += ',';
        first = false;
        source += k + "=\"" + v + "\"";
      }
      source += "}";
    }
    uint64_t line_no = 0;
    for (element value : values) {
      size_t my_index = index++;
      r.items++;
      line_no++;
      simdjson::dom::array pair;
      std::string_view ts, text;
      if (value.get_array().get(pair) || pair.size() < 2 || pair.at(0).get_string().get(ts) ||
          pair.at(1).get_string().get(text)) {
        r.rejected.push_back({my_index, "values[" + std::to_string(line_no - 1) +
                                            "]: expected [\"<unix ns>\", \"<line>\"]"});
        continue;
      }
      int64_t ns;
      auto [p, ec] = std::from_chars(ts.data(), ts.data() + ts.size(), ns);
      if (ec != std::errc() || p != ts.data() + ts.size()) {
        r.rejected.push_back({my_index, "values[" + std::to_string(line_no - 1) +
                                            "]: timestamp is not integer nanoseconds"});
        continue;
      }
      if (r.observations.size() >= options.max_items) {
        r.rejected.push_back({my_index, "too many items in one request"});
        continue;
      }
      Observation o;
      o.kind = kind;
      o.node = node;
      o.rank = rank;
      o.gpu = gpu;
      o.observed_at = ns;
      o.source = {source, line_no};
      o.text.assign(text);
      r.truncated += truncate_utf8(o.text, options.max_line_bytes);
      r.observations.push_back(std::move(o));
    }
    stream_no++;
  }
  return r;
}

IngestResult parse_prometheus(std::string_view body, const IngestOptions& options) {
  IngestResult r;
  simdjson::dom::parser parser;
  element doc;
  auto err = parser.parse(body.data(), body.size(), true).get(doc);
  if (err) { set_fatal(r, err); return r; }
  std::string_view status;
  if (!doc["status"].get_string().get(status) && status != "success") {
    r.fatal_code = "invalid_body";
    r.fatal = "Prometheus response status is \"" + std::string(status) + "\"";
    return r;
  }
  simdjson::dom::array result;
  if (doc["data"]["result"].get_array().get(result)) {
    r.fatal_code = "invalid_body";
    r.fatal = "expected a Prometheus query response {\"data\":{\"result\":[...]}}";
    return r;
  }
  size_t index = 0, series_no = 0;
  for (element series : result) {
    std::map<std::string, std::string> labels;
    std::string reason;
    element metric;
    if (series["metric"].get(metric) || !read_labels(metric, labels, reason, "metric")) {
      if (reason.empty()) reason = "metric: required";
    }
    std::string name;
    if (reason.empty()) {
      auto it = labels.find("__name__");
      if (it == labels.end() || it->second.empty()) reason = "metric: no __name__ label";
      else { name = it->second; labels.erase(it); }
    }
    std::vector<element> samples;
    if (reason.empty()) {
      simdjson::dom::array values;
      element single;
      if (!series["values"].get_array().get(values)) for (element v : values) samples.push_back(v);
      else if (!series["value"].get(single)) samples.push_back(single);
      else reason = "neither values nor value";
    }
    if (!reason.empty()) {
      r.items++;
      r.rejected.push_back({index++, "result[" + std::to_string(series_no++) + "]." + reason});
      continue;
    }
    std::string node = node_from_labels(labels);
    std::string gpu = first_label(labels, {"gpu"});
    for (const element& s : samples) {
      size_t my_index = index++;
      r.items++;
      simdjson::dom::array pair;
      double ts, value;
      std::string_view vs;
      if (s.get_array().get(pair) || pair.size() != 2 || pair.at(0).get_double().get(ts) ||
          pair.at(1).get_string().get(vs) || !parse_double_text(vs, value)) {
        r.rejected.push_back({my_index, "result[" + std::to_string(series_no) +
                                            "]: sample is not [<unix seconds>, \"<value>\"]"});
        continue;
      }
      if (r.observations.size() >= options.max_items) {
        r.rejected.push_back({my_index, "too many items in one request"});
        continue;
      }
      Observation o;
      o.kind = ObservationKind::kNodeMetrics;
      o.node = node;
      o.gpu = gpu;
      o.observed_at = seconds_to_ns(ts);
      o.source = {"prometheus", 0};
      MetricSample m;
      m.name = name;
      m.labels = labels;
      m.value = value;
      m.t = o.observed_at;
      o.metric = std::move(m);
      r.observations.push_back(std::move(o));
    }
    series_no++;
  }
  return r;
}

namespace {
void decode_reports_into(const element& doc, ReportsResult& r) {
  std::vector<element> items;
  simdjson::dom::array arr;
  if (!doc.get_array().get(arr)) for (element e : arr) items.push_back(e);
  else if (doc.is_object()) items.push_back(doc);
  else { r.fatal_code = "invalid_body"; r.fatal = "expected a JSON array of connector reports"; return; }
  size_t index = 0;
  for (const element& e : items) {
    size_t i = index++;
    simdjson::dom::object obj;
    if (e.get_object().get(obj)) { r.rejected.push_back({i, "not a JSON object"}); continue; }
    ConnectorReport c;
    std::string reason;
    for (auto f : obj) {
      if (f.key == "connector") { if (!get_string(f.value, c.connector)) reason = "connector: not a string"; }
      else if (f.key == "status") {
        if (!get_string(f.value, c.status)) reason = "status: not a string";
        else if (c.status != "ok" && c.status != "empty" && c.status != "error")
          reason = "status: must be ok, empty or error";
      } else if (f.key == "reason") { if (!f.value.is_null() && !get_string(f.value, c.reason)) reason = "reason: not a string"; }
      else if (f.key == "observations") { if (f.value.get_uint64().get(c.observations)) reason = "observations: not a non-negative integer"; }
      else if (f.key == "bytes") { if (f.value.get_uint64().get(c.bytes)) reason = "bytes: not a non-negative integer"; }
      if (!reason.empty()) break;
    }
    if (reason.empty() && c.connector.empty()) reason = "connector: required";
    if (!reason.empty()) r.rejected.push_back({i, std::move(reason)});
    else r.reports.push_back(std::move(c));
  }
}
}  // namespace

ReportsResult parse_connector_reports(std::string_view body) {
  ReportsResult r;
  simdjson::dom::parser parser;
  element doc;
  auto err = parser.parse(body.data(), body.size(), true).get(doc);
  if (err) {
    r.fatal_code = err == simdjson::UTF8_ERROR ? "invalid_utf8" : "malformed_json";
    r.fatal = simdjson::error_message(err);
    return r;
  }
  decode_reports_into(doc, r);
  return r;
}

OneShotRequest parse_one_shot(std::string_view body, const IngestOptions& options) {
  OneShotRequest req;
  simdjson::dom::parser parser;
  element doc;
  auto err = parser.parse(body.data(), body.size(), true).get(doc);
  if (err) { set_fatal(req.ingest, err); return req; }
  if (!doc.is_object()) { req.ingest.fatal_code = "invalid_body"; req.ingest.fatal = "expected a JSON object"; return req; }
  element ctx;
  if (doc["context"].get(ctx) || !ctx.is_object()) {
    req.ingest.fatal_code = "invalid_context";
    req.ingest.fatal = "context: required object";
    return req;
  }
  req.context_json = simdjson::minify(ctx);
  element obs;
  if (!doc["observations"].get(obs)) {
    simdjson::dom::array arr;
    if (obs.get_array().get(arr)) {
      req.ingest.fatal_code = "invalid_body";
      req.ingest.fatal = "observations: not an array";
      return req;
    }
    size_t i = 0;
    for (element e : arr) {
      size_t index = i++;
      req.ingest.items++;
      if (req.ingest.observations.size() >= options.max_items) {
        req.ingest.rejected.push_back({index, "too many items in one request"});
        continue;
      }
      Observation o;
      bool truncated;
      std::string reason;
      if (decode_observation(e, options, o, truncated, reason)) {
        req.ingest.truncated += truncated;
        req.ingest.observations.push_back(std::move(o));
      } else {
        req.ingest.rejected.push_back({index, std::move(reason)});
      }
    }
  }
  element reps;
  if (!doc["connector_reports"].get(reps) && !reps.is_null()) decode_reports_into(reps, req.reports);
  return req;
}

}  // namespace attribution::service
