// Prometheus text exposition (0.0.4) for the service's own metrics (ECOSYSTEM §4 names).
// Labels are bounded: route templates, status codes, observation kinds, outcomes, reasons.
// Thread-safe.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace attribution::service {

class Metrics {
 public:
  Metrics();

  void observe_request(const std::string& route, int status, double seconds);
  void add_ingested(const std::string& kind, uint64_t n);
  void add_discarded(const std::string& reason, uint64_t n);
  void add_attribution(const std::string& outcome);
  void add_truncated(uint64_t n) { truncated_ += n; }
  void add_ingest_bytes(uint64_t n) { ingest_bytes_ += n; }
  void add_overload(const std::string& where);
  void add_store_error() { store_errors_++; }
  void set_sessions(int64_t n) { sessions_ = n; }
  void set_rules(const std::string& digest, uint64_t files, uint64_t extractors);
  void set_work(int64_t active, int64_t waiting) { work_active_ = active; work_waiting_ = waiting; }

  std::string render(const std::string& version) const;

  static constexpr std::array<double, 14> kBuckets = {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025,
                                                      0.05,   0.1,   0.25,   0.5,   1,    2.5,
                                                      5,      10};

 private:
  struct Histogram {
    std::array<uint64_t, kBuckets.size()> buckets{};
    uint64_t count = 0;
    double sum = 0;
  };
  mutable std::mutex mu_;
  std::map<std::pair<std::string, int>, uint64_t> requests_;
  std::map<std::string, Histogram> latency_;
  std::map<std::string, uint64_t> ingested_;
  std::map<std::string, uint64_t> discarded_;
  std::map<std::string, uint64_t> attributions_;
  std::map<std::string, uint64_t> overload_;
  std::string rules_digest_;
  uint64_t rules_files_ = 0, rules_extractors_ = 0;
  std::atomic<uint64_t> truncated_{0}, ingest_bytes_{0}, store_errors_{0};
  std::atomic<int64_t> sessions_{0}, work_active_{0}, work_waiting_{0};
};

}  // namespace attribution::service
