// A loopback stand-in for Grafana Loki's query API (Grafana Loki is not installable from Debian
// 12, so the Loki collector is tested against this). It implements what the collector relies on,
// as documented for GET/POST /loki/api/v1/query_range:
//   - query: a LogQL stream selector {l="v", l!="v", l=~"re", l!~"re"} followed by line filters
//     |= "s", != "s", |~ "re", !~ "re" (double-quoted or `raw` strings; regexes are RE2, the
//     syntax Loki's Go regexp uses; label regexes are anchored);
//   - start/end: RFC 3339 or Unix epoch where ≤10 digits mean seconds and more mean nanoseconds
//     (the digit-count rule of FORMATS §9); start inclusive, end exclusive; default 1h back;
//   - limit (default 100, capped by max_entries_limit_per_query → HTTP 400 like Loki),
//     direction forward|backward (default backward); the limit applies across streams;
//   - response {"status":"success","data":{"resultType":"streams","result":[{"stream":{..},
//     "values":[["<ns>","<line>"],..]}],"stats":{..}}};
//   - X-Scope-OrgID: required when `tenant` is set (401 "no org id" otherwise, like Loki with
//     auth_enabled), and data is per tenant;
//   - fault injection: the first `fail_first` requests get `fail_status` (429 with Retry-After, 503).
// It also counts requests and response bytes so the tests can compare pushdown on and off.
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace attribution::testing {

struct FakeLokiStream {
  std::map<std::string, std::string> labels;
  std::vector<std::pair<int64_t, std::string>> entries;  // ns, line (any order)
};

struct FakeLokiOptions {
  std::string tenant;  // "" = no auth
  int max_entries_limit = 5000;
  int fail_first = 0;
  int fail_status = 503;
};

class FakeLoki {
 public:
  explicit FakeLoki(FakeLokiOptions options = {});
  ~FakeLoki();
  void add_stream(FakeLokiStream stream);
  // Loads streams from JSON lines: {"stream":{...},"values":[["ns","line"],...]}.
  bool load_jsonl(const std::string& path, std::string& error);
  // Listens on 127.0.0.1 (port 0 = any free port); returns the port or -1.
  int start(int port = 0);
  void stop();
  std::string url() const;

  uint64_t requests() const { return requests_; }
  uint64_t bytes_sent() const { return bytes_sent_; }
  std::vector<std::string> queries() const;
  void reset_counters();

  // The query_range handler on its own (for unit tests): returns status and body.
  int query_range(const std::map<std::string, std::string>& params, const std::string& tenant, std::string& body);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  FakeLokiOptions options_;
  std::atomic<uint64_t> requests_{0};
  std::atomic<uint64_t> bytes_sent_{0};
  mutable std::mutex mu_;
  std::vector<FakeLokiStream> streams_;
  std::vector<std::string> queries_;
  std::thread thread_;
  int port_ = -1;
};

}  // namespace attribution::testing
