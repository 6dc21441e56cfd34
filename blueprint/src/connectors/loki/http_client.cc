#include "connectors/loki/http_client.h"

#include <curl/curl.h>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <mutex>
#include <thread>

namespace attribution::blueprint {
namespace {

void global_init() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

struct WriteState {
  std::string* body;
  uint64_t max;
  bool too_large = false;
};

size_t on_write(char* data, size_t size, size_t n, void* user) {
  auto* st = static_cast<WriteState*>(user);
  size_t len = size * n;
  if (st->body->size() + len > st->max) {
    st->too_large = true;
    return 0;  // aborts the transfer
  }
  st->body->append(data, len);
  return len;
}

size_t on_header(char* data, size_t size, size_t n, void* user) {
  auto* resp = static_cast<HttpResponse*>(user);
  std::string_view h(data, size * n);
  constexpr std::string_view kRetry = "retry-after:";
  if (h.size() > kRetry.size()) {
    std::string lower(h.substr(0, kRetry.size()));
    std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
    if (lower == kRetry) resp->retry_after_s = std::strtol(std::string(h.substr(kRetry.size())).c_str(), nullptr, 10);
  }
  return size * n;
}

}  // namespace

std::string url_encode(const std::string& value) {
  std::string out;
  static const char* kHex = "0123456789ABCDEF";
  for (unsigned char c : value) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

HttpResponse http_request(const HttpRequest& request) {
  global_init();
  HttpResponse resp;
  CURL* curl = curl_easy_init();
  if (!curl) {
    resp.error = "curl_easy_init failed";
    return resp;
  }
  std::string query;
  for (const auto& [k, v] : request.params) {
    if (!query.empty()) query += '&';
    query += url_encode(k) + "=" + url_encode(v);
  }
  std::string url = request.url;
  if (!request.post_form && !query.empty()) url += (url.find('?') == std::string::npos ? "?" : "&") + query;
  WriteState ws{&resp.body, request.max_body_bytes};
  curl_slist* headers = nullptr;
  for (const auto& h : request.headers) headers = curl_slist_append(headers, h.c_str());
  char errbuf[CURL_ERROR_SIZE] = {0};
  curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, request.timeout_ms);
  curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS, request.connect_timeout_ms);
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, on_write);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &ws);
  curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, on_header);
  curl_easy_setopt(curl, CURLOPT_HEADERDATA, &resp);
  curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, errbuf);
  curl_easy_setopt(curl, CURLOPT_ACCEPT_ENCODING, "");  // gzip/deflate if the server offers it
  curl_easy_setopt(curl, CURLOPT_USERAGENT, "attribution-blueprint");
  if (headers) curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
  if (request.post_form) {
    curl_easy_setopt(curl, CURLOPT_POST, 1L);
    curl_easy_setopt(curl, CURLOPT_POSTFIELDS, query.c_str());
    curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE, static_cast<long>(query.size()));
  }
  CURLcode rc = curl_easy_perform(curl);
  resp.bytes = resp.body.size();
  if (rc != CURLE_OK) {
    if (ws.too_large) {
      resp.error = fmt::format("response larger than {} bytes", request.max_body_bytes);
    } else {
      resp.error = errbuf[0] ? std::string(errbuf) : std::string(curl_easy_strerror(rc));
    }
    resp.status = 0;
  } else {
    curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &resp.status);
  }
  if (headers) curl_slist_free_all(headers);
  curl_easy_cleanup(curl);
  return resp;
}

HttpResponse http_request_with_retries(const HttpRequest& request, const RetryPolicy& policy, int& attempts,
                                       uint64_t& bytes) {
  attempts = 0;
  long backoff = policy.backoff_ms;
  HttpResponse resp;
  for (;;) {
    resp = http_request(request);
    ++attempts;
    bytes += resp.bytes;
    bool too_large = resp.status == 0 && resp.error.starts_with("response larger");
    bool retryable = !too_large && (resp.status == 0 || resp.status == 429 || resp.status >= 500);
    if (!retryable || attempts >= std::max(1, policy.max_attempts)) return resp;
    long wait = backoff;
    if (resp.retry_after_s >= 0) wait = std::max(wait, resp.retry_after_s * 1000);
    wait = std::min(wait, policy.max_backoff_ms);
    std::this_thread::sleep_for(std::chrono::milliseconds(wait));
    backoff = std::min(backoff * 2, policy.max_backoff_ms);
  }
}

}  // namespace attribution::blueprint
