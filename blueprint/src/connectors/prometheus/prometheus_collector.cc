#include "connectors/prometheus/prometheus_collector.h"

#include <fmt/format.h>

#include <cmath>
#include <cstdlib>
#include <nlohmann/json.hpp>

#include "connectors/files/template.h"

namespace attribution::blueprint {
namespace {

template <class T>
void read(const YAML::Node& n, const char* key, T& out) {
  if (n[key]) out = n[key].as<T>();
}

std::string snippet(const std::string& body) {
  std::string s = body.substr(0, 200);
  for (char& c : s)
    if (c == '\n') c = ' ';
  return s;
}

std::string seconds(TimeNs t) { return fmt::format("{}.{:03}", t / 1000000000, (t % 1000000000) / 1000000); }

}  // namespace

bool parse_prometheus_config(const YAML::Node& config, PrometheusCollectorConfig& out, std::string& error) {
  try {
    if (!config || !config.IsMap()) {
      error = "prometheus: the collector block must be a map";
      return false;
    }
    read(config, "name", out.name);
    read(config, "url", out.url);
    if (out.url.empty()) {
      error = "prometheus.url: missing";
      return false;
    }
    while (!out.url.empty() && out.url.back() == '/') out.url.pop_back();
    if (config["headers"]) out.headers = config["headers"].as<std::vector<std::string>>();
    read(config, "tenant", out.tenant);
    read(config, "node_label", out.node_label);
    if (config["query"]) out.queries.push_back(config["query"].as<std::string>());
    if (config["queries"]) out.queries = config["queries"].as<std::vector<std::string>>();
    if (out.queries.empty()) {
      for (const char* m : {"DCGM_FI_DEV_XID_ERRORS", "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", "DCGM_FI_DEV_ROW_REMAP_FAILURE",
                            "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS"})
        out.queries.push_back(fmt::format("{}{{{}=~\"{{nodes_regex}}\"}}", m, out.node_label));
    }
    read(config, "step_s", out.step_s);
    if (!(out.step_s > 0)) {
      error = "prometheus.step_s: must be > 0";
      return false;
    }
    read(config, "margin_s", out.margin_s);
    read(config, "changes_only", out.changes_only);
    read(config, "max_samples", out.max_samples);
    read(config, "timeout_ms", out.timeout_ms);
    read(config, "retries", out.retry.max_attempts);
    read(config, "backoff_ms", out.retry.backoff_ms);
    read(config, "max_backoff_ms", out.retry.max_backoff_ms);
    return true;
  } catch (const YAML::Exception& e) {
    error = fmt::format("prometheus: {}", e.what());
    return false;
  }
}

ConnectorReport PrometheusCollector::collect(const WorkloadAttempt& attempt, EvidenceSink& sink) {
  ConnectorReport report;
  report.connector = config_.name;
  const ExecutionContext& ctx = attempt.context;
  if (ctx.start == kNoTime || ctx.end == kNoTime) {
    report.status = "error";
    report.reason = "the workload has no start/end time to bound the Prometheus query";
    return report;
  }
  const TimeNs margin = config_.margin_s * 1000000000LL;
  std::vector<std::string> headers = config_.headers;
  if (!config_.tenant.empty()) headers.push_back("X-Scope-OrgID: " + config_.tenant);
  std::vector<std::string> errors;
  uint64_t series = 0, samples = 0, requests = 0;
  bool truncated = false;
  for (const auto& tmpl : config_.queries) {
    for (const auto& binding : template_bindings(tmpl, ctx)) {
      std::string err;
      auto query = expand_template(tmpl, ctx, binding, TemplateEscape::kQuotedString, err);
      if (!query) {
        errors.push_back(err);
        continue;
      }
      HttpRequest req;
      req.url = config_.url + "/api/v1/query_range";
      req.params = {{"query", *query},
                    {"start", seconds(ctx.start - margin)},
                    {"end", seconds(ctx.end + margin)},
                    {"step", fmt::format("{}", config_.step_s)}};
      req.headers = headers;
      req.post_form = true;  // Prometheus takes GET or form POST; POST has no URL length limit
      req.timeout_ms = config_.timeout_ms;
      int attempts = 0;
      HttpResponse resp = http_request_with_retries(req, config_.retry, attempts, report.bytes);
      requests += static_cast<uint64_t>(attempts);
      nlohmann::json doc = nlohmann::json::parse(resp.body, nullptr, false);
      if (resp.status == 0) {
        errors.push_back(fmt::format("{}: {} (after {} tries)", config_.url, resp.error, attempts));
        continue;
      }
      if (resp.status != 200 || doc.is_discarded() || doc.value("status", "") != "success") {
        std::string why = !doc.is_discarded() && doc.contains("error")
                              ? doc.value("errorType", "") + ": " + doc.value("error", "")
                              : snippet(resp.body);
        errors.push_back(fmt::format("{}: HTTP {} for '{}': {}", config_.url, resp.status, *query, why));
        continue;
      }
      const auto& data = doc["data"];
      if (!data.contains("result") || !data["result"].is_array()) continue;
      for (const auto& s : data["result"]) {
        if (!s.contains("metric") || !s.contains("values")) continue;
        ++series;
        MetricSample base;
        for (auto it = s["metric"].begin(); it != s["metric"].end(); ++it) {
          if (!it.value().is_string()) continue;
          if (it.key() == "__name__") {
            base.name = it.value().get<std::string>();
          } else {
            base.labels[it.key()] = it.value().get<std::string>();
          }
        }
        std::string node = binding.node;
        if (node.empty()) {
          auto it = base.labels.find(config_.node_label);
          if (it != base.labels.end()) node = it->second;
          if (config_.node_label == "instance") node = node.substr(0, node.rfind(':') == std::string::npos ? node.size() : node.rfind(':'));
        }
        bool have_prev = false;
        double prev = 0;
        for (const auto& v : s["values"]) {
          if (!v.is_array() || v.size() < 2 || !v[1].is_string()) continue;
          double ts = v[0].is_number() ? v[0].get<double>() : std::strtod(v[0].get<std::string>().c_str(), nullptr);
          double value = std::strtod(v[1].get<std::string>().c_str(), nullptr);
          bool same = have_prev && (value == prev || (std::isnan(value) && std::isnan(prev)));
          have_prev = true;
          prev = value;
          if (config_.changes_only && same) continue;
          if (samples >= config_.max_samples) {
            truncated = true;
            break;
          }
          Observation o;
          o.kind = ObservationKind::kNodeMetrics;
          o.node = node;
          o.rank = binding.rank;
          MetricSample m = base;
          m.value = value;
          m.t = static_cast<TimeNs>(std::llround(ts * 1000.0)) * 1000000LL;
          o.observed_at = m.t;
          o.metric = std::move(m);
          o.source.source = config_.name + ":" + *query;
          o.source.line = ++samples;
          sink.observation(o);
        }
      }
    }
  }
  report.observations = samples;
  std::string detail = fmt::format("{} series, {} samples{} from {} queries ({} requests)", series, samples,
                                   config_.changes_only ? " (changes only)" : "", config_.queries.size(), requests);
  if (!errors.empty()) {
    report.status = "error";
    report.reason = errors.front() + (errors.size() > 1 ? fmt::format(" (and {} more errors)", errors.size() - 1) : "") +
                    "; " + detail;
  } else if (truncated) {
    report.status = "error";
    report.reason = fmt::format("truncated at max_samples={}; {}", config_.max_samples, detail);
  } else if (samples == 0) {
    report.status = "empty";
    report.reason = "no series matched in the window; " + detail;
  } else {
    report.reason = detail;
  }
  return report;
}

namespace {
const CollectorRegistrar kPrometheusRegistrar("prometheus", [](const YAML::Node& config, std::string& error)
                                                                -> std::unique_ptr<Collector> {
  PrometheusCollectorConfig c;
  if (!parse_prometheus_config(config, c, error)) return nullptr;
  return std::make_unique<PrometheusCollector>(std::move(c));
});
}  // namespace

}  // namespace attribution::blueprint

extern "C" void attribution_connector_prometheus_anchor() {}
