// A small libcurl wrapper for the HTTP collectors (Loki, Prometheus): GET with query parameters,
// extra headers, timeouts, a response size bound, and bounded retries with exponential backoff on
// 429, 5xx and connection errors (Retry-After honoured up to the backoff cap). Proxies come from
// the usual environment variables (libcurl).
//
// Thread-safety: functions are reentrant (one curl easy handle per call).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace attribution::blueprint {

struct HttpRequest {
  std::string url;  // base URL + path, without the query string
  std::vector<std::pair<std::string, std::string>> params;
  std::vector<std::string> headers;  // "Name: value"
  bool post_form = false;            // send params as application/x-www-form-urlencoded
  long timeout_ms = 30000;
  long connect_timeout_ms = 5000;
  uint64_t max_body_bytes = 256ull << 20;
};

struct HttpResponse {
  long status = 0;          // 0 = no HTTP response (transport error)
  std::string body;
  std::string error;        // transport error (connection refused, timeout, body too large)
  long retry_after_s = -1;  // Retry-After header, when present
  uint64_t bytes = 0;       // body bytes received
};

struct RetryPolicy {
  int max_attempts = 4;  // total tries
  long backoff_ms = 200;
  long max_backoff_ms = 5000;
};

// One request, no retry.
HttpResponse http_request(const HttpRequest& request);

// With retries on 429, 5xx and transport errors (not on body-too-large). `attempts` receives the
// number of tries, `bytes` the body bytes received over all tries.
HttpResponse http_request_with_retries(const HttpRequest& request, const RetryPolicy& policy, int& attempts,
                                       uint64_t& bytes);

std::string url_encode(const std::string& value);

}  // namespace attribution::blueprint
