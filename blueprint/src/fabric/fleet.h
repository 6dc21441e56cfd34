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

// One stored topology version and the time it is valid from.
struct TopologyEpoch {
  int64_t valid_from_ns = 0;
  const TopologyIndex* index = nullptr;
};

// The index of the version valid at `t` in `epochs` sorted by valid_from: the newest with
// valid_from ≤ t; before every version, the oldest (0). `epochs` must not be empty.
size_t epoch_at(const std::vector<TopologyEpoch>& epochs, int64_t t);

class FleetAnalysis {
 public:
  // One topology for every run.
  FleetAnalysis(const TopologyIndex& topology, FleetOptions options);
  // Several versions (any order; at least one): each run is resolved against the version valid at
  // its end (the newest with valid_from ≤ end; before every version, the oldest). Components are
  // the union of the versions' by id (a link re-cabled mid-window is a new component), each
  // described by the newest version that has it. The indexes must outlive the analysis.
  FleetAnalysis(std::vector<TopologyEpoch> epochs, FleetOptions options);
  // Rows may come in any order; rows outside [from, to] are ignored.
  void add(const FabricRunRow& row);
  // The findings document (schema attribution.fabric_findings/v1) without ids and status: each
  // finding has "component" and the store assigns "id" / "status" (assign_ids).
  nlohmann::json finish() const;
  uint64_t runs() const { return runs_; }

 private:
  struct FailedRun {
    int64_t run_id = 0, end_ns = 0;
    size_t epoch = 0;
    std::string job_id, user, outcome;
    std::vector<std::string> hosts;
    nlohmann::json evidence;           // the entries kept
    std::vector<int> touched;          // components
    std::vector<int> direct;           // of those, named by the evidence itself
  };
  struct GlobalComponent {
    std::string id, kind, group;
    size_t epoch = 0;  // the newest version that has it
    int local = -1;    // its index there
  };
  std::vector<TopologyEpoch> epochs_;             // by valid_from
  std::vector<std::vector<int>> global_of_;       // per epoch: local component → global
  std::vector<std::vector<int>> local_of_;        // per epoch: global component → local (-1: absent)
  std::vector<GlobalComponent> comps_;
  FleetOptions opt_;
  uint64_t runs_ = 0, failed_ = 0, fabric_failed_ = 0, unresolved_ = 0;
  std::vector<uint32_t> crossing_;
  std::vector<std::vector<uint32_t>> failures_;         // per component: indices into failed_runs_
  std::vector<std::vector<uint32_t>> direct_failures_;  // per component: of those, with direct evidence
  std::vector<FailedRun> failed_runs_;
  std::vector<int> scratch_;  // crossed components of the run being added (local ids)
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
