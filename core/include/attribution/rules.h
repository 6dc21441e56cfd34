// Rule loading: YAML text → an immutable, compiled RuleSet (docs/rules.md).
//
// The core never reads files: callers pass each file's name and content. Loading validates every
// rule (shape, RE2 syntax, symptom attributes, refiner names) and compiles all extractor patterns
// into one Vectorscan database per observation kind.
//
// Thread-safety: a loaded RuleSet is immutable and may be shared by any number of threads.
#pragma once

#include <memory>
#include <string_view>
#include <string>
#include <vector>

#include "attribution/model.h"

namespace attribution {

// One rules file: `name` is used in messages only (e.g. "rules/gpu.yaml").
struct RuleText {
  std::string name;
  std::string text;
};

// A load error or warning, positioned at file:line:column (1-based; 0 when unknown).
struct LoadMessage {
  std::string file;
  int line = 0;
  int column = 0;
  std::string message;
  std::string to_string() const;  // "file:line:column: message"
};

class RuleSet;

struct LoadResult {
  std::shared_ptr<const RuleSet> rules;  // null when errors is non-empty
  std::vector<LoadMessage> errors;
  std::vector<LoadMessage> warnings;
  bool ok() const { return rules != nullptr; }
};

// Loads and compiles rule files, in the given order (order matters for precedence ties and for
// refiners within a phase). Never throws.
//
// `compiled_cache`, when not empty, is the output of serialize_compiled() for the same files: the
// Vectorscan databases are then deserialized instead of compiled (compiling is the fixed start-up
// cost of every run). A cache made for other files, another Vectorscan version or another CPU is
// detected and ignored.
LoadResult load_rules(const std::vector<RuleText>& files, std::string_view compiled_cache = {});

// "sha256:<hex>" over the file names and contents, in order: the rules digest of a verdict, and
// the key under which a caller may store serialize_compiled() output.
std::string rules_digest(const std::vector<RuleText>& files);

// The compiled Vectorscan databases of `rules`, serialized (for the caller to cache).
std::string serialize_compiled(const RuleSet& rules);

// Summary of a loaded rule set, for `rules lint`, /metrics and the verdict's engine block.
struct RuleSetInfo {
  std::string digest;  // "sha256:<hex>" over the file names and contents, in order
  size_t files = 0;
  size_t extractors = 0;
  size_t metric_extractors = 0;
  size_t catalogs = 0;
  size_t catalog_entries = 0;
  size_t refiners = 0;
  size_t fixtures = 0;
  size_t prefilter_patterns = 0;  // compiled in Vectorscan prefilter mode (RE2 confirms)
};
RuleSetInfo describe(const RuleSet& rules);

// Every extractor pattern, in load order, for comparing with grep/rg (`rules patterns`).
struct PatternInfo {
  std::string extractor_id;
  std::string pattern;
  bool case_insensitive = false;
};
std::vector<PatternInfo> list_patterns(const RuleSet& rules);

// An extractor pattern as the engine compiles it from the rule text: every literal space outside
// a character class that carries no quantifier matches a run of spaces (real logs widen blanks).
// Anything that evaluates rule patterns outside the engine (e.g. a log store's query filter) must
// apply it too, or it will drop lines the engine would match.
std::string tolerate_blanks(std::string_view pattern);

// Runs every fixture of every rule through the real extraction path. Each fixture line is also
// re-scanned after unrelated preceding text, so a result that depends on what came before is caught.
struct FixtureResult {
  std::string file;
  int line = 0;
  std::string rule_id;
  bool passed = false;
  std::string message;  // why it failed
};
std::vector<FixtureResult> run_fixtures(const RuleSet& rules);

// The message inventory (docs/rules.md "Message inventory"): per producer, every message it prints
// on a failure path, each with a realistic example line and a status. `check_inventory` runs each
// example through the real extraction path: a `matched` entry must produce its `symptom`; an
// `ignored` entry must produce no symptom of role cause (victim/context ones are reported).
// `files` are the inventory YAML files (rules/inventory/*.yaml), read by the caller.
struct InventoryEntryResult {
  std::string file;
  int line = 0;
  std::string id;
  std::string status;                  // matched | ignored
  bool passed = false;
  std::string message;                 // why it failed (empty when passed)
  std::vector<std::string> produced;   // "symptom.id (role)" for every symptom the example produced
};
struct InventoryReport {
  std::string file;
  std::string producer;
  std::string source;
  size_t messages = 0, matched = 0, ignored = 0, failures = 0;
  std::vector<InventoryEntryResult> entries;  // in file order
};
struct InventoryResult {
  std::vector<InventoryReport> producers;     // one per file, in the given order
  std::vector<LoadMessage> errors;            // YAML/shape errors at file:line:column
  bool ok() const;                            // no errors and no failed entry
};
InventoryResult check_inventory(const RuleSet& rules, const std::vector<RuleText>& files);

}  // namespace attribution
