#include "capture_engine.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <cstdint>
#include <cstring>
#include <algorithm>
#include <map>
#include <mutex>
#include <vector>

namespace attribution::detail {

// JIT-compiled on first use (std::call_once): a run JITs only the patterns that get candidates,
// which keeps the start-up cost and the executable memory (tens of KB per pattern) of the rest.
struct PcrePattern {
  pcre2_code* code = nullptr;
  uint32_t capture_count = 0;
  mutable std::once_flag jit_once;
  mutable bool jit_ok = false;  // written once under jit_once, read after it
  ~PcrePattern() {
    if (code != nullptr) pcre2_code_free(code);
  }
};

void PcrePatternDeleter::operator()(PcrePattern* p) const { delete p; }

namespace {

bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_alpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
bool is_hex(char c) { return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }

// A small reader of RE2 syntax that finds what may read differently in PCRE2, and whether each
// group can match the empty string (a quantifier on such a group is where RE2's captures may part
// from Perl's). It does not validate: RE2 has already accepted the pattern.
class SyntaxCheck {
 public:
  explicit SyntaxCheck(std::string_view s) : s_(s) {}

  std::string run() {
    alternation();
    if (reason_.empty() && i_ < s_.size()) reason_ = "unbalanced ')'";
    return reason_;
  }

 private:
  bool at_end() const { return i_ >= s_.size() || !reason_.empty(); }
  void fail(std::string why) {
    if (reason_.empty()) reason_ = std::move(why);
  }

  // alternatives up to ')' or the end; returns whether one of them can match empty.
  bool alternation() {
    bool nullable = sequence();
    while (!at_end() && s_[i_] == '|') {
      ++i_;
      nullable = sequence() || nullable;
    }
    return nullable;
  }

  bool sequence() {
    bool nullable = true;
    while (!at_end() && s_[i_] != '|' && s_[i_] != ')') {
      bool group = false;
      bool atom_nullable = atom(group);
      if (!reason_.empty()) return false;
      bool quantified = false, may_skip = false;
      if (quantifier(quantified, may_skip) && group && atom_nullable)
        fail("a quantified group that can match the empty string");
      (void)quantified;
      nullable = nullable && (atom_nullable || may_skip);
    }
    return nullable;
  }

  // Reads a quantifier if one follows; returns true when there was one.
  bool quantifier(bool& quantified, bool& may_skip) {
    if (at_end()) return false;
    char c = s_[i_];
    if (c == '*' || c == '?') {
      may_skip = true;
      ++i_;
    } else if (c == '+') {
      ++i_;
    } else if (c == '{') {
      // RE2: {n}, {n,}, {n,m}; anything else is a literal '{'.
      size_t j = i_ + 1;
      if (j < s_.size() && s_[j] == ',') {
        fail("'{,n}'");
        return false;
      }
      size_t digits_from = j;
      while (j < s_.size() && is_digit(s_[j])) ++j;
      if (j == digits_from) return false;
      bool zero = std::string_view(s_.data() + digits_from, j - digits_from).find_first_not_of('0') ==
                  std::string_view::npos;
      if (j < s_.size() && s_[j] == ',') {
        ++j;
        while (j < s_.size() && is_digit(s_[j])) ++j;
      }
      if (j >= s_.size() || s_[j] != '}') return false;
      i_ = j + 1;
      may_skip = zero;
    } else {
      return false;
    }
    quantified = true;
    if (!at_end() && s_[i_] == '?') {
      ++i_;  // lazy
    } else if (!at_end() && s_[i_] == '+') {
      fail("possessive quantifier");
    }
    return true;
  }

  // One atom; returns whether it can match empty. `group` is set for parenthesised groups.
  bool atom(bool& group) {
    char c = s_[i_];
    if (static_cast<unsigned char>(c) >= 0x80) {
      fail("a non-ASCII byte");
      return false;
    }
    if (c == '(') {
      ++i_;
      if (i_ < s_.size() && s_[i_] == '?') {
        ++i_;
        if (i_ < s_.size() && s_[i_] == 'P') ++i_;
        if (i_ < s_.size() && s_[i_] == '<') {
          size_t close = s_.find('>', i_);
          if (close == std::string_view::npos) {
            fail("group name");
            return false;
          }
          i_ = close + 1;
        } else {
          // flags: (?i) (?i:...) (?-s) (?:...)
          while (i_ < s_.size() && (s_[i_] == 'i' || s_[i_] == 'm' || s_[i_] == 's' || s_[i_] == 'U' ||
                                    s_[i_] == '-'))
            ++i_;
          if (i_ < s_.size() && s_[i_] == ')') {
            ++i_;
            return true;  // a flag setting: zero width, not a group
          }
          if (i_ >= s_.size() || s_[i_] != ':') {
            fail("group syntax");
            return false;
          }
          ++i_;
        }
      }
      bool nullable = alternation();
      if (!reason_.empty()) return false;
      if (i_ >= s_.size() || s_[i_] != ')') {
        fail("unbalanced '('");
        return false;
      }
      ++i_;
      group = true;
      return nullable;
    }
    if (c == '[') {
      char_class();
      return false;
    }
    if (c == '\\') {
      return escape(false);
    }
    ++i_;
    return c == '^' || c == '$';
  }

  void char_class() {
    ++i_;
    if (i_ < s_.size() && s_[i_] == '^') ++i_;
    if (i_ < s_.size() && s_[i_] == ']') ++i_;
    while (!at_end() && s_[i_] != ']') {
      char c = s_[i_];
      if (static_cast<unsigned char>(c) >= 0x80) return fail("a non-ASCII byte");
      if (c == '[' && i_ + 1 < s_.size() && s_[i_ + 1] == ':') {
        size_t close = s_.find(":]", i_ + 2);
        if (close == std::string_view::npos) return fail("class syntax");
        i_ = close + 2;
      } else if (c == '\\') {
        escape(true);
      } else {
        ++i_;
      }
    }
    if (at_end()) return fail("unbalanced '['");
    ++i_;
  }

  // An escape at s_[i_] == '\\'; returns whether it is zero-width.
  bool escape(bool in_class) {
    if (i_ + 1 >= s_.size()) {
      fail("trailing '\\'");
      return false;
    }
    char e = s_[i_ + 1];
    i_ += 2;
    if (static_cast<unsigned char>(e) >= 0x80) {
      fail("a non-ASCII byte");
      return false;
    }
    if (!is_alpha(e) && !is_digit(e)) return false;  // escaped punctuation: a literal
    switch (e) {
      case 'd': case 'D': case 'w': case 'W': case 's': case 'S':
      case 'n': case 'r': case 't': case 'f': case 'a':
        return false;
      case 'b': case 'B': case 'A': case 'z':
        if (in_class) fail(std::string("\\") + e + " in a class");
        return true;
      case 'x':
        if (i_ < s_.size() && s_[i_] == '{') {
          size_t close = s_.find('}', i_);
          if (close == std::string_view::npos) fail("\\x{");
          else i_ = close + 1;
        } else {
          for (int k = 0; k < 2 && i_ < s_.size() && is_hex(s_[i_]); ++k) ++i_;
        }
        return false;
      default:
        fail(std::string("escape \\") + e);
        return false;
    }
  }

  std::string_view s_;
  size_t i_ = 0;
  std::string reason_;
};

}  // namespace

std::string pcre_unsuitable_reason(std::string_view pattern) { return SyntaxCheck(pattern).run(); }

PcrePatternPtr compile_pcre(const std::string& pattern, bool case_insensitive, const RE2& re) {
  if (!pcre_unsuitable_reason(pattern).empty()) return nullptr;
  pcre2_compile_context* cctx = pcre2_compile_context_create(nullptr);
  if (cctx == nullptr) return nullptr;
  pcre2_set_newline(cctx, PCRE2_NEWLINE_LF);
  uint32_t options = PCRE2_DOLLAR_ENDONLY | PCRE2_NEVER_UTF | PCRE2_NEVER_UCP | PCRE2_NEVER_BACKSLASH_C;
  if (case_insensitive) options |= PCRE2_CASELESS;
  int error = 0;
  PCRE2_SIZE offset = 0;
  PcrePatternPtr out(new PcrePattern);
  out->code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(), options, &error,
                            &offset, cctx);
  pcre2_compile_context_free(cctx);
  if (out->code == nullptr) return nullptr;
  // The same groups at the same numbers under the same names.
  uint32_t captures = 0, name_count = 0, entry_size = 0;
  PCRE2_SPTR table = nullptr;
  if (pcre2_pattern_info(out->code, PCRE2_INFO_CAPTURECOUNT, &captures) != 0 ||
      pcre2_pattern_info(out->code, PCRE2_INFO_NAMECOUNT, &name_count) != 0 ||
      pcre2_pattern_info(out->code, PCRE2_INFO_NAMEENTRYSIZE, &entry_size) != 0 ||
      pcre2_pattern_info(out->code, PCRE2_INFO_NAMETABLE, &table) != 0)
    return nullptr;
  if (static_cast<int>(captures) != re.NumberOfCapturingGroups()) return nullptr;
  const std::map<std::string, int>& names = re.NamedCapturingGroups();
  if (name_count != names.size()) return nullptr;
  for (uint32_t k = 0; k < name_count; ++k) {
    const unsigned char* entry = table + static_cast<size_t>(k) * entry_size;
    int number = (entry[0] << 8) | entry[1];
    auto it = names.find(reinterpret_cast<const char*>(entry + 2));
    if (it == names.end() || it->second != number) return nullptr;
  }
  out->capture_count = captures;
  return out;
}

bool pcre_line_ok(std::string_view line) {
  constexpr uint64_t kHigh = 0x8080808080808080ULL;
  constexpr uint64_t kOnes = 0x0101010101010101ULL;
  constexpr uint64_t kVt = 0x0B0B0B0B0B0B0B0BULL;
  const char* p = line.data();
  size_t n = line.size();
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t w;
    std::memcpy(&w, p + i, 8);
    uint64_t vt = w ^ kVt;
    if (((w & kHigh) | ((vt - kOnes) & ~vt & kHigh)) != 0) return false;
  }
  for (; i < n; ++i) {
    unsigned char c = static_cast<unsigned char>(p[i]);
    if (c >= 0x80 || c == 0x0B) return false;
  }
  return true;
}

struct PcreMatcher::State {
  pcre2_match_data* data = nullptr;
  uint32_t pairs = 0;
  pcre2_match_context* context = nullptr;
  ~State() {
    if (data != nullptr) pcre2_match_data_free(data);
    if (context != nullptr) pcre2_match_context_free(context);
  }
};

// Backtracking bound per line: far above what any catalogue pattern needs on a real line; a line
// that reaches it is decided by RE2 (linear time).
constexpr uint32_t kPcreMatchLimit = 200000;

PcreMatcher::PcreMatcher() : state_(std::make_unique<State>()) {
  state_->context = pcre2_match_context_create(nullptr);
  if (state_->context != nullptr) pcre2_set_match_limit(state_->context, kPcreMatchLimit);
}
PcreMatcher::~PcreMatcher() = default;

PcreMatcher::Result PcreMatcher::match(const PcrePattern& p, std::string_view line, re2::StringPiece* groups,
                                       size_t ngroups) {
  return match_with(p, line, groups, ngroups, true);
}

PcreMatcher::Result PcreMatcher::match_with(const PcrePattern& p, std::string_view line, re2::StringPiece* groups,
                                            size_t ngroups, bool jit) {
  State& s = *state_;
  if (jit) {
    std::call_once(p.jit_once, [&p] { p.jit_ok = pcre2_jit_compile(p.code, PCRE2_JIT_COMPLETE) == 0; });
    if (!p.jit_ok) return Result::kUseRe2;
  }
  if (s.context == nullptr || line.data() == nullptr || ngroups > p.capture_count + 1) return Result::kUseRe2;
  if (s.pairs < p.capture_count + 1) {
    if (s.data != nullptr) pcre2_match_data_free(s.data);
    s.pairs = std::max<uint32_t>(p.capture_count + 1, 32);
    s.data = pcre2_match_data_create(s.pairs, nullptr);
    if (s.data == nullptr) {
      s.pairs = 0;
      return Result::kUseRe2;
    }
  }
  int rc = jit ? pcre2_jit_match(p.code, reinterpret_cast<PCRE2_SPTR>(line.data()), line.size(), 0, 0, s.data,
                                 s.context)
               : pcre2_match(p.code, reinterpret_cast<PCRE2_SPTR>(line.data()), line.size(), 0, PCRE2_NO_JIT,
                             s.data, s.context);
  if (rc == PCRE2_ERROR_NOMATCH) return Result::kNoMatch;
  if (rc <= 0) return Result::kUseRe2;
  const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(s.data);
  for (size_t g = 0; g < ngroups; ++g) {
    if (g < static_cast<size_t>(rc) && ov[2 * g] != PCRE2_UNSET) {
      groups[g] = re2::StringPiece(line.data() + ov[2 * g], ov[2 * g + 1] - ov[2 * g]);
    } else {
      groups[g] = re2::StringPiece();
    }
  }
  return Result::kMatch;
}

bool capture_match(const RE2& re, const PcrePattern* fast, PcreMatcher& matcher, std::string_view line,
                   re2::StringPiece* groups, size_t ngroups) {
  if (fast != nullptr && pcre_line_ok(line)) {
    PcreMatcher::Result r = matcher.match(*fast, line, groups, ngroups);
    if (r != PcreMatcher::Result::kUseRe2) return r == PcreMatcher::Result::kMatch;
  }
  return re.Match(re2::StringPiece(line.data(), line.size()), 0, line.size(), RE2::UNANCHORED, groups,
                  static_cast<int>(ngroups));
}

bool pcre_agrees(const RE2& re, const PcrePattern& p, PcreMatcher& matcher, std::string_view line, bool jit) {
  size_t ngroups = static_cast<size_t>(re.NumberOfCapturingGroups()) + 1;
  std::vector<re2::StringPiece> by_re2(ngroups), by_pcre(ngroups);
  bool m1 = re.Match(re2::StringPiece(line.data(), line.size()), 0, line.size(), RE2::UNANCHORED,
                     by_re2.data(), static_cast<int>(ngroups));
  PcreMatcher::Result r = matcher.match_with(p, line, by_pcre.data(), ngroups, jit);
  if (r == PcreMatcher::Result::kUseRe2) return true;  // decided by RE2 at run time too
  if (m1 != (r == PcreMatcher::Result::kMatch)) return false;
  if (!m1) return true;
  for (size_t g = 0; g < ngroups; ++g) {
    bool set1 = by_re2[g].data() != nullptr, set2 = by_pcre[g].data() != nullptr;
    if (set1 != set2) return false;
    if (set1 && (by_re2[g].data() != by_pcre[g].data() || by_re2[g].size() != by_pcre[g].size())) return false;
  }
  return true;
}

}  // namespace attribution::detail
