// Internal: the compiled form of the rules (docs/rules.md). Immutable after load_rules().
#pragma once

#include <hs/hs.h>
#include <re2/re2.h>

#include <array>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "attribution/engine.h"
#include "attribution/rule_extension.h"
#include "attribution/rules.h"
#include "capture_engine.h"

namespace attribution {

// "gpu.xid.{xid}" → literal and capture pieces. Field names may be "label.X" / "value" for
// metric extractors.
struct Template {
  struct Piece {
    bool is_field = false;
    std::string text;
  };
  std::vector<Piece> pieces;
  bool empty() const { return pieces.empty(); }
  // Fills placeholders from `lookup`; returns false when a field is missing or empty.
  template <class Lookup>
  bool render(const Lookup& lookup, std::string& out) const {
    out.clear();
    for (const auto& p : pieces) {
      if (!p.is_field) {
        out += p.text;
        continue;
      }
      const std::string* v = lookup(p.text);
      if (v == nullptr || v->empty()) return false;
      out += *v;
    }
    return true;
  }
};

struct SymptomAttrs {
  std::string label;
  std::string domain = "unknown";
  std::string outcome;
  std::string role = "context";  // cause | victim | context
  int priority = 0;
  bool indirect = false;
  // Read by a catch-all rule (`evidence: generic`): the line names what was raised (a RuntimeError,
  // an OSError), not whether the program or what it called is at fault. As a root cause it gives
  // quality `probable` at most.
  bool generic = false;
  // The symptom means a process of the job ended in failure (a task's non-zero exit, a failed
  // step). It contradicts a scheduler record of success.
  bool terminal = false;
  // The scheduler takes the node the symptom names out of service (Slurm drains a node whose step
  // would not die): that node needs an operator whatever the verdict's cause.
  bool drains_node = false;
  std::map<std::string, std::string> extra;  // catalog columns (action, class, mnemonic ...)
  bool resolved = false;
};

struct Fixture {
  Position pos;
  std::string input;  // a line, or a metric sample in text exposition
  bool expect_none = false;
  std::map<std::string, std::string> expect;  // symptom, node, rank, gpu, fields...
};

// The texts a fixture line is checked in besides alone (`rules test`, fixtures.cc, and the
// collapsed-scan check at load, rule_loader.cc): after unrelated text of each of these lengths, and
// kFixtureRepeats times between lines that end in runs of blanks (Vectorscan 5.4.9 drops matches of
// some pattern shapes there). Pure functions.
inline constexpr size_t kFixtureNoiseLengths[] = {1, 17, 63, 64, 65, 129};
inline constexpr size_t kFixtureRepeats = 40;
// The line a fixture's extractor reads: its input's last line (the lines above it, if any, are the
// block an extractor's `context:` reads).
inline std::string_view fixture_line(std::string_view input) {
  size_t nl = input.rfind('\n');
  return nl == std::string_view::npos ? input : input.substr(nl + 1);
}
std::string fixture_after_noise(const std::string& line, size_t noise_bytes);
std::string fixture_repeated(const std::string& line);

struct CatalogRef {
  std::string name;
  size_t catalog = 0;
  Template key;
};

// Lines above the matched one that an extractor also reads (`context:`, docs/rules.md "Reading a
// block"). A report printed as a block (torch elastic's failure table, `scontrol show node`,
// `nvidia-smi -q`) names the rank, host or device on rows of its own above the row that says what
// happened. Walking back at most `lines` lines from the matched line, within the text the scanner
// holds: a line matching `require` ends the walk and is what lets the line be this extractor's (when
// `require` is set and no such line is reached, the extractor does not match the line); a line
// matching `stop` ends the walk; otherwise the nearest line each of `rows` matches gives that row's
// named captures, which the extractor's templates and fields use like its own (its own win).
struct LineContext {
  struct Pattern {
    std::string text;  // as written (blanks tolerated like an extractor pattern's)
    Position pos;
    std::unique_ptr<RE2> re;                 // compiled in step 3
    std::vector<std::string> group_names;    // index i (1-based groups) → name ("" = unnamed)
  };
  size_t lines = 0;
  std::vector<Pattern> rows;
  std::optional<Pattern> require;
  std::optional<Pattern> stop;
};

struct Extractor {
  std::string id;
  std::string description;
  Position pos;
  std::string pattern;        // as compiled for the capture step: literal blanks tolerate runs
  std::string scan_pattern;   // as written (or the rule's `scan:`): what Vectorscan scans blank-collapsed text with
  bool collapse_safe = true;  // scan_pattern on collapsed text finds every line `pattern` matches
  // The rule gave a `scan:` expression: a cheaper superset of `pattern` for the scan (every line the
  // pattern matches, and perhaps more). Its hits are candidates only; the capture step's `pattern`
  // decides, and a line it rejects is not counted as a candidate.
  bool scan_superset = false;
  // Not collapse_safe, yet looked for in the collapsed text by its required literals (required_atoms,
  // caseless) instead of on the original text: every line `pattern` matches holds one of them, blank
  // runs never fall inside one, and the capture step confirms each candidate with `pattern`.
  std::vector<std::string> scan_atoms;
  bool case_insensitive = false;
  int precedence = 0;
  uint32_t kinds_mask = 0;
  std::unique_ptr<RE2> re;
  // The same pattern for PCRE2's JIT (capture_engine.h), or null: RE2 alone takes the captures.
  detail::PcrePatternPtr pcre;
  std::vector<std::string> group_names;  // index i (1-based groups) → name ("" = unnamed)
  Template symptom, node, rank, gpu;
  std::optional<CatalogRef> catalog;
  std::vector<std::string> fields;  // empty = all named captures
  // Where in the fabric the symptom points (docs/fabric.md §2): canonical key → template, kept
  // with the symptom's fields as "_fabric.<key>".
  std::vector<std::pair<std::string, Template>> fabric;
  std::vector<Fixture> fixtures;
  bool prefilter = false;  // compiled by Vectorscan in prefilter mode
  std::optional<LineContext> context;
};

struct MetricExtractor {
  std::string id;
  std::string description;
  Position pos;
  std::string metric;
  std::string op;  // > >= < <= == !=
  double threshold = 0;
  Template symptom, node, gpu;
  std::vector<Template> node_fallback;
  std::optional<CatalogRef> catalog;
  bool indirect = false;
  std::vector<std::pair<std::string, Template>> fabric;  // as Extractor::fabric, over {label.X} / {value}
  std::vector<Fixture> fixtures;
};

struct Catalog {
  std::string id;
  std::string description;
  std::map<std::string, SymptomAttrs> entries;
  std::optional<SymptomAttrs> fallback;
};

enum class Phase { kEarly = 0, kDefault, kLate, kFinal, kPostOutcome };

struct Refiner {
  std::string id;
  std::string description;
  Position pos;
  Phase phase = Phase::kDefault;
  std::string builtin;  // empty = declarative
  std::vector<std::string> cause;
  std::string cause_role;
  std::vector<std::string> explains;
  std::string scope = "job";
  // The cause is a recovery (a reconnect, a link back up): the effects it covers were transient,
  // so they are explained whatever their priority.
  bool recovery = false;
  // The cause explains its effects whatever their priority (`outranks: true`): a rank that crashed
  // explains the time limit the other ranks then waited into, though a time limit outranks a crash
  // when the two are unrelated.
  bool outranks = false;
  // The effects are other lines of the cause's own event (`same_event: true`: the header and memory
  // report the kernel prints with one OOM kill): explained whatever their priority or domain, as
  // a recovery's are.
  bool same_event = false;
  int64_t within_ns = 30LL * 60 * 1000000000LL;
  int64_t before_ns = 5LL * 1000000000LL;
};

// Error-like words. Compiled (case-insensitive literals) into every text kind's database after
// that kind's extractors, with Vectorscan ids from extractors.size() on; a line they hit that no
// extractor confirms is an unrecognized line (Extraction::add_unrecognized). A hit counts when the
// word starts a word (after a non-letter, or a camelCase boundary as in "RuntimeError") and, for
// `whole`, also ends one.
struct ErrorWord {
  const char* literal;
  bool whole;
};
inline constexpr ErrorWord kErrorWords[] = {
    {"error", false},     {"fail", false},        {"fatal", false},          {"exception", false},
    {"traceback", false}, {"abort", false},       {"panic", false},          {"timeout", false},
    {"timed out", false}, {"killed", false},      {"segfault", false},       {"segmentation fault", false},
    {"core dumped", false}, {"sigkill", false},   {"sigsegv", false},        {"sigabrt", false},
    {"sigbus", false},    {"nccl warn", false},   {"out of memory", false},  {"oom", true},
    {"denied", false},    {"refused", false},     {"unreachable", false},    {"no space left", false},
    {"not responding", false}, {"critical", false}, {"crash", false},
};
inline constexpr size_t kErrorWordCount = sizeof(kErrorWords) / sizeof(kErrorWords[0]);

// One Vectorscan database: id i < extractors.size() is extractor extractors[i], an id beyond is
// kErrorWords[words[i - extractors.size()]].
struct ScanDatabase {
  hs_database_t* db = nullptr;
  std::vector<uint32_t> extractors;
  std::vector<uint32_t> words;
  ScanDatabase() = default;
  ScanDatabase(const ScanDatabase&) = delete;
  ScanDatabase& operator=(const ScanDatabase&) = delete;
  ~ScanDatabase() {
    if (db != nullptr) hs_free_database(db);
  }
};

// A kind's patterns in two databases. Rules tolerate widened blanks (a literal space matches a run
// of spaces, tolerate_blanks), but a pattern with " +" between its words gives Vectorscan only single
// words as literals to look for, and the catalogue scanned five times slower. So the text is scanned
// with runs of blanks cut to one (collapse_blank_runs) by `collapsed`: the patterns as written, whose
// matches there are the lines the tolerant pattern matches in the original (Extractor::collapse_safe),
// the required literals of the patterns that cannot be scanned there as written (two blanks in a row,
// " {2}", "\s\s", or a shape Vectorscan misses there: Extractor::scan_atoms), and every error word
// (one of several words that spans a cut run is dropped, so they match as they always did). `exact`
// scans the original text with the tolerant form of any pattern left without usable literals; it is
// empty for the shipped catalogue, so the text is passed over once.
struct KindDatabase {
  ScanDatabase collapsed;
  ScanDatabase exact;
};

class RuleSet {
 public:
  std::vector<RuleText> sources;
  std::vector<Extractor> extractors;  // load order
  std::vector<MetricExtractor> metric_extractors;
  std::vector<Catalog> catalogs;
  std::map<std::string, SymptomAttrs> symptom_exact;
  std::vector<std::pair<std::string, SymptomAttrs>> symptom_prefix;  // longest prefix first
  std::vector<Refiner> refiners;
  // Rules in other languages (rule_extension.h), in load order; field hooks by extractor id
  // (indices into external_rules).
  std::vector<ExternalRule> external_rules;
  std::map<std::string, std::vector<size_t>> field_hooks;
  // One Vectorscan database per observation kind, over the extractors that apply to that kind.
  std::array<std::unique_ptr<KindDatabase>, kObservationKindCount> dbs;
  bool from_cache = false;
  hs_scratch_t* scratch_prototype = nullptr;
  RuleSetInfo info;
  size_t pcre_patterns = 0;  // extractors whose captures PCRE2 takes (capture_engine.h)

  ~RuleSet() {
    if (scratch_prototype != nullptr) hs_free_scratch(scratch_prototype);
  }

  // Attributes of a symptom: the catalog entry named by the record's hidden "_catalog" and
  // "_catalog_key" fields, else the symptoms table (exact, then longest prefix glob).
  SymptomAttrs attributes(const std::string& symptom_id,
                          const Fields& fields) const;
};

bool glob_match(const std::string& glob, const std::string& id);

}  // namespace attribution
