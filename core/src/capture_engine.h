// Internal: the capture step on confirmed candidate lines, with PCRE2's JIT where it gives exactly
// what RE2 gives.
//
// Extractor patterns are written in RE2 syntax and RE2 (Latin-1, leftmost-first) is the reference
// semantics. RE2 pays about 18,500 instructions per line when captures are asked for (it runs
// BitState over the line instead of its DFA); PCRE2's JIT takes the same captures for a small
// fraction of that on the catalogue's patterns. A pattern is handed to PCRE2 only when:
//   * it uses no construct whose meaning differs between the two (escapes other than
//     \d \D \w \W \s \S \b \B \A \z \x \n \r \t \f \a and escaped punctuation; \p, \Q, \C, octal,
//     {,n}; non-ASCII bytes; a quantifier on a group that can match the empty string, where
//     RE2's and Perl's rules for captures inside empty iterations part),
//   * PCRE2 compiles and JIT-compiles it with the same groups at the same numbers under the same
//     names,
//   * and it takes the same captures as RE2 on every fixture line of its extractor.
// A line is handed to PCRE2 only when it is plain ASCII without a vertical tab (0x0B): there,
// PCRE2's byte semantics with its C-locale tables equal RE2's Latin-1 ones (case folding, \s).
// Anything else, and any PCRE2 match error (its match limit, the JIT stack), is decided by RE2.
// Nothing is logged.
#pragma once

#include <re2/re2.h>

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace attribution::detail {

struct PcrePattern;
struct PcrePatternDeleter {
  void operator()(PcrePattern* p) const;
};
using PcrePatternPtr = std::unique_ptr<PcrePattern, PcrePatternDeleter>;

// Empty when `pattern` (RE2 syntax) uses only constructs PCRE2 reads the same way; otherwise why
// not (for tests and the rules summary).
std::string pcre_unsuitable_reason(std::string_view pattern);

// The PCRE2 form of `re` (compiled from `pattern` with `case_insensitive`; JIT-compiled on its
// first match), or nullptr when the pattern is unsuitable, PCRE2 rejects it, or its groups differ
// from `re`'s. Thread-safety: may be matched from any number of threads (the JIT step runs once).
PcrePatternPtr compile_pcre(const std::string& pattern, bool case_insensitive, const RE2& re);

// True when `line` is a text on which PCRE2 and RE2 Latin-1 read every suitable pattern alike:
// bytes 0x00-0x7F except 0x0B.
bool pcre_line_ok(std::string_view line);

// Per-thread match state (PCRE2 match data and match context). Not thread-safe; one per scanner.
class PcreMatcher {
 public:
  enum class Result { kMatch, kNoMatch, kUseRe2 };
  PcreMatcher();
  ~PcreMatcher();
  PcreMatcher(const PcreMatcher&) = delete;
  PcreMatcher& operator=(const PcreMatcher&) = delete;

  // Unanchored leftmost-first match of `p` on `line`; on kMatch fills groups[0..ngroups) as
  // RE2::Match does (a group that took no part has a null data()). kUseRe2: PCRE2 could not
  // decide (match limit, JIT stack, ovector); ask RE2.
  Result match(const PcrePattern& p, std::string_view line, re2::StringPiece* groups, size_t ngroups);
  // As match(); `jit` false runs PCRE2's interpreter (same semantics) without JIT-compiling `p`.
  Result match_with(const PcrePattern& p, std::string_view line, re2::StringPiece* groups, size_t ngroups,
                    bool jit);

 private:
  struct State;
  std::unique_ptr<State> state_;
};

// RE2::Match with captures, through PCRE2 where `fast` (may be null) and the line allow it.
// `groups` must hold `ngroups` entries; the answer and the groups are RE2's.
bool capture_match(const RE2& re, const PcrePattern* fast, PcreMatcher& matcher, std::string_view line,
                   re2::StringPiece* groups, size_t ngroups);

// True when RE2 and PCRE2 (`p`, compiled from `re`'s pattern) give the same answer and the same
// groups (null or not, same offset and length) on `line`, asked directly (not through
// pcre_line_ok); `jit` false asks PCRE2's interpreter, which the loader uses on fixture lines so
// that only patterns a run needs get JIT-compiled. Used at load and by the tests.
bool pcre_agrees(const RE2& re, const PcrePattern& p, PcreMatcher& matcher, std::string_view line,
                 bool jit = true);

}  // namespace attribution::detail
