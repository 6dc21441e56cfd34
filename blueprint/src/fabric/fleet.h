// The fleet fabric analysis (docs/fabric.md §3): a streaming pass over the runs of a window that
// counts, per component, the runs crossing it and the fabric failures whose evidence touches it,
// then a binomial tail against the window's base rate with Benjamini–Hochberg correction and
// greedy explaining-away.
//
// Memory: counters per component plus the fabric failures of the window (their hosts, user, job
// and up to kMaxEvidencePerRun evidence entries); nothing per successful run.
// Thread-safety: one FleetAnalysis per thread; the TopologyIndex is shared read-only.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "fabric/resolve.h"

namespace attribution::fabric {

// One row of run_fabric (docs/fabric.md §4).
struct FabricRunRow {
  int64_t run_id = 0;
  int64_t end_ns = 0;
  std::string_view job_id, user, hosts;  // hosts: space-separated
  bool failed = false;
  bool fabric = false;
  std::string_view outcome;
  std::string_view evidence;  // JSON array (read only when fabric)
};

struct FleetOptions {
  int64_t from_ns = 0, to_ns = 0;
  double q_max = 0.01;  // Benjamini–Hochberg false discovery rate
  int min_failed_runs = 2;
};

inline constexpr size_t kMaxEvidencePerRun = 8;
inline constexpr size_t kMaxJobsListed = 50;
inline constexpr size_t kMaxEvidenceListed = 20;
inline constexpr size_t kMaxHostsListed = 50;

// P(X ≥ k) for X ~ Binomial(n, p).
double binomial_upper_tail(uint64_t n, uint64_t k, double p);

class FleetAnalysis {
 public:
  FleetAnalysis(const TopologyIndex& topology, FleetOptions options);
  // Rows may come in any order; rows outside [from, to] are ignored.
  void add(const FabricRunRow& row);
  // The findings document (schema attribution.fabric_findings/v1) without ids and status: each
  // finding has "component" and the store assigns "id" / "status" (assign_ids).
  nlohmann::json finish() const;
  uint64_t runs() const { return runs_; }

 private:
  struct FailedRun {
    int64_t run_id = 0, end_ns = 0;
    std::string job_id, user, outcome;
    std::vector<std::string> hosts;
    nlohmann::json evidence;           // the entries kept
    std::vector<int> touched;          // components
    std::vector<int> direct;           // of those, named by the evidence itself
  };
  const TopologyIndex& topo_;
  FleetOptions opt_;
  uint64_t runs_ = 0, failed_ = 0, fabric_failed_ = 0, unresolved_ = 0;
  std::vector<uint32_t> crossing_;
  std::vector<std::vector<uint32_t>> failures_;         // per component: indices into failed_runs_
  std::vector<std::vector<uint32_t>> direct_failures_;  // per component: of those, with direct evidence
  std::vector<FailedRun> failed_runs_;
  std::vector<int> scratch_;
  std::vector<std::string> host_scratch_;
};

// Gives each finding an id and status: a component with an open finding keeps its id
// (`open_ids`: component → id); new ones get "fab-" + 12 hex digits of a hash of the component
// and the window end. Returns the ids of open findings that are no longer found (to close).
std::vector<std::string> assign_ids(nlohmann::json& findings_doc,
                                    const std::vector<std::pair<std::string, std::string>>& open_ids);

// A terminal summary of a findings document.
std::string findings_text(const nlohmann::json& doc);

}  // namespace attribution::fabric
