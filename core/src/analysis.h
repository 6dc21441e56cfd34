// Internal: the working state of one attribute() call — symptom items, their attributes and
// explained-by links — shared by the refiners (refiners.cc), the outcome (session.cc) and the
// verdict writer (verdict_writer.cc).
#pragma once

#include <deque>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "attribution/engine.h"
#include "rule_set.h"

// fmt prints a SharedString (an evidence line's source, rule, node or note) as its text.
template <>
struct fmt::formatter<attribution::SharedString> : fmt::formatter<std::string_view> {
  template <class Context>
  auto format(const attribution::SharedString& s, Context& ctx) const {
    return fmt::formatter<std::string_view>::format(s.view(), ctx);
  }
};

namespace attribution {

struct Item {
  SymptomKey key;
  const SymptomRecord* rec = nullptr;
  // Owned by Analysis::attrs_store, one per distinct (symptom id, catalog entry): the items of one
  // symptom point at the same attributes (a 16,384-rank job has 128k items).
  const SymptomAttrs* attrs = nullptr;
  bool indirect = false;
  bool synthetic = false;
  bool filtered = false;
  int explained_by = -1;  // index into Analysis::items
  const std::string* explained_rule = nullptr;  // the explaining rule's id, owned by the RuleSet

  bool active() const { return !filtered && explained_by < 0; }
  // The symptom's label with the item's fields filled in ({name} placeholders). Made when asked:
  // only the verdict's groups, candidates and root print one, and a 16,384-rank job has 112k items.
  std::string label() const;
  TimeNs first() const { return rec->first_seen; }
  const std::string& field(const std::string& name) const {
    static const std::string kEmpty;
    auto it = rec->fields.find(name);
    return it == rec->fields.end() ? kEmpty : it->second;
  }
};

struct Outcome;

// A rule in another language that failed during this attribute() call (the verdict's
// `rule_reports`): one entry per rule, with its first failure and how many calls failed.
struct RuleReport {
  std::string rule;
  std::string file;
  int line = 0;
  std::string status;  // error | timeout | memory | invalid
  std::string message;
  uint64_t failures = 0;
};

struct Analysis {
  const RuleSet& rules;
  const ExecutionContext& context;
  const Extraction& extraction;
  const std::vector<ConnectorReport>& reports;
  std::vector<Item> items;
  std::deque<SymptomRecord> synthetic_records;
  std::deque<SymptomAttrs> attrs_store;  // what Item::attrs points at
  TimeNs job_start = kNoTime;  // context start, else the earliest evidence
  TimeNs job_end = kNoTime;    // context end, else the latest evidence
  std::vector<RuleReport> rule_reports;
  // Quality caps asked for by external refiners: (rule id, cap), in call order.
  std::vector<std::pair<std::string, RefinerActions::QualityCap>> quality_caps;
  const Outcome* outcome = nullptr;  // set before the POST_OUTCOME phase

  void report_rule_failure(const ExternalRule& rule, const RuleFailure& failure);

  // Adds a synthetic symptom (made by a built-in refiner) and returns its index.
  int add_synthetic(SymptomKey key, SymptomAttrs attrs, SymptomRecord record, bool indirect);
  // Marks `effect` explained by `cause` through `rule` (a rule's id; the item keeps its address,
  // so it must outlive the analysis, as the RuleSet's ids do).
  void explain(int effect, int cause, const std::string& rule);
};

// True when `effect` happened within [cause - before, cause + within]; unknown times match.
bool within_window(const Item& cause, const Item& effect, int64_t before_ns, int64_t within_ns);

// An Xid the catalogue marks as either the workload's fault or the GPU's (class "app" with a
// class_detail naming hw or drv: 13 "app (rarely hw)", 31 "app (illegal address) / drv", "app/drv").
// On its own it never settles which.
bool app_or_hardware_xid(const Item& it);

void run_declarative_refiner(const Refiner& refiner, Analysis& analysis);
void run_builtin_refiner(const Refiner& refiner, Analysis& analysis);
// Calls an external refiner (rule_extension.h) with a view of `analysis` and applies its actions;
// a failure becomes a rule report.
void run_external_refiner(const ExternalRule& rule, std::string_view phase, Analysis& analysis);
// The record of an item whose extractor has field hooks: a copy with the hooks' fields added
// (kept in analysis.synthetic_records), or `record` itself when no hook added anything. Hooks see
// the record's fields plus the item's node (and gpu, rank when set) unless a capture names them.
const SymptomRecord* apply_field_hooks(Analysis& analysis, const SymptomKey& key, const SymptomRecord& record,
                                       const std::vector<size_t>& hooks);
std::map<std::string, std::string> hook_input(const Fields& fields, const SymptomKey& key);
// Applies the quality caps and rule failures to the decided outcome (after POST_OUTCOME).
void apply_rule_outcomes(const Analysis& analysis, Outcome& outcome);

// Renders a label template ("Xid {xid} on {pci}") with the record's fields. A field the record lacks
// (an optional group that did not match) renders empty: labels join alternatives as "{resource}{condition}".
// A field no pattern of the symptom can capture is a load warning (rules lint), not a run-time "?".
std::string render_label(const std::string& label, const Fields& fields);

struct Outcome {
  int root = -1;                 // item index
  std::vector<int> root_group;   // items of the same symptom and node as the root
  std::vector<int> rivals;       // candidates that fit as well (ambiguous)
  std::string outcome;
  std::string domain;
  std::string quality;
  std::vector<std::string> reasons;
  std::vector<std::string> missing;
  std::vector<std::string> affected_nodes;
  // The node to name as the culprit: empty when the root cause is a scheduler decision (the node
  // in "JOB n ON node CANCELLED" is the batch node, not a culprit) or when rivals on other nodes
  // fit as well.
  std::string culprit_node;
};

std::string write_verdict_json(const Analysis& analysis, const Outcome& outcome);
std::string write_summary(const Analysis& analysis, const Outcome& outcome);

}  // namespace attribution
