#include "metrics.h"

#include <fmt/format.h>

namespace attribution::service {
namespace {
std::string esc(const std::string& v) {
  std::string out;
  for (char c : v) {
    if (c == '\\') out += "\\\\";
    else if (c == '"') out += "\\\"";
    else if (c == '\n') out += "\\n";
    else out += c;
  }
  return out;
}
std::string num(double v) { return fmt::format("{}", v); }
}  // namespace

Metrics::Metrics() {
  for (const char* r : {"invalid", "session_limit", "too_long"}) discarded_[r] = 0;
}

void Metrics::observe_request(const std::string& route, int status, double seconds) {
  std::lock_guard lock(mu_);
  requests_[{route, status}]++;
  auto& h = latency_[route];
  for (size_t i = 0; i < kBuckets.size(); ++i)
    if (seconds <= kBuckets[i]) h.buckets[i]++;
  h.count++;
  h.sum += seconds;
}
void Metrics::add_ingested(const std::string& kind, uint64_t n) {
  std::lock_guard lock(mu_);
  ingested_[kind] += n;
}
void Metrics::add_discarded(const std::string& reason, uint64_t n) {
  std::lock_guard lock(mu_);
  discarded_[reason] += n;
}
void Metrics::add_attribution(const std::string& outcome) {
  std::lock_guard lock(mu_);
  attributions_[outcome.empty() ? "unknown" : outcome]++;
}
void Metrics::add_overload(const std::string& where) {
  std::lock_guard lock(mu_);
  overload_[where]++;
}
void Metrics::set_rules(const std::string& digest, uint64_t files, uint64_t extractors) {
  std::lock_guard lock(mu_);
  rules_digest_ = digest;
  rules_files_ = files;
  rules_extractors_ = extractors;
}

std::string Metrics::render(const std::string& version) const {
  std::lock_guard lock(mu_);
  std::string o;
  o.reserve(8192);
  auto head = [&](const char* name, const char* type, const char* help) {
    o += fmt::format("# HELP {} {}\n# TYPE {} {}\n", name, help, name, type);
  };
  head("attribution_build_info", "gauge", "Build information.");
  o += fmt::format("attribution_build_info{{version=\"{}\"}} 1\n", esc(version));
  head("attribution_rules_loaded", "gauge", "Whether a compiled rule set is loaded.");
  o += fmt::format("attribution_rules_loaded {}\n", rules_digest_.empty() ? 0 : 1);
  head("attribution_rules_info", "gauge", "The loaded rule set (digest over file names and contents).");
  if (!rules_digest_.empty())
    o += fmt::format("attribution_rules_info{{sha256=\"{}\",files=\"{}\",extractors=\"{}\"}} 1\n",
                     esc(rules_digest_), rules_files_, rules_extractors_);
  head("attribution_http_requests_total", "counter", "HTTP requests by route template and status code.");
  for (const auto& [k, v] : requests_)
    o += fmt::format("attribution_http_requests_total{{route=\"{}\",code=\"{}\"}} {}\n", esc(k.first),
                     k.second, v);
  head("attribution_http_request_duration_seconds", "histogram", "HTTP request latency by route.");
  for (const auto& [route, h] : latency_) {
    for (size_t i = 0; i < kBuckets.size(); ++i)
      o += fmt::format("attribution_http_request_duration_seconds_bucket{{route=\"{}\",le=\"{}\"}} {}\n",
                       esc(route), num(kBuckets[i]), h.buckets[i]);
    o += fmt::format("attribution_http_request_duration_seconds_bucket{{route=\"{}\",le=\"+Inf\"}} {}\n",
                     esc(route), h.count);
    o += fmt::format("attribution_http_request_duration_seconds_sum{{route=\"{}\"}} {}\n", esc(route),
                     num(h.sum));
    o += fmt::format("attribution_http_request_duration_seconds_count{{route=\"{}\"}} {}\n", esc(route),
                     h.count);
  }
  head("attribution_sessions", "gauge", "Open sessions.");
  o += fmt::format("attribution_sessions {}\n", sessions_.load());
  head("attribution_observations_ingested_total", "counter", "Observations accepted, by kind.");
  for (const auto& [k, v] : ingested_)
    o += fmt::format("attribution_observations_ingested_total{{kind=\"{}\"}} {}\n", esc(k), v);
  head("attribution_observations_discarded_total", "counter", "Observations rejected, by reason.");
  for (const auto& [k, v] : discarded_)
    o += fmt::format("attribution_observations_discarded_total{{reason=\"{}\"}} {}\n", esc(k), v);
  head("attribution_lines_truncated_total", "counter", "Over-long observation texts truncated to the line limit.");
  o += fmt::format("attribution_lines_truncated_total {}\n", truncated_.load());
  head("attribution_ingest_bytes_total", "counter", "Request body bytes read by ingest endpoints.");
  o += fmt::format("attribution_ingest_bytes_total {}\n", ingest_bytes_.load());
  head("attribution_analyses_total", "counter", "Attributions computed, by outcome.");
  for (const auto& [k, v] : attributions_)
    o += fmt::format("attribution_analyses_total{{outcome=\"{}\"}} {}\n", esc(k), v);
  head("attribution_overload_rejections_total", "counter", "Requests answered 429 because a bounded queue was full.");
  for (const auto& [k, v] : overload_)
    o += fmt::format("attribution_overload_rejections_total{{queue=\"{}\"}} {}\n", esc(k), v);
  head("attribution_work_active", "gauge", "Requests holding a work slot.");
  o += fmt::format("attribution_work_active {}\n", work_active_.load());
  head("attribution_work_waiting", "gauge", "Requests waiting for a work slot.");
  o += fmt::format("attribution_work_waiting {}\n", work_waiting_.load());
  head("attribution_store_errors_total", "counter", "SQLite errors.");
  o += fmt::format("attribution_store_errors_total {}\n", store_errors_.load());
  return o;
}

}  // namespace attribution::service
