#include "service_client.h"

#include <fmt/format.h>
#include <httplib.h>

#include <cctype>
#include <charconv>
#include <random>
#include <string_view>
#include <thread>
#include <nlohmann/json.hpp>

#include "attribution/codec.h"

namespace attribution::blueprint {
namespace {

std::string percent_encode(const std::string& in) {
  std::string out;
  for (unsigned char c : in) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out += static_cast<char>(c);
    } else {
      out += fmt::format("%{:02X}", c);
    }
  }
  return out;
}

// 128-bit FNV-1a (two 64-bit lanes with different offset bases): a stable content hash for keys.
struct ContentHash {
  uint64_t a = 14695981039346656037ull, b = 0x6c62272e07bb0142ull;
  void add(std::string_view data) {
    for (unsigned char c : data) {
      a = (a ^ c) * 1099511628211ull;
      b = (b ^ c) * 1099511628211ull;
    }
    // A separator, so that ("ab","c") and ("a","bc") differ.
    a = (a ^ 0xff) * 1099511628211ull;
    b = (b ^ 0xfe) * 1099511628211ull;
  }
  void add(int64_t v) { add(std::to_string(v)); }
  std::string hex() const { return fmt::format("{:016x}{:016x}", a, b); }
};

bool retryable(int status) { return status == 429 || status == 502 || status == 503 || status == 504; }

}  // namespace

std::string ServiceClient::job_key(const ExecutionContext& context, const std::vector<Observation>& observations,
                                   const std::vector<ConnectorReport>& reports) {
  ContentHash h;
  h.add(context_to_json(context));
  for (const auto& o : observations) {
    h.add(static_cast<int64_t>(o.kind));
    h.add(o.node);
    h.add(static_cast<int64_t>(o.rank));
    h.add(o.gpu);
    h.add(o.source.source);
    h.add(static_cast<int64_t>(o.source.line));
    h.add(o.note);
    h.add(o.boot_time);
    h.add(o.utc_offset_s);
    h.add(o.text);
    if (o.metric) h.add(observation_to_json(o));
  }
  for (const auto& r : reports) {
    h.add(r.connector);
    h.add(r.status);
    h.add(r.reason);
    h.add(static_cast<int64_t>(r.observations));
    h.add(static_cast<int64_t>(r.bytes));
  }
  return "bp-" + h.hex();
}

ServiceClient::ServiceClient(std::string base_url, std::string token, RetryPolicy retry)
    : base_url_(std::move(base_url)), token_(std::move(token)), retry_(retry) {
  while (!base_url_.empty() && base_url_.back() == '/') base_url_.pop_back();
  if (retry_.max_attempts < 1) retry_.max_attempts = 1;
}

bool ServiceClient::analyze(const ExecutionContext& context, const std::vector<Observation>& observations,
                            const std::vector<ConnectorReport>& reports, std::string& verdict_json,
                            std::string& error) {
  httplib::Client cli(base_url_);
  cli.set_connection_timeout(10);
  cli.set_read_timeout(300);
  cli.set_write_timeout(300);
  std::minstd_rand jitter(std::random_device{}());
  const std::string key = job_key(context, observations, reports);
  int batch_index = 0;

  // One request with its Idempotency-Key, retried on 429/502/503/504 and connection errors.
  // Returns the final answer (2xx or not) in `status`/`body`; false when no answer came at all.
  bool replayed = false;  // whether the last answer was an Idempotent-Replayed one
  auto send = [&](const char* method, const std::string& path, const std::string& body, const char* content_type,
                  const std::string& request_key, int& status, std::string& response) -> bool {
    replayed = false;
    httplib::Headers headers;
    if (!token_.empty()) headers.emplace("Authorization", "Bearer " + token_);
    if (!request_key.empty()) headers.emplace("Idempotency-Key", request_key);
    auto backoff = retry_.initial_backoff;
    std::string last;
    for (int attempt = 1;; ++attempt) {
      httplib::Result res = std::string(method) == "DELETE" ? cli.Delete(path, headers)
                                                            : cli.Post(path, headers, body, content_type);
      std::chrono::milliseconds wait{0};
      if (res) {
        status = res->status;
        response = res->body;
        replayed = res->get_header_value("Idempotent-Replayed") == "true";
        if (!retryable(res->status)) return true;
        last = fmt::format("answered {}", res->status);
        std::string ra = res->get_header_value("Retry-After");
        int seconds = 0;
        auto [p, ec] = std::from_chars(ra.data(), ra.data() + ra.size(), seconds);
        if (ec == std::errc() && p == ra.data() + ra.size() && seconds > 0)
          wait = std::min<std::chrono::milliseconds>(std::chrono::seconds(seconds), retry_.max_retry_after);
      } else {
        status = 0;
        last = fmt::format("failed: {}", httplib::to_string(res.error()));
      }
      if (attempt >= retry_.max_attempts) {
        if (res) return true;  // the caller reports the final status
        error = fmt::format("service {}: {} {} {} (after {} attempts)", base_url_, method, path.substr(0, 120), last,
                            attempt);
        return false;
      }
      // Full backoff with jitter in [backoff/2, backoff], never shorter than Retry-After.
      auto jittered = std::chrono::milliseconds(
          backoff.count() / 2 + static_cast<long>(jitter() % static_cast<unsigned long>(backoff.count() / 2 + 1)));
      std::this_thread::sleep_for(std::max(wait, jittered));
      backoff = std::min(backoff * 2, retry_.max_backoff);
      retries_++;
    }
  };
  auto post = [&](const char* what, const std::string& path, const std::string& body, const char* content_type,
                  const std::string& request_key, std::string& response, bool is_batch = false) -> bool {
    int status = 0;
    if (is_batch) batches_sent_++;
    if (!send("POST", path, body, content_type, request_key, status, response)) return false;
    if (status / 100 != 2) {
      error = fmt::format("service {}: {} answered {}: {}", base_url_, what, status, response.substr(0, 500));
      return false;
    }
    if (is_batch) {
      batches_acknowledged_++;
      if (replayed) batches_replayed_++;
    }
    return true;
  };

  std::string response;
  if (!post("create session", "/v2/sessions", "{\"context\":" + context_to_json(context) + "}", "application/json",
            key, response))
    return false;
  auto created = nlohmann::json::parse(response, nullptr, false);
  if (created.is_discarded() || !created.contains("id") || !created["id"].is_string()) {
    error = "service: create session returned no id";
    return false;
  }
  std::string id = created["id"].get<std::string>();
  std::string path = "/v2/sessions/" + id;
  std::string batch;
  auto flush = [&]() -> bool {
    if (batch.empty()) return true;
    std::string r;
    bool ok = post("add observations", path + "/observations", batch, "application/x-ndjson",
                   key + "-b" + std::to_string(batch_index++), r, true);
    batch.clear();
    if (!ok) return false;
    auto j = nlohmann::json::parse(r, nullptr, false);
    if (!j.is_discarded() && j.contains("rejected") && j["rejected"].is_array() && !j["rejected"].empty()) {
      error = fmt::format("service rejected observations: {}", j["rejected"].dump().substr(0, 500));
      return false;
    }
    return true;
  };
  for (const auto& o : observations) {
    if (!o.metric) {
      // Log text goes as raw bytes (POST .../text), so binary junk and invalid UTF-8 reach the
      // engine unchanged, exactly as when the embedded engine reads the file.
      if (!flush()) return false;
      std::string q = "?source=" + percent_encode(o.source.source) + "&kind=" + std::string(to_string(o.kind)) +
                      "&first_line=" + std::to_string(o.source.line == 0 ? 1 : o.source.line);
      if (!o.node.empty()) q += "&node=" + percent_encode(o.node);
      if (o.rank != kNoRank) q += "&rank=" + std::to_string(o.rank);
      if (!o.gpu.empty()) q += "&gpu=" + percent_encode(o.gpu);
      if (!o.note.empty()) q += "&note=" + percent_encode(o.note);
      if (o.boot_time != kNoTime) q += "&boot_time=" + percent_encode(format_rfc3339_ns(o.boot_time));
      if (o.utc_offset_s != 0) q += "&utc_offset_s=" + std::to_string(o.utc_offset_s);
      std::string r;
      if (!post("add text", path + "/text" + q, o.text, "text/plain", key + "-b" + std::to_string(batch_index++), r,
                true))
        return false;
      continue;
    }
    batch += observation_to_json(o);
    batch += '\n';
    if (batch.size() > (4u << 20) && !flush()) return false;
  }
  if (!flush()) return false;
  nlohmann::json reps = nlohmann::json::array();
  for (const auto& r : reports) {
    reps.push_back({{"connector", r.connector}, {"status", r.status}, {"reason", r.reason},
                    {"observations", r.observations}, {"bytes", r.bytes}});
  }
  if (!post("add connector reports", path + "/connector_reports", reps.dump(), "application/json",
            key + "-b" + std::to_string(batch_index++), response, !reports.empty()))
    return false;
  if (!post("attribute", path + "/attribute", "", "application/json", key + "-v", verdict_json)) return false;
  while (!verdict_json.empty() && (verdict_json.back() == '\n')) verdict_json.pop_back();
  if (!keep_session_) {
    int status = 0;
    std::string ignored;
    send("DELETE", path, "", "", "", status, ignored);  // best effort: the verdict is already in hand
  }
  return true;
}

}  // namespace attribution::blueprint
