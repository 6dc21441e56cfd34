// The run pipeline (SPEC §9): adapter → attempts → for each attempt a Session fed by the
// adapter's own evidence (a bundle's sources, Slurm StdOut/StdErr, sacct rows) and by every
// configured collector → verdict → every configured store.
//
// A collector never aborts a run: exceptions and errors become a ConnectorReport with status
// "error", which the engine turns into a lower quality. A store failure is reported per attempt.
// Thread-safety: one Pipeline per thread.
#pragma once

#include <yaml-cpp/yaml.h>

#include <memory>
#include <string>
#include <vector>

#include "attribution/engine.h"
#include "connectors/connector.h"
#include "stores/store.h"

namespace attribution::blueprint {

struct PipelineSetup {
  YAML::Node config;             // merged config (run/config.h)
  std::string config_name = "config";
  std::vector<std::string> bundles;  // static adapter bundles (flags)
};

struct AttemptOutcome {
  ExecutionContext context;
  Verdict verdict;
  std::vector<ConnectorReport> reports;
  uint64_t lines = 0;
  uint64_t bytes = 0;
  std::vector<std::pair<std::string, int64_t>> stored;  // store name → run id
  std::vector<std::string> store_errors;
  bool connector_failed() const;
};

class Pipeline {
 public:
  // Builds the adapter (config `adapter`, default static), the collectors (`collectors:`), the
  // stores (`stores:`; SQLite at ./attribution.sqlite when none is configured and
  // `default_sqlite` is set) and loads the rules. Errors name the config key.
  static std::unique_ptr<Pipeline> create(const PipelineSetup& setup, bool default_sqlite,
                                          std::vector<std::string>& errors);
  ~Pipeline();

  Adapter& adapter() { return *adapter_; }
  const std::string& adapter_name() const { return adapter_name_; }
  const std::string& cluster() const { return cluster_; }
  // The first store that keeps cursors (SQLite or PostgreSQL), or null.
  VerdictStore* cursor_store();
  const std::vector<std::unique_ptr<VerdictStore>>& stores() const { return stores_; }

  AttemptOutcome process(const WorkloadAttempt& attempt);  // attribute() then store()

  // The two halves of process(), for `watch --concurrency`: attribute() collects the evidence and
  // returns the verdict (no store is touched); store() writes an outcome to every store.
  AttemptOutcome attribute(const WorkloadAttempt& attempt);
  void store(AttemptOutcome& outcome);

  // A pipeline for one worker thread: its own collectors (built again from the same config), the
  // same rules (shared, read-only), no stores and no adapter; `threads` scanner threads per bundle
  // (0 = as configured). Only attribute() may be called on it.
  std::unique_ptr<Pipeline> worker(unsigned threads, std::vector<std::string>& errors) const;
  unsigned threads() const { return threads_; }

 private:
  Pipeline() = default;
  static bool build_collectors(Pipeline& p, const PipelineSetup& setup, std::vector<std::string>& errors);
  std::string adapter_name_;
  std::string cluster_;
  std::unique_ptr<Adapter> adapter_;
  std::vector<std::unique_ptr<Collector>> collectors_;
  std::vector<std::unique_ptr<VerdictStore>> stores_;
  std::shared_ptr<const RuleSet> rules_;
  std::string rules_digest_;
  unsigned threads_ = 0;
  PipelineSetup setup_;
};

}  // namespace attribution::blueprint
