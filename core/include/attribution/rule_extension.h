// Rules in another language than YAML (Python: core/python, library attribution_rules_python).
//
// The core knows only the interfaces below, never the language. A language library reads its
// files into ExternalRule records (step 1 of loading, rules.h) and hands them to the core with
// add_external_rule(); the core collects them beside the YAML records (ids unique across both,
// a field hook's extractor must exist) and calls them:
//   - a refiner, in its phase, after the YAML and built-in refiners of that phase, in load order,
//     with a read-only AnalysisView; its RefinerActions are applied by the core;
//   - a field hook, once per aggregated symptom record whose first evidence line its extractor
//     matched (never per input line), when attribute() builds its items; the fields it returns
//     join the record's fields (a capture of the same name wins).
// A call that fails (exception, budget exceeded) returns false with a RuleFailure; the core
// discards its result and lists the failure in the verdict's `rule_reports` — it never aborts
// attribute().
//
// Thread-safety: implementations must be callable from any thread, concurrently (the core calls
// them from whichever thread runs attribute() or run_fixtures()); they serialize internally if
// their language needs it (Python: one lock around the interpreter, see core/python).
#pragma once

#include <cstddef>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "attribution/engine.h"
#include "attribution/model.h"
#include "attribution/rules.h"

namespace attribution {

// One symptom item of an attribute() call, as a refiner sees it. `fields` and `evidence` point
// into the analysis and are valid during the call only.
struct SymptomView {
  size_t index = 0;
  std::string id;
  std::string node;
  std::string gpu;
  int rank = kNoRank;
  std::string label;
  std::string role;     // cause | victim | context
  std::string domain;
  std::string outcome;
  int priority = 0;
  bool indirect = false;
  bool synthetic = false;
  bool filtered = false;  // about a host outside the job
  int explained_by = -1;  // item index, -1 when not explained
  std::string explained_rule;
  TimeNs first_seen = kNoTime;
  TimeNs last_seen = kNoTime;
  uint64_t count = 0;
  const Fields* fields = nullptr;
  const std::vector<EvidenceLine>* evidence = nullptr;
  bool active() const { return !filtered && explained_by < 0; }
};

// Lines seen per (observation kind, node); node "" for a multi-host stream.
struct SourceCoverage {
  std::string kind;  // applog | syslog | node_metrics | node_report | scheduler | k8s_event
  std::string node;
  uint64_t lines = 0;
};

// The read-only view of one attribute() call at one phase. Valid only during the call.
class AnalysisView {
 public:
  virtual ~AnalysisView() = default;
  virtual std::string_view phase() const = 0;  // EARLY | DEFAULT | LATE | FINAL | POST_OUTCOME
  virtual const ExecutionContext& context() const = 0;
  virtual size_t size() const = 0;
  virtual SymptomView symptom(size_t index) const = 0;  // requires index < size()
  // Item indices by first_seen (unknown times last), then (id, node, rank, gpu).
  virtual std::vector<size_t> timeline() const = 0;
  virtual std::vector<SourceCoverage> coverage() const = 0;
  virtual const std::vector<ConnectorReport>& connector_reports() const = 0;
  // POST_OUTCOME only (empty before): the decided outcome, quality level and root item (-1).
  virtual std::string_view outcome() const = 0;
  virtual std::string_view quality() const = 0;
  virtual int root() const = 0;
};

// A symptom a refiner adds: a candidate cause (role "cause") or extra evidence (role "context").
// Its record combines those of `based_on` (first/last seen, counts, evidence lines).
struct NewSymptom {
  std::string id;
  std::string label;
  std::string domain = "unknown";
  std::string outcome;  // default "<domain>.unknown"
  std::string role = "cause";
  int priority = 50;
  std::string node;
  std::string gpu;
  int rank = kNoRank;
  bool indirect = false;
  std::vector<size_t> based_on;
  std::vector<size_t> explains;  // items the new symptom explains
  std::map<std::string, std::string> fields;
};

// What one refiner call asks the core to do. Indices are item indices of the view it was given.
struct RefinerActions {
  std::vector<std::pair<size_t, size_t>> explanations;  // (cause, effect)
  std::vector<NewSymptom> symptoms;
  // The verdict's quality may be at most `level` (definitive | probable | ambiguous | insufficient);
  // `reason` joins quality.reasons.
  struct QualityCap {
    std::string level;
    std::string reason;
  };
  std::optional<QualityCap> quality_cap;
};

// Why a rule call produced nothing.
struct RuleFailure {
  std::string status;   // error | timeout | memory | invalid (a malformed return value)
  std::string message;  // e.g. "ZeroDivisionError: division by zero"
  std::string file;     // where: the innermost frame of the rule's own file, else its definition
  int line = 0;
};

class ExternalRefiner {
 public:
  virtual ~ExternalRefiner() = default;
  // True with `actions` filled, or false with `failure` filled (actions are then ignored).
  virtual bool run(const AnalysisView& view, RefinerActions& actions, RuleFailure& failure) const = 0;
};

class FieldHook {
 public:
  virtual ~FieldHook() = default;
  // `fields` are the record's captures plus its key's node (and gpu, rank when set) unless a
  // capture has that name; `line` is its first evidence line. Hidden "_..." fields are not
  // passed on to rules. True with `extra` filled (names without a leading '_'), or false with `failure`.
  virtual bool run(const std::string& extractor, const std::map<std::string, std::string>& fields,
                   std::string_view line, std::map<std::string, std::string>& extra, RuleFailure& failure) const = 0;
};

// A fixture of an external rule, in the YAML fixtures' form: an input and an `expect` mapping.
//   field hook: `line` (one log line its extractor matches); expect: symptom, node, rank, gpu and
//               fields, the hook's included.
//   refiner:    `lines` (each "<kind> <node>: <text>", e.g. "syslog gpu-a01: NVRM: Xid ..."), the
//               job's `nodes`; expect: outcome, domain, quality, root_symptom, root_node, and
//               `explained` (a comma-separated list of symptom ids the verdict lists as explained).
struct ExternalFixture {
  int line = 0;  // in the rule's file
  std::string input_line;
  std::vector<std::string> lines;
  std::vector<std::string> nodes;
  std::map<std::string, std::string> expect;
};

struct ExternalRule {
  enum class Kind { kRefiner, kFieldHook };
  Kind kind = Kind::kRefiner;
  std::string id;
  std::string description;
  std::string language;  // "python"
  Position where;        // file:line:column of its definition
  std::string phase = "DEFAULT";  // refiner: EARLY | DEFAULT | LATE | FINAL | POST_OUTCOME
  std::string extractor;          // field hook: the extractor whose matches it sees
  std::vector<ExternalFixture> fixtures;
  std::shared_ptr<const ExternalRefiner> refiner;
  std::shared_ptr<const FieldHook> hook;
};

// Step 1 for other languages: adds a rule read by a language library.
void add_external_rule(RuleRecords& records, ExternalRule rule);
// A file that joins the rules digest (and RuleSet sources) without being read as YAML: a rule in
// another language or the site data it reads. Its content changing changes the digest.
void add_rule_source(RuleRecords& records, const RuleText& file);
// A problem found while reading a file in another language (file:line:column).
void add_load_error(RuleRecords& records, LoadMessage message);
void add_load_warning(RuleRecords& records, LoadMessage message);

}  // namespace attribution
