#include "connectors/loki/loki_collector.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <nlohmann/json.hpp>
#include <set>

#include "connectors/files/template.h"
#include "attribution/edge/rules_dir.h"

namespace attribution::blueprint {
namespace {

template <class T>
void read(const YAML::Node& n, const char* key, T& out) {
  if (n[key]) out = n[key].as<T>();
}

std::string labels_key(const nlohmann::json& stream) {
  std::string s = "{";
  bool first = true;
  if (stream.is_object()) {
    for (auto it = stream.begin(); it != stream.end(); ++it) {
      if (!first) s += ", ";
      first = false;
      s += it.key() + "=\"" + (it.value().is_string() ? it.value().get<std::string>() : it.value().dump()) + "\"";
    }
  }
  return s + "}";
}

std::string snippet(const std::string& body) {
  std::string s = body.substr(0, 200);
  std::replace(s.begin(), s.end(), '\n', ' ');
  return s;
}

struct Entry {
  TimeNs t;
  size_t stream;
  std::string line;
};

}  // namespace

bool parse_loki_config(const YAML::Node& config, LokiCollectorConfig& out, std::string& error) {
  try {
    if (!config || !config.IsMap()) {
      error = "loki: the collector block must be a map";
      return false;
    }
    read(config, "name", out.name);
    read(config, "url", out.url);
    if (out.url.empty()) {
      error = "loki.url: missing";
      return false;
    }
    while (!out.url.empty() && out.url.back() == '/') out.url.pop_back();
    read(config, "tenant", out.tenant);
    if (config["headers"]) out.headers = config["headers"].as<std::vector<std::string>>();
    if (config["kind"]) {
      auto k = parse_observation_kind(config["kind"].as<std::string>());
      if (!k || *k == ObservationKind::kNodeMetrics) {
        error = "loki.kind: must be a text kind (applog, syslog, node_report, scheduler, k8s_event)";
        return false;
      }
      out.kind = *k;
    }
    if (config["query"]) out.queries.push_back(config["query"].as<std::string>());
    if (config["queries"]) {
      for (const auto& q : config["queries"]) out.queries.push_back(q.as<std::string>());
    }
    if (out.queries.empty()) {
      error = "loki.query: missing (a LogQL stream selector template, e.g. '{host=\"{node}\"}')";
      return false;
    }
    read(config, "node_label", out.node_label);
    read(config, "rank_label", out.rank_label);
    read(config, "limit", out.limit);
    read(config, "max_limit", out.max_limit);
    if (out.limit <= 0 || out.max_limit < out.limit) {
      error = "loki.limit: must be > 0 and <= max_limit";
      return false;
    }
    read(config, "pushdown", out.pushdown);
    if (out.pushdown != "literals" && out.pushdown != "patterns" && out.pushdown != "off") {
      error = "loki.pushdown: literals | patterns | off";
      return false;
    }
    read(config, "rules", out.rules);
    read(config, "margin_s", out.margin_s);
    read(config, "max_entries", out.max_entries);
    read(config, "max_bytes", out.max_bytes);
    read(config, "timeout_ms", out.timeout_ms);
    read(config, "retries", out.retry.max_attempts);
    read(config, "backoff_ms", out.retry.backoff_ms);
    read(config, "max_backoff_ms", out.retry.max_backoff_ms);
    return true;
  } catch (const YAML::Exception& e) {
    error = fmt::format("loki: {}", e.what());
    return false;
  }
}

LokiCollector::LokiCollector(LokiCollectorConfig config) : config_(std::move(config)) {
  pushdown_.mode = "off";
  if (config_.pushdown == "off") return;
  std::vector<RuleText> files;
  std::string location = edge::resolve_rules_location(config_.rules);
  if (!edge::read_rule_files(location, files, pushdown_error_)) return;
  auto patterns = catalog_patterns(files, pushdown_error_);
  if (!pushdown_error_.empty()) return;
  pushdown_ = build_pushdown(patterns, config_.kind, config_.pushdown);
}

ConnectorReport LokiCollector::collect(const WorkloadAttempt& attempt, EvidenceSink& sink) {
  ConnectorReport report;
  report.connector = config_.name;
  stats_ = {};
  const ExecutionContext& ctx = attempt.context;
  if (ctx.start == kNoTime || ctx.end == kNoTime) {
    report.status = "error";
    report.reason = "the workload has no start/end time to bound the Loki query";
    return report;
  }
  const TimeNs margin = config_.margin_s * 1000000000LL;
  const TimeNs from = ctx.start - margin;
  const TimeNs to = ctx.end + margin + 1;  // Loki's end is exclusive
  stats_.filter = logql_line_filters(pushdown_);

  std::vector<std::string> headers = config_.headers;
  if (!config_.tenant.empty()) headers.push_back("X-Scope-OrgID: " + config_.tenant);

  std::string error;
  bool truncated = false;
  uint64_t equal_ts_overflow = 0;
  for (const auto& tmpl : config_.queries) {
    for (const auto& binding : template_bindings(tmpl, ctx)) {
      std::string err;
      auto selector = expand_template(tmpl, ctx, binding, TemplateEscape::kQuotedString, err);
      if (!selector) {
        error = err;
        continue;
      }
      std::string query = *selector;
      if (!stats_.filter.empty()) query += " " + stats_.filter;
      stats_.queries.push_back(query);
      const bool post = query.size() > 6000;  // long filters (patterns mode) go in a form body
      TimeNs cursor = from;
      std::set<std::string> seen_at_cursor;  // stream key + line delivered at `cursor`
      std::map<std::string, uint64_t> stream_lines;
      int limit = config_.limit;
      for (;;) {
        HttpRequest req;
        req.url = config_.url + "/loki/api/v1/query_range";
        req.params = {{"query", query},
                      {"start", std::to_string(cursor)},
                      {"end", std::to_string(to)},
                      {"limit", std::to_string(limit)},
                      {"direction", "forward"}};
        req.headers = headers;
        req.post_form = post;
        req.timeout_ms = config_.timeout_ms;
        req.max_body_bytes = config_.max_bytes;
        int attempts = 0;
        uint64_t got = 0;
        HttpResponse resp = http_request_with_retries(req, config_.retry, attempts, got);
        stats_.requests += static_cast<uint64_t>(attempts);
        stats_.bytes_fetched += got;
        if (resp.status != 200) {
          error = resp.status == 0
                      ? fmt::format("{}: {} (after {} tries)", config_.url, resp.error, attempts)
                      : fmt::format("{}: HTTP {} (after {} tries): {}", config_.url, resp.status, attempts,
                                    snippet(resp.body));
          break;
        }
        nlohmann::json doc = nlohmann::json::parse(resp.body, nullptr, false);
        if (doc.is_discarded() || doc.value("status", "") != "success" || !doc.contains("data")) {
          error = fmt::format("{}: unexpected response: {}", config_.url, snippet(resp.body));
          break;
        }
        const auto& data = doc["data"];
        if (data.value("resultType", "") != "streams") {
          error = fmt::format("{}: resultType '{}' (a log query returns streams)", config_.url,
                              data.value("resultType", ""));
          break;
        }
        ++stats_.pages;
        std::vector<nlohmann::json> streams;
        std::vector<std::string> keys;
        std::vector<Entry> entries;
        if (data.contains("result") && data["result"].is_array()) {
          for (const auto& s : data["result"]) {
            if (!s.contains("values") || !s["values"].is_array()) continue;
            size_t idx = streams.size();
            streams.push_back(s.value("stream", nlohmann::json::object()));
            keys.push_back(labels_key(streams.back()));
            for (const auto& v : s["values"]) {
              if (!v.is_array() || v.size() < 2 || !v[0].is_string() || !v[1].is_string()) continue;
              const std::string& ts = v[0].get_ref<const std::string&>();
              TimeNs t = 0;
              auto r = std::from_chars(ts.data(), ts.data() + ts.size(), t);
              if (r.ec != std::errc()) continue;
              entries.push_back({t, idx, v[1].get<std::string>()});
            }
          }
        }
        std::stable_sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) { return a.t < b.t; });
        for (const auto& e : entries) {
          if (e.t == cursor && seen_at_cursor.count(keys[e.stream] + '\x1f' + e.line)) {
            ++stats_.duplicates;
            continue;
          }
          if (stats_.entries >= config_.max_entries) {
            truncated = true;
            break;
          }
          const auto& labels = streams[e.stream];
          Observation o;
          o.kind = config_.kind;
          o.node = binding.node;
          if (o.node.empty() && !config_.node_label.empty() && labels.contains(config_.node_label) &&
              labels[config_.node_label].is_string())
            o.node = labels[config_.node_label].get<std::string>();
          o.rank = binding.rank;
          if (o.rank == kNoRank && !config_.rank_label.empty() && labels.contains(config_.rank_label) &&
              labels[config_.rank_label].is_string()) {
            const std::string& rs = labels[config_.rank_label].get_ref<const std::string&>();
            int rank = kNoRank;
            if (std::from_chars(rs.data(), rs.data() + rs.size(), rank).ec == std::errc()) o.rank = rank;
          }
          o.observed_at = e.t;
          o.source.source = config_.name + ":" + keys[e.stream];
          o.source.line = ++stream_lines[keys[e.stream]];
          o.text = e.line;
          sink.observation(o);
          ++stats_.entries;
        }
        if (truncated) break;
        if (entries.size() < static_cast<size_t>(limit)) break;  // last page
        TimeNs last = entries.back().t;
        if (last == cursor) {
          // A whole page at one nanosecond: more entries share it than `limit`. Ask again with a
          // larger page (up to max_limit); past that, skip the rest of that nanosecond.
          if (limit < config_.max_limit) {
            limit = std::min(config_.max_limit, limit * 4);
            for (const auto& e : entries) seen_at_cursor.insert(keys[e.stream] + '\x1f' + e.line);
            continue;
          }
          equal_ts_overflow++;
          cursor = last + 1;
          seen_at_cursor.clear();
          continue;
        }
        if (last != cursor) seen_at_cursor.clear();
        cursor = last;
        for (const auto& e : entries)
          if (e.t == last) seen_at_cursor.insert(keys[e.stream] + '\x1f' + e.line);
        if (stats_.bytes_fetched > config_.max_bytes) {
          truncated = true;
          break;
        }
      }
      if (truncated) break;
    }
    if (truncated) break;
  }
  report.observations = stats_.entries;
  report.bytes = stats_.bytes_fetched;
  std::string detail = fmt::format("{} entries, {} bytes fetched in {} pages ({} requests); pushdown {}",
                                   stats_.entries, stats_.bytes_fetched, stats_.pages, stats_.requests,
                                   pushdown_.mode);
  if (pushdown_.mode == "literals") detail += fmt::format(" ({} literals)", pushdown_.atoms);
  if (!pushdown_error_.empty()) detail += " (pushdown off: " + pushdown_error_ + ")";
  if (!pushdown_.note.empty()) detail += " (" + pushdown_.note + ")";
  if (equal_ts_overflow)
    detail += fmt::format("; {} pages were filled by one timestamp (raise limit)", equal_ts_overflow);
  if (!error.empty()) {
    report.status = "error";
    report.reason = error + "; " + detail;
  } else if (truncated) {
    report.status = "error";
    report.reason = fmt::format("truncated at max_entries={} / max_bytes={}; ", config_.max_entries,
                                config_.max_bytes) + detail;
  } else if (stats_.entries == 0) {
    report.status = "empty";
    report.reason = "no log entries in the window; " + detail;
  } else {
    report.reason = detail;
  }
  return report;
}

namespace {
const CollectorRegistrar kLokiRegistrar("loki", [](const YAML::Node& config, std::string& error)
                                                    -> std::unique_ptr<Collector> {
  LokiCollectorConfig c;
  if (!parse_loki_config(config, c, error)) return nullptr;
  return std::make_unique<LokiCollector>(std::move(c));
});
}  // namespace

}  // namespace attribution::blueprint

extern "C" void attribution_connector_loki_anchor() {}
