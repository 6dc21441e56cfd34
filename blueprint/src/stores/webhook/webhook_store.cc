// Webhook writer: POSTs each verdict document (application/json, the verdict bytes) to a URL with
// libcurl, retrying transport errors, 429 and 5xx with exponential backoff. Headers:
// X-Attribution-Job, X-Attribution-Attempt, optional Authorization: Bearer <token>.
#include <curl/curl.h>
#include <fmt/format.h>

#include <chrono>
#include <thread>

#include "stores/store.h"

namespace attribution::blueprint {
namespace {

size_t keep(char* ptr, size_t size, size_t n, void* userdata) {
  auto* body = static_cast<std::string*>(userdata);
  if (body->size() < 2048) body->append(ptr, std::min<size_t>(size * n, 2048 - body->size()));
  return size * n;
}

class WebhookStore : public VerdictStore {
 public:
  WebhookStore(std::string url, std::string token, int retries, int timeout_s, int backoff_ms)
      : url_(std::move(url)), token_(std::move(token)), retries_(retries), timeout_s_(timeout_s), backoff_ms_(backoff_ms) {
    static const bool init = [] { return curl_global_init(CURL_GLOBAL_DEFAULT) == 0; }();
    (void)init;
  }
  std::string name() const override {
    auto q = url_.find('?');
    return "webhook:" + url_.substr(0, q);
  }

  bool put(const RunRecord& record, int64_t& run_id, std::string& error) override {
    run_id = 0;
    const std::string& body = record.verdict.json;
    int delay = backoff_ms_;
    for (int attempt = 0; attempt <= retries_; ++attempt) {
      long code = 0;
      std::string response, curl_error;
      bool sent = post(record, body, code, response, curl_error);
      if (sent && code >= 200 && code < 300) return true;
      bool retryable = !sent || code == 429 || code >= 500;
      error = sent ? fmt::format("HTTP {}: {}", code, response.substr(0, 200)) : curl_error;
      if (!retryable || attempt == retries_) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(delay));
      delay = std::min(delay * 2, 30000);
    }
    error = fmt::format("{} (after {} attempt(s))", error, retries_ + 1);
    return false;
  }

 private:
  bool post(const RunRecord& record, const std::string& body, long& code, std::string& response, std::string& error) {
    CURL* curl = curl_easy_init();
    if (!curl) {
      error = "curl_easy_init failed";
      return false;
    }
    struct curl_slist* headers = nullptr;
    headers = curl_slist_append(headers, "Content-Type: application/json");
    headers = curl_slist_append(headers, fmt::format("X-Attribution-Job: {}", record.context.id).c_str());
    headers = curl_slist_append(headers, fmt::format("X-Attribution-Attempt: {}", record.context.attempt).c_str());
    if (!token_.empty()) headers = curl_slist_append(headers, fmt::format("Authorization: Bearer {}", token_).c_str());
    char errbuf[CURL_ERROR_SIZE] = {0};
    curl_easy_setopt(curl, CURLOPT_URL, url_.c_str());
    curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(curl, CURLOPT_POSTFIELDS, body.data());
    curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(body.size()));
    curl_easy_setopt(curl, CURLOPT_TIMEOUT, static_cast<long>(timeout_s_));
    curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT, 10L);
    curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, errbuf);
    curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, keep);
    curl_easy_setopt(curl, CURLOPT_WRITEDATA, &response);
    CURLcode rc = curl_easy_perform(curl);
    if (rc == CURLE_OK) curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &code);
    else error = errbuf[0] ? errbuf : curl_easy_strerror(rc);
    curl_slist_free_all(headers);
    curl_easy_cleanup(curl);
    return rc == CURLE_OK;
  }

  std::string url_, token_;
  int retries_, timeout_s_, backoff_ms_;
};

StoreRegistrar webhook_registrar("webhook", [](const YAML::Node& config, const std::string& key,
                                               std::string& error) -> std::unique_ptr<VerdictStore> {
  std::string url, token;
  int retries = 3, timeout = 10, backoff = 500;
  if (config.IsScalar()) url = config.as<std::string>("");
  else if (config.IsMap()) {
    for (const auto& kv : config) {
      std::string k = kv.first.as<std::string>("");
      if (k != "url" && k != "token" && k != "retries" && k != "timeout" && k != "backoff_ms" && k != "enabled") {
        error = fmt::format("{}.{}: unknown key (expected one of: backoff_ms, retries, timeout, token, url)", key, k);
        return nullptr;
      }
    }
    url = config["url"] ? config["url"].as<std::string>("") : "";
    token = config["token"] ? config["token"].as<std::string>("") : "";
    auto num = [&](const char* k, int& v, int lo) {
      if (!config[k]) return true;
      if (!YAML::convert<int>::decode(config[k], v) || v < lo) {
        error = fmt::format("{}.{}: must be an integer >= {}", key, k, lo);
        return false;
      }
      return true;
    };
    if (!num("retries", retries, 0) || !num("timeout", timeout, 1) || !num("backoff_ms", backoff, 0)) return nullptr;
  }
  if (url.rfind("http://", 0) != 0 && url.rfind("https://", 0) != 0) {
    error = fmt::format("{}.url: must be an http:// or https:// URL", key);
    return nullptr;
  }
  return std::make_unique<WebhookStore>(url, token, retries, timeout, backoff);
});

}  // namespace
}  // namespace attribution::blueprint
