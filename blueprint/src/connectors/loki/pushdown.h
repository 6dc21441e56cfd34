// Line-filter pushdown for Loki: a LogQL `|~` filter derived from the rule catalogue that selects
// only the lines some extractor of the collector's kind could match, so Loki ships candidate lines
// instead of whole streams.
//
// Modes:
//   literals  — (default) the required literals ("atoms") of every extractor pattern, computed by
//               RE2's FilteredRE2 prefilter analysis, minimised (an atom containing another is
//               dropped), escaped and joined:  (?i)atom1|atom2|...   A blank the engine lets
//               match a run of blanks stays inside its literal as " +" ("pod +lost +due"), so a
//               multi-word literal is kept whole rather than cut to its longest word. A line matching any
//               extractor contains at least one atom, so the filter never drops a match; it is
//               case-insensitive because the atoms are lowercased. Short and cheap for Loki (it
//               turns literal alternations into substring checks).
//   patterns  — the extractor patterns themselves, converted to Go RE2 syntax (named groups
//               (?P<n>...) → (?:...), case-insensitive ones wrapped in (?i:...)), joined with '|'.
//               Exact, but long (over 100 KB for the app-log catalogue): a regex engine without a
//               large DFA (Go's, which Loki runs) pays milliseconds per line for it. So the filter
//               is two stages, `|~ literals |~ patterns`: Loki runs line filters in order, and the
//               exact patterns only see the lines that already contain a required literal.
//   off       — no filter.
// If a pattern has no usable literal (it could match any line), `literals` falls back to off.
//
// Thread-safety: pure functions.
#pragma once

#include <string>
#include <vector>

#include "attribution/model.h"
#include "attribution/rules.h"

namespace attribution::blueprint {

struct CatalogPattern {
  std::string id;
  std::string pattern;       // as the engine compiles it (tolerate_blanks)
  std::string atom_pattern;  // the same with each tolerated blank run as kBlankRunMarker, for literals
  bool case_insensitive = false;
  unsigned kinds_mask = 0;  // 1 << ObservationKind; 0 = every text kind
};

// Stands for a run of blanks in CatalogPattern::atom_pattern, so a literal keeps its words together
// ("pod\x01lost", sent to Loki as "pod +lost") instead of falling apart into single words.
inline constexpr char kBlankRunMarker = '\x01';

// Extractor patterns of rule files (the `extractors:` lists), without compiling the rule set.
std::vector<CatalogPattern> catalog_patterns(const std::vector<RuleText>& files, std::string& error);

struct Pushdown {
  std::string mode;        // literals | patterns | off (after fallback)
  std::string regex;       // Go RE2 regex; empty = no filter
  std::string prefilter;   // patterns mode: the literals regex run before `regex` (empty = none)
  size_t patterns = 0;     // extractor patterns considered
  size_t atoms = 0;        // literals in the literal filter (literals mode, and patterns mode's prefilter)
  std::string note;        // why a fallback happened
};

// Builds the filter for extractors that apply to `kind`.
Pushdown build_pushdown(const std::vector<CatalogPattern>& patterns, ObservationKind kind, const std::string& mode);

// An RE2 (C++) pattern in Go RE2 syntax: (?P<name>…) → (?:…).
std::string to_go_re2(const std::string& pattern);

// The LogQL line-filter stage `|~ <string>` for a regex: a raw `backtick` string when possible.
std::string logql_regex_filter(const std::string& regex);

// The LogQL line-filter stages of a pushdown: `|~ prefilter |~ regex`, or `|~ regex`, or empty.
std::string logql_line_filters(const Pushdown& pushdown);

}  // namespace attribution::blueprint
