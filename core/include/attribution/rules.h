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

// Where a rule is written (1-based; 0 when unknown).
struct Position {
  std::string file;
  int line = 0;
  int column = 0;
};

// Files in a rules directory that are data for rules in another language, not YAML rules:
// *.csv, *.json, *.data.yaml, *.data.yml. They join the digest; read_rules() does not parse them.
bool is_rule_data_file(std::string_view name);

class RuleSet;
struct ExternalRule;  // attribution/rule_extension.h

struct LoadResult {
  std::shared_ptr<const RuleSet> rules;  // null when errors is non-empty
  std::vector<LoadMessage> errors;
  std::vector<LoadMessage> warnings;
  bool ok() const { return rules != nullptr; }
};

// Loading runs in three steps (the shape of Falco's rule loader); load_rules() runs them in order,
// and a caller that adds rules in another language runs them itself:
//   1. read     one file's text → rule records with their positions (read_rules, YAML). Only what
//               one rule alone can show is checked: shape, keys, values, templates, fixtures.
//   2. collect  every file's records → one validated collection: ids unique across files,
//               catalog references resolved by name (collect_rules).
//   3. compile  the collection → an immutable RuleSet: patterns compiled by RE2 with their
//               templates checked against the captures, Vectorscan databases built or taken from
//               the cache, the summary and digest (compile_rules).
// Messages of every step accumulate in the records and come back in the LoadResult.
// Thread-safety: a RuleRecords is used by one thread at a time.
class RuleRecords {
 public:
  RuleRecords();
  ~RuleRecords();
  RuleRecords(RuleRecords&&) noexcept;
  RuleRecords& operator=(RuleRecords&&) noexcept;
  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
  friend void read_rules(const RuleText& file, RuleRecords& records);
  friend void collect_rules(RuleRecords& records);
  friend LoadResult compile_rules(RuleRecords&& records, std::string_view compiled_cache);
  friend void add_external_rule(RuleRecords& records, ExternalRule rule);
  friend void add_rule_source(RuleRecords& records, const RuleText& file);
  friend void add_load_error(RuleRecords& records, LoadMessage message);
  friend void add_load_warning(RuleRecords& records, LoadMessage message);
};

// Step 1: reads one YAML rules file into `records` (the file also joins the digest, in call order).
// A *.py file is an error here (Python rules load through attribution_rules_python, which reads
// them itself); a data file (is_rule_data_file) only joins the digest.
void read_rules(const RuleText& file, RuleRecords& records);
// Step 2: collects what was read. Idempotent; compile_rules() runs it when the caller did not.
void collect_rules(RuleRecords& records);
// Step 3: compiles the collection. `compiled_cache` as for load_rules(). Never throws.
LoadResult compile_rules(RuleRecords&& records, std::string_view compiled_cache = {});

// Loads and compiles rule files, in the given order (order matters for precedence ties and for
// refiners within a phase): read_rules() for each, collect_rules(), compile_rules(). Never throws.
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
  size_t exact_scan_patterns = 0;  // scanned on the original text, not the blank-collapsed one
  bool compiled_from_cache = false;  // the Vectorscan databases came from the compiled cache
  size_t external_refiners = 0;   // refiners in another language (Python)
  size_t field_hooks = 0;
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
// apply it too, or it will drop lines the engine would match. `blank_run` is what stands for the
// run (" +" as compiled; a tool may pass a marker byte to find where the runs are, as the Loki
// pushdown does to keep multi-word literals).
std::string tolerate_blanks(std::string_view pattern, std::string_view blank_run = " +");

// True when `pattern` as written, run over text whose runs of blanks are cut to one, finds every
// line that tolerate_blanks(pattern) finds in the original text: no part of it needs two blanks in
// a row (two blank-matching atoms side by side, as in "a  b", "\s\s", " \s+", or a blank-matching
// atom repeated at least twice, as in " {2}", "\s{3,}", ".{2}"). The scanner looks for such
// patterns in the original text instead (rule_set.h, KindDatabase).
bool blanks_collapse_safe(std::string_view pattern);

// The literals ("atoms", lower case) of which every match of `pattern` (RE2 syntax, as compiled:
// tolerate_blanks applied) contains at least one, reduced to the most specific set that still
// covers the pattern (RE2's prefilter analysis; an atom is at least 3 bytes). False, with `atoms`
// empty, when the pattern does not compile or can match a line that has none of its literals.
// Used where text must be selected by literals alone and must not lose a line the pattern matches:
// the scanner's blank-collapsed pass for patterns it cannot scan there as written (rule_set.h) and
// a log store's line filter (Loki pushdown). Pure.
bool required_atoms(const std::string& pattern, bool case_insensitive, std::vector<std::string>& atoms);

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
