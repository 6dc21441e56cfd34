// Extraction hot path: one Vectorscan pass over the whole buffer per observation kind; RE2's
// semantics (taken by PCRE2's JIT where that is exact, capture_engine.h) run only on candidate
// lines to confirm and take captures. No per-line loop over patterns and no per-line allocation
// for lines without a match.
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <limits>
#include <cstring>
#include <unordered_map>

#include "attribution/engine.h"
#include "attribution/text.h"
#include "line_prefix.h"
#include "rule_set.h"
#include "text_util.h"

namespace attribution {
namespace {

// A candidate made by an error word (kErrorWords), not by an extractor: sorts after every extractor
// of its line.
constexpr uint32_t kErrorWordCandidate = UINT32_MAX;

constexpr size_t literal_length(const char* s) {
  size_t n = 0;
  while (s[n] != '\0') ++n;
  return n;
}

bool is_lower(unsigned char c) { return c >= 'a' && c <= 'z'; }
bool is_upper(unsigned char c) { return c >= 'A' && c <= 'Z'; }
bool is_digit(unsigned char c) { return c >= '0' && c <= '9'; }
bool is_alnum(unsigned char c) { return is_lower(c) || is_upper(c) || is_digit(c); }
bool is_hex(unsigned char c) { return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }

// True when error word `w` ending at data[end) starts a word: after a non-letter, or at a camelCase
// boundary ("RuntimeError", "cudaErrorLaunchFailure"); not inside one ("terror", "XERROR"). Whole
// words must also not run on into lower-case letters ("oom" in "room" or "oomph" is no hit, in
// "OOMKilled" it is).
bool error_word_hit(const char* data, size_t len, size_t end, uint32_t word) {
  static const auto lengths = [] {
    std::array<size_t, kErrorWordCount> out{};
    for (size_t i = 0; i < kErrorWordCount; ++i) out[i] = literal_length(kErrorWords[i].literal);
    return out;
  }();
  size_t n = lengths[word];
  if (end < n) return false;
  size_t start = end - n;
  if (start > 0) {
    unsigned char prev = static_cast<unsigned char>(data[start - 1]);
    if (is_upper(prev)) return false;
    if (is_lower(prev) && !is_upper(static_cast<unsigned char>(data[start]))) return false;
  }
  if (kErrorWords[word].whole && end < len && is_lower(static_cast<unsigned char>(data[end]))) return false;
  return true;
}

bool is_month_or_day(std::string_view t) {
  static const char* kNames[] = {"jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct",
                                 "nov", "dec", "mon", "tue", "wed", "thu", "fri", "sat", "sun"};
  if (t.size() != 3) return false;
  for (const char* n : kNames) {
    bool eq = true;
    for (size_t i = 0; i < 3 && eq; ++i) eq = (t[i] | 0x20) == n[i];
    if (eq) return true;
  }
  return false;
}

// A leading token that is part of a line prefix: a time or number ("2024-05-01T10:00:00.1Z",
// "19:02:39", "12:", "+0000"), a glog head ("E0612"), a month or day name, or punctuation ("-").
bool is_prefix_token(std::string_view t) {
  while (!t.empty() && (t.back() == ':' || t.back() == ',')) t.remove_suffix(1);
  if (t.empty()) return true;
  bool digit = false, other_letter = false;
  for (unsigned char c : t) {
    if (is_digit(c)) digit = true;
    else if ((is_upper(c) || is_lower(c)) && c != 'T' && c != 'Z') other_letter = true;
  }
  if (!digit && !other_letter) {
    return std::none_of(t.begin(), t.end(), [](unsigned char c) { return is_alnum(c) || c >= 0x80; });
  }
  if (digit && !other_letter) return true;
  if (t.size() >= 5 && (t[0] == 'I' || t[0] == 'W' || t[0] == 'E' || t[0] == 'F' || t[0] == 'D') &&
      std::all_of(t.begin() + 1, t.end(), [](unsigned char c) { return is_digit(c); }))
    return true;
  return is_month_or_day(t);
}

constexpr size_t kUnrecognizedKeyBytes = 200;

// The aggregation key of an unrecognized line: without its time/host/launcher prefix, digit runs
// and hex words masked to '#', whitespace collapsed.
void unrecognized_key(std::string_view line, const detail::LinePrefix& prefix, std::string& key) {
  key.clear();
  size_t from = 0;
  if (!prefix.host.empty() && prefix.host.data() >= line.data() &&
      prefix.host.data() + prefix.host.size() <= line.data() + line.size()) {
    from = static_cast<size_t>(prefix.host.data() + prefix.host.size() - line.data());
  }
  // Printable ASCII (nearly every line) is used as it is; anything else is cleaned first.
  std::string_view t = line.substr(from, 600);
  std::string text;
  if (!std::all_of(t.begin(), t.end(), [](char ch) { return ch >= 0x20 && ch < 0x7f; })) {
    text = detail::clean_evidence_text(t, 600);
    t = text;
  }
  size_t p = 0;
  while (p < t.size()) {
    char c = t[p];
    if (c == ' ' || c == ':' || c == '|' || c == ',') {
      ++p;
      continue;
    }
    if (c == '[' || c == '<' || c == '(') {
      char close = c == '[' ? ']' : c == '<' ? '>' : ')';
      size_t q = t.find(close, p + 1);
      if (q == std::string_view::npos || q - p > 96) break;
      p = q + 1;
      continue;
    }
    size_t e = t.find(' ', p);
    if (e == std::string_view::npos) e = t.size();
    if (!is_prefix_token(t.substr(p, e - p))) break;
    p = e;
  }
  if (p >= t.size()) p = 0;  // nothing but a prefix: keep it all
  t.remove_prefix(p);
  size_t i = 0;
  while (i < t.size() && key.size() < kUnrecognizedKeyBytes) {
    unsigned char c = static_cast<unsigned char>(t[i]);
    if (c == ' ') {
      if (!key.empty() && key.back() != ' ') key += ' ';
      ++i;
      continue;
    }
    if (!is_alnum(c)) {
      key += static_cast<char>(c);
      ++i;
      continue;
    }
    size_t e = i;
    bool all_hex = true, digit = false;
    while (e < t.size() && is_alnum(static_cast<unsigned char>(t[e]))) {
      all_hex = all_hex && is_hex(static_cast<unsigned char>(t[e]));
      digit = digit || is_digit(static_cast<unsigned char>(t[e]));
      ++e;
    }
    std::string_view word = t.substr(i, e - i);
    bool hex_literal = word.size() > 2 && word[0] == '0' && (word[1] == 'x' || word[1] == 'X') &&
                       std::all_of(word.begin() + 2, word.end(), [](unsigned char x) { return is_hex(x); });
    if (hex_literal) {
      key += "0x#";
    } else if (all_hex && digit) {
      key += '#';
    } else {
      for (size_t k = 0; k < word.size(); ++k) {
        if (!is_digit(static_cast<unsigned char>(word[k]))) {
          key += word[k];
        } else if (k == 0 || !is_digit(static_cast<unsigned char>(word[k - 1]))) {
          key += '#';
        }
      }
    }
    i = e;
  }
  while (!key.empty() && key.back() == ' ') key.pop_back();
  if (key.size() > kUnrecognizedKeyBytes) {
    size_t cut = kUnrecognizedKeyBytes;
    while (cut > 0 && (static_cast<unsigned char>(key[cut]) & 0xC0) == 0x80) --cut;
    key.resize(cut);
  }
}

struct Candidate {
  size_t line_start;
  size_t line_end;
  uint32_t extractor;
};

struct MatchContext {
  const char* data;
  size_t len;
  const ScanDatabase* db;
  std::vector<Candidate>* out;
  size_t cur_start = 1;  // empty range: no current line
  size_t cur_end = 0;
  // When `data` is the blank-collapsed copy: its offsets back to the original (collapse_blank_runs).
  const std::vector<std::pair<size_t, size_t>>* shifts = nullptr;
};

// Bytes cut from the original before collapsed offset `o` (collapse_blank_runs' shift pairs).
size_t cut_before(const std::vector<std::pair<size_t, size_t>>& shifts, size_t o) {
  auto it = std::upper_bound(shifts.begin(), shifts.end(), o,
                             [](size_t x, const std::pair<size_t, size_t>& p) { return x < p.first; });
  return it == shifts.begin() ? 0 : std::prev(it)->second;
}

// Error words of several words match as written (one blank between the words), as they always did
// on the original text: in the collapsed copy, a hit that spans a cut run of blanks is not one.
bool multi_word(uint32_t word) {
  static const auto flags = [] {
    std::array<bool, kErrorWordCount> out{};
    for (size_t i = 0; i < kErrorWordCount; ++i) out[i] = std::string_view(kErrorWords[i].literal).find(' ') != std::string_view::npos;
    return out;
  }();
  return flags[word];
}

int on_match(unsigned int id, unsigned long long /*from*/, unsigned long long to,
             unsigned int /*flags*/, void* ctx_ptr) {
  auto* ctx = static_cast<MatchContext*>(ctx_ptr);
  if (to == 0) return 0;
  uint32_t extractor;
  if (id < ctx->db->extractors.size()) {
    extractor = ctx->db->extractors[id];
  } else {
    size_t w = id - ctx->db->extractors.size();
    if (w >= ctx->db->words.size()) return 0;
    uint32_t word = ctx->db->words[w];
    if (!error_word_hit(ctx->data, ctx->len, static_cast<size_t>(to), word)) return 0;
    if (ctx->shifts != nullptr && multi_word(word)) {
      size_t end = static_cast<size_t>(to), start = end - literal_length(kErrorWords[word].literal);
      if (cut_before(*ctx->shifts, start) != cut_before(*ctx->shifts, end)) return 0;
    }
    extractor = kErrorWordCandidate;
  }
  size_t pos = static_cast<size_t>(to) - 1;
  if (ctx->data[pos] == '\n' && pos > 0) --pos;  // a match that swallowed the newline
  if (!(pos >= ctx->cur_start && pos < ctx->cur_end)) {
    const void* nl = pos == 0 ? nullptr : memrchr(ctx->data, '\n', pos);
    // If data[pos] itself is '\n' (empty line), the line is empty: start = pos.
    size_t start = nl == nullptr ? 0 : static_cast<const char*>(nl) - ctx->data + 1;
    if (ctx->data[pos] == '\n') start = pos;
    const void* end = memchr(ctx->data + pos, '\n', ctx->len - pos);
    ctx->cur_start = start;
    ctx->cur_end = end == nullptr ? ctx->len : static_cast<const char*>(end) - ctx->data;
  }
  auto& out = *ctx->out;
  if (!out.empty() && out.back().line_start == ctx->cur_start && out.back().extractor == extractor)
    return 0;
  out.push_back({ctx->cur_start, ctx->cur_end, extractor});
  return 0;
}

std::string format_value(double v) {
  if (v == static_cast<double>(static_cast<int64_t>(v))) {
    return fmt::format("{}", static_cast<int64_t>(v));
  }
  return fmt::format("{}", v);
}

}  // namespace

struct Scanner::Impl {
  std::shared_ptr<const RuleSet> rules;
  hs_scratch_t* scratch = nullptr;
  std::vector<Candidate> candidates;
  std::string collapsed_text;                              // the slice with blank runs cut (text.h)
  std::vector<std::pair<size_t, size_t>> collapse_shifts;  // its offsets back to the slice's
  std::vector<re2::StringPiece> groups;
  detail::PcreMatcher pcre_matcher;
  std::vector<const re2::RE2::Arg*> arg_ptrs;
  std::string unrecognized_key_buffer;
  std::vector<std::string> captures;  // by group index; valid where groups[i] took part
  // What an extractor's `context:` rows captured on the lines above (name, value), nearest first.
  std::vector<std::pair<const std::string*, std::string>> context_values;
  std::vector<re2::StringPiece> context_groups;
  std::vector<bool> context_found;
  SymptomKey key_scratch;
  std::string id_scratch;
  std::string value_scratch;
  Fields fabric_scratch;
  // The names evidence lines share (SharedString): the last source, node and note seen, and each
  // extractor's id, made once and referenced by every line that names them.
  SharedString source_name, note_text;
  std::vector<SharedString> rule_ids;  // by extractor index

  // Symptom-key strings (ids, nodes, GPUs), made once per distinct text and shared by every record
  // and item that holds them.
  struct ViewHash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  std::unordered_map<std::string, SharedString, ViewHash, std::equal_to<>> interned;
  const SharedString& intern(std::string_view s) {
    static const SharedString kEmpty;
    if (s.empty()) return kEmpty;
    auto it = interned.find(s);
    if (it == interned.end()) it = interned.emplace(std::string(s), SharedString(s)).first;
    return it->second;
  }

  static const SharedString& shared(SharedString& cache, const std::string& s) {
    if (cache.view() != s) cache = SharedString(s);
    return cache;
  }
  // An extractor's capture names as SharedStrings, made once (by extractor index, then group index).
  std::vector<std::vector<SharedString>> group_names;
  const SharedString& group_name(const Extractor& x, size_t group) {
    const auto& xs = rules->extractors;
    size_t i = static_cast<size_t>(&x - xs.data());
    if (i >= xs.size()) return intern(x.group_names[group]);
    if (group_names.size() != xs.size()) group_names.resize(xs.size());
    auto& names = group_names[i];
    if (names.size() != x.group_names.size()) names.assign(x.group_names.begin(), x.group_names.end());
    return names[group];
  }
  const SharedString& rule_id(const Extractor& x) {
    const auto& xs = rules->extractors;
    size_t i = static_cast<size_t>(&x - xs.data());
    if (i >= xs.size()) return intern(x.id);  // not from the catalogue (never happens)
    if (rule_ids.size() != xs.size()) rule_ids.resize(xs.size());
    if (rule_ids[i].empty()) rule_ids[i] = SharedString(x.id);
    return rule_ids[i];
  }

  explicit Impl(std::shared_ptr<const RuleSet> r) : rules(std::move(r)) {
    if (rules->scratch_prototype != nullptr) hs_clone_scratch(rules->scratch_prototype, &scratch);
  }
  ~Impl() {
    if (scratch != nullptr) hs_free_scratch(scratch);
  }

  // Confirms extractor x on `line` and, when it matches, adds the symptom. Returns true on match.
  //
  // In a failure storm most confirmed lines repeat a (symptom, node, rank, GPU) key whose earliest
  // evidence lines are already kept: those only count (Extraction::add_repeat), without the field
  // map, the cleaned evidence text or its string copies. The rest take the full path; both give
  // the aggregate add() alone would. Whatever decides a line's key or whether it counts belongs
  // before add_repeat(); what only shapes the kept fields or evidence, after it.
  // Walks back from the line starting at `line_start` in `buffer` (rule_set.h LineContext): fills
  // context_values with the rows' captures. False when the context requires a line the walk did not
  // reach.
  bool read_context(const LineContext& c, std::string_view buffer, size_t line_start) {
    context_values.clear();
    context_found.assign(c.rows.size(), false);
    size_t rows_left = c.rows.size();
    bool required_seen = !c.require;
    size_t cursor = line_start;
    for (size_t walked = 0; walked < c.lines && cursor > 0; ++walked) {
      size_t prev_end = cursor - 1;  // the '\n' ending the previous line
      const void* nl = prev_end == 0 ? nullptr : memrchr(buffer.data(), '\n', prev_end);
      size_t prev_start = nl == nullptr ? 0 : static_cast<const char*>(nl) - buffer.data() + 1;
      std::string_view prev(buffer.data() + prev_start, prev_end - prev_start);
      if (!prev.empty() && prev.back() == '\r') prev.remove_suffix(1);
      cursor = prev_start;
      if (c.require && RE2::PartialMatch(prev, *c.require->re)) {
        required_seen = true;
        break;
      }
      if (c.stop && RE2::PartialMatch(prev, *c.stop->re)) break;
      for (size_t r = 0; r < c.rows.size(); ++r) {
        if (context_found[r]) continue;
        const LineContext::Pattern& row = c.rows[r];
        size_t n = row.group_names.size();
        context_groups.assign(n, re2::StringPiece());
        if (!row.re->Match(prev, 0, prev.size(), RE2::UNANCHORED, context_groups.data(), static_cast<int>(n))) continue;
        context_found[r] = true;
        --rows_left;
        for (size_t i = 1; i < n; ++i) {
          if (row.group_names[i].empty() || context_groups[i].data() == nullptr) continue;
          context_values.emplace_back(&row.group_names[i], std::string(context_groups[i].data(), context_groups[i].size()));
        }
      }
      if (rows_left == 0 && required_seen) break;
    }
    return required_seen;
  }

  bool confirm_and_add(const Extractor& x, std::string_view line, uint64_t line_no,
                       const TextSource& src, int year, TimeNs time, bool time_inferred,
                       const detail::LinePrefix& prefix, Extraction& out, std::string_view buffer,
                       size_t line_start) {
    size_t ngroups = x.group_names.size();
    groups.assign(ngroups, re2::StringPiece());
    if (!detail::capture_match(*x.re, x.pcre.get(), pcre_matcher, line, groups.data(), ngroups)) return false;
    if (x.context) {
      if (!read_context(*x.context, buffer, line_start)) return false;
    } else {
      context_values.clear();
    }
    // Named captures that took part in the match, by group index (reused buffers).
    if (captures.size() < ngroups) captures.resize(ngroups);
    for (size_t i = 1; i < ngroups; ++i) {
      if (x.group_names[i].empty() || groups[i].data() == nullptr) continue;
      captures[i].assign(groups[i].data(), groups[i].size());
    }
    auto lookup = [&](const std::string& name) -> const std::string* {
      for (size_t i = 1; i < ngroups; ++i) {
        if (groups[i].data() != nullptr && x.group_names[i] == name) return &captures[i];
      }
      for (const auto& [cname, cvalue] : context_values) {
        if (*cname == name) return &cvalue;
      }
      return nullptr;
    };
    SymptomKey& key = key_scratch;
    if (!x.symptom.render(lookup, id_scratch)) return false;
    key.id = intern(id_scratch);
    std::string& value = value_scratch;
    // "localhost" in a line names the machine that wrote it: the source's node, as if unnamed.
    if (!x.node.empty() && x.node.render(lookup, value) && !detail::names_local_machine(value)) {
      key.node = intern(value);
    } else if (!src.node.empty()) {
      key.node = intern(src.node);
    } else {
      key.node = intern(detail::names_local_machine(prefix.host) ? std::string_view() : prefix.host);
    }
    key.rank = src.rank;
    if (prefix.rank != kNoRank) key.rank = prefix.rank;
    if (!x.rank.empty() && x.rank.render(lookup, value)) {
      // "none": the line is about other ranks than the one that printed it, and names no single one.
      if (value == "none") key.rank = kNoRank;
      int r = 0;
      bool digits = !value.empty() && value.size() < 8 &&
                    std::all_of(value.begin(), value.end(), [](char c) { return c >= '0' && c <= '9'; });
      if (digits) {
        for (char c : value) r = r * 10 + (c - '0');
        key.rank = r;
      }
    }
    if (!x.gpu.empty() && x.gpu.render(lookup, value)) {
      key.gpu = intern(detail::normalize_gpu(value));
    } else {
      key.gpu = intern(detail::normalize_gpu(src.gpu));
    }
    (void)year;
    const bool history = !out.in_window(time);
    if (history) {
      out.out_of_window++;
      // A GPU's own earlier faults (outside this job's window) are kept as its history, never as
      // causes: the same GPU faulting again is what tells a broken GPU from a broken program.
      if (!key.id.view().starts_with("gpu.xid.")) return true;
      id_scratch.insert(0, "history.");
      key.id = intern(id_scratch);
    }
    if (line.size() > 1024) out.lines_truncated++;
    // Where in the fabric the line points: part of whether it is a repeat (a new location is kept).
    Fields& fabric = fabric_scratch;
    fabric.clear();
    for (const auto& [fkey, tmpl] : x.fabric) {
      if (tmpl.render(lookup, value)) fabric.insert_or_assign(intern("_fabric." + fkey), value);
    }
    if (out.add_repeat(key, time, src.name, line_no, x.id, fabric)) return true;

    // Captures the extractor's `fields:` list leaves out are not made at all (they were made and
    // then erased below: a map node each, a third of all captures on a 16,384-rank timeout storm).
    const auto kept = [&](const std::string& name) {
      return x.fields.empty() || name[0] == '_' || std::find(x.fields.begin(), x.fields.end(), name) != x.fields.end();
    };
    const auto captured = [&](size_t i) {  // a named group that took part and the record keeps
      return !x.group_names[i].empty() && groups[i].data() != nullptr && kept(x.group_names[i]);
    };
    Fields fields;
    size_t nfields = (x.catalog ? 2 : 0) + fabric.size();
    for (size_t i = 1; i < ngroups; ++i) nfields += captured(i);
    for (const auto& cv : context_values) nfields += kept(*cv.first);
    fields.reserve(nfields);  // the record keeps this list: exactly its size, one allocation
    for (size_t i = 1; i < ngroups; ++i) {
      if (captured(i)) fields.emplace(group_name(x, i), captures[i]);
    }
    for (const auto& [cname, cvalue] : context_values) {  // the line's own capture of a name wins
      if (kept(*cname) && fields.find(*cname) == fields.end()) fields.emplace(intern(*cname), cvalue);
    }
    if (x.catalog) {
      std::string cat_key;
      if (x.catalog->key.render(lookup, cat_key)) {
        fields.insert_or_assign(intern("_catalog"), x.catalog->name);
        fields.insert_or_assign(intern("_catalog_key"), cat_key);
      }
    }
    fields.insert(fabric.begin(), fabric.end());
    if (!x.fields.empty()) {
      for (auto it = fields.begin(); it != fields.end();) {
        bool keep = it->first[0] == '_' ||
                    std::find(x.fields.begin(), x.fields.end(), it->first) != x.fields.end();
        it = keep ? std::next(it) : fields.erase(it);
      }
    }
    EvidenceLine ev;
    ev.t = time;
    ev.time_inferred = time_inferred;
    ev.kind = src.kind;
    ev.source = shared(source_name, src.name);
    ev.line = line_no;
    ev.node = key.node;
    ev.text = detail::clean_evidence_text(line);
    ev.rule = rule_id(x);
    ev.note = shared(note_text, src.note);
    out.add(key, time, std::move(fields), std::move(ev));
    return true;
  }

  // An error-like line no extractor matched. A line whose own time is outside the job's window is
  // left out (unstamped lines are kept: their time is not needed here).
  void add_unrecognized(std::string_view line, uint64_t line_no, const TextSource& src,
                        const detail::LinePrefix& prefix, TimeNs forced_time, Extraction& out) {
    TimeNs t = forced_time != kNoTime ? forced_time : prefix.t;
    if (t != kNoTime && !out.in_window(t)) return;
    unrecognized_key(line, prefix, unrecognized_key_buffer);
    if (unrecognized_key_buffer.empty()) return;
    out.add_unrecognized(unrecognized_key_buffer, line, src.name, line_no);
  }

  // The last stamped line that starts within kTimeLookBackBytes of the buffer's end, as the carry
  // for the next piece; or the old carry aged by this buffer when there is none.
  void update_carry(const TextSource& src, std::string_view buffer, uint64_t last_line_no, int year,
                    TimeCarry& carry) {
    size_t end = buffer.size();
    size_t cursor = end;
    uint64_t line_no = last_line_no;
    if (cursor > 0 && buffer[cursor - 1] == '\n') --cursor;  // the '\n' ending the last line
    while (true) {
      const void* nl = cursor == 0 ? nullptr : memrchr(buffer.data(), '\n', cursor);
      size_t start = nl == nullptr ? 0 : static_cast<const char*>(nl) - buffer.data() + 1;
      if (end - start > kTimeLookBackBytes) break;
      std::string_view line(buffer.data() + start, cursor - start);
      detail::LinePrefix pp = detail::parse_line_prefix(line.substr(0, 256), src, year);
      if (pp.t != kNoTime) {
        carry = {pp.t, line_no, end - start};
        return;
      }
      if (start == 0) break;
      cursor = start - 1;
      --line_no;
    }
    if (carry.t == kNoTime) return;
    if (carry.bytes_to_next + end > kTimeLookBackBytes) {
      carry = TimeCarry{};
    } else {
      carry.bytes_to_next += end;
    }
  }

  uint64_t scan(const TextSource& src, std::string_view buffer, size_t scan_from,
                uint64_t first_line, Extraction& out, TimeNs forced_time, TimeCarry* carry) {
    if (scan_from >= buffer.size()) return 0;
    uint64_t lines = scan_lines(src, buffer, scan_from, first_line, out, forced_time, carry);
    if (carry != nullptr && forced_time == kNoTime) {
      update_carry(src, buffer, first_line + lines - 1, src.default_year, *carry);
    }
    return lines;
  }

  uint64_t scan_lines(const TextSource& src, std::string_view buffer, size_t scan_from,
                      uint64_t first_line, Extraction& out, TimeNs forced_time, const TimeCarry* carry) {
    const char* data = buffer.data() + scan_from;
    size_t len = buffer.size() - scan_from;
    // Lines are counted once: up to each candidate while confirming, then the rest.
    const bool unterminated = data[len - 1] != '\n';
    auto account = [&](uint64_t newlines) {
      uint64_t lines = newlines + (unterminated ? 1 : 0);
      out.lines_scanned += lines;
      out.bytes_scanned += len;
      out.note_coverage(src.kind, src.node, lines, len);
      out.note_rank(src.rank);
      return lines;
    };
    const KindDatabase* db = rules->dbs[static_cast<size_t>(src.kind)].get();
    if (db == nullptr || scratch == nullptr) return account(count_newlines(data, len));

    candidates.clear();
    // Vectorscan takes an unsigned length: scan in slices below 2 GiB on line boundaries.
    size_t slice_from = 0;
    while (slice_from < len) {
      size_t slice_len = std::min<size_t>(len - slice_from, size_t{1} << 30);
      if (slice_from + slice_len < len) {
        const void* nl = memrchr(data + slice_from, '\n', slice_len);
        if (nl != nullptr) slice_len = static_cast<const char*>(nl) - (data + slice_from) + 1;
      }
      const char* slice = data + slice_from;
      size_t before = candidates.size();
      if (db->collapsed.db != nullptr) {
        // Runs of blanks cut to one (KindDatabase); candidates found there are moved back to the
        // original text's offsets below. Line starts and ends never fall inside a cut run.
        size_t cut = collapse_blank_runs(slice, slice_len, collapsed_text, collapse_shifts);
        const char* text = cut == 0 ? slice : collapsed_text.data();
        size_t text_len = slice_len - cut;
        MatchContext ctx{text, text_len, &db->collapsed, &candidates};
        if (cut != 0) ctx.shifts = &collapse_shifts;
        hs_scan(db->collapsed.db, text, static_cast<unsigned>(text_len), 0, scratch, on_match, &ctx);
        if (cut != 0) {
          // Candidates come in match order, which is nearly line order; look each offset up.
          auto to_original = [&](size_t offset) {
            auto it = std::upper_bound(collapse_shifts.begin(), collapse_shifts.end(), offset,
                                       [](size_t o, const std::pair<size_t, size_t>& s) { return o < s.first; });
            return it == collapse_shifts.begin() ? offset : offset + std::prev(it)->second;
          };
          for (size_t i = before; i < candidates.size(); ++i) {
            candidates[i].line_start = to_original(candidates[i].line_start);
            candidates[i].line_end = to_original(candidates[i].line_end);
          }
        }
      }
      if (db->exact.db != nullptr) {
        MatchContext ctx{slice, slice_len, &db->exact, &candidates};
        hs_scan(db->exact.db, slice, static_cast<unsigned>(slice_len), 0, scratch, on_match, &ctx);
      }
      for (size_t i = before; i < candidates.size(); ++i) {
        candidates[i].line_start += slice_from;
        candidates[i].line_end += slice_from;
      }
      slice_from += slice_len;
    }
    if (candidates.empty()) return account(count_newlines(data, len));

    const auto& xs = rules->extractors;
    auto precedence = [&](uint32_t x) {
      return x == kErrorWordCandidate ? std::numeric_limits<int>::min() : xs[x].precedence;
    };
    std::sort(candidates.begin(), candidates.end(), [&](const Candidate& a, const Candidate& b) {
      if (a.line_start != b.line_start) return a.line_start < b.line_start;
      int pa = precedence(a.extractor), pb = precedence(b.extractor);
      if (pa != pb) return pa > pb;
      return a.extractor < b.extractor;
    });
    candidates.erase(std::unique(candidates.begin(), candidates.end(),
                                 [](const Candidate& a, const Candidate& b) {
                                   return a.line_start == b.line_start && a.extractor == b.extractor;
                                 }),
                     candidates.end());

    int year = src.default_year;
    size_t prev_candidate_start = SIZE_MAX;
    TimeNs prev_candidate_time = kNoTime;
    uint64_t prev_candidate_time_line = 0;
    size_t prev_candidate_time_offset = 0;  // where the line its time came from starts (absolute)
    bool prev_candidate_time_carried = false;
    size_t counted_to = 0;
    uint64_t line_no = first_line;
    size_t i = 0;
    while (i < candidates.size()) {
      size_t start = candidates[i].line_start;
      size_t end = candidates[i].line_end;
      line_no += count_newlines(data + counted_to, start - counted_to);
      counted_to = start;
      std::string_view line(data + start, end - start);
      if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
      if (candidates[i].extractor == kErrorWordCandidate) {
        // Only error words on this line (they sort after every extractor): no time walk needed.
        add_unrecognized(line, line_no, src, detail::parse_line_prefix(line, src, year), forced_time, out);
        ++i;
        continue;
      }
      detail::LinePrefix prefix = detail::parse_line_prefix(line, src, year);
      TimeNs time = forced_time != kNoTime ? forced_time : prefix.t;
      bool inferred = false;
      uint64_t stamped_line = line_no;  // the line the time comes from
      size_t abs_start = scan_from + start;
      size_t stamped_offset = abs_start;
      bool carried = false;
      if (time == kNoTime) {
        // Walk back over earlier lines (into the caller's look-back context too) to a stamped line
        // that starts at most kTimeLookBackBytes before this one. Stop at the previous candidate
        // line: its own time, or what its walk found, is the answer from there on (a traceback of
        // many candidate lines is walked once).
        // Bytes from a stamped line's start to this line's: in the buffer, or through the carry.
        auto distance = [&](size_t offset, bool through_carry) -> uint64_t {
          return through_carry ? carry->bytes_to_next + abs_start : abs_start - offset;
        };
        size_t cursor = abs_start;
        uint64_t back_line = line_no;
        while (cursor > 0) {
          size_t prev_end = cursor - 1;  // the '\n' ending the previous line
          const void* nl = prev_end == 0 ? nullptr : memrchr(buffer.data(), '\n', prev_end);
          size_t prev_start = nl == nullptr ? 0 : static_cast<const char*>(nl) - buffer.data() + 1;
          if (abs_start - prev_start > kTimeLookBackBytes) break;
          --back_line;
          if (prev_start == prev_candidate_start) {
            if (prev_candidate_time != kNoTime &&
                distance(prev_candidate_time_offset, prev_candidate_time_carried) <= kTimeLookBackBytes) {
              time = prev_candidate_time;
              inferred = true;
              stamped_line = prev_candidate_time_line;
              stamped_offset = prev_candidate_time_offset;
              carried = prev_candidate_time_carried;
            }
            break;
          }
          std::string_view prev(buffer.data() + prev_start, prev_end - prev_start);
          detail::LinePrefix pp = detail::parse_line_prefix(prev.substr(0, 256), src, year);
          if (pp.t != kNoTime) {
            time = pp.t;
            inferred = true;
            stamped_line = back_line;
            stamped_offset = prev_start;
            break;
          }
          cursor = prev_start;
        }
        // Reached the start of the buffer: the carry from the previous piece, if near enough.
        if (time == kNoTime && cursor == 0 && carry != nullptr && carry->t != kNoTime &&
            distance(0, true) <= kTimeLookBackBytes) {
          time = carry->t;
          inferred = true;
          stamped_line = carry->line;
          carried = true;
        }
      }
      // Remember this line for the next candidate's walk: the time that applies at it, and where
      // the stamped line it came from is.
      prev_candidate_start = abs_start;
      prev_candidate_time = time;
      prev_candidate_time_line = stamped_line;
      prev_candidate_time_offset = stamped_offset;
      prev_candidate_time_carried = carried;
      size_t j = i;
      bool matched = false, error_word = false;
      // A line counts as a candidate when some pattern matched it in the scan; a hit on one of a
      // pattern's required literals alone (Extractor::scan_atoms) or on a rule's `scan:` superset
      // (Extractor::scan_superset) only when the pattern confirms.
      bool pattern_hit = false;
      while (j < candidates.size() && candidates[j].line_start == start) {
        if (candidates[j].extractor == kErrorWordCandidate) {
          error_word = true;
        } else {
          const Extractor& x = xs[candidates[j].extractor];
          pattern_hit = pattern_hit || (x.collapse_safe ? !x.scan_superset : x.scan_atoms.empty());
          if (!matched) {
            matched = confirm_and_add(x, line, line_no, src, year, time, inferred, prefix, out, buffer, abs_start);
          }
        }
        ++j;
      }
      if (pattern_hit || matched) out.candidate_lines++;
      if (error_word && !matched) add_unrecognized(line, line_no, src, prefix, forced_time, out);
      i = j;
    }
    return account(line_no - first_line + count_newlines(data + counted_to, len - counted_to));
  }
};

Scanner::Scanner(std::shared_ptr<const RuleSet> rules) : impl_(std::make_unique<Impl>(std::move(rules))) {}
Scanner::~Scanner() = default;

uint64_t Scanner::scan(const TextSource& source, std::string_view buffer, size_t scan_from,
                       uint64_t first_line, Extraction& out, TimeCarry* carry) {
  return impl_->scan(source, buffer, scan_from, first_line, out, kNoTime, carry);
}

void Scanner::scan_observation(const Observation& obs, int default_year, Extraction& out) {
  if (obs.metric) {
    const MetricSample& m = *obs.metric;
    out.lines_scanned++;
    out.note_coverage(ObservationKind::kNodeMetrics, obs.node, 1, 0);
    std::map<std::string, std::string> vars;
    vars["value"] = format_value(m.value);
    for (const auto& [k, v] : m.labels) vars["label." + k] = v;
    auto lookup = [&](const std::string& name) -> const std::string* {
      auto it = vars.find(name);
      return it == vars.end() ? nullptr : &it->second;
    };
    for (const auto& x : impl_->rules->metric_extractors) {
      if (x.metric != m.name) continue;
      double v = m.value, th = x.threshold;
      bool pass = x.op == ">" ? v > th : x.op == ">=" ? v >= th : x.op == "<" ? v < th
                : x.op == "<=" ? v <= th : x.op == "==" ? v == th : v != th;
      if (!pass) continue;
      SymptomKey key;
      std::string value;
      if (!x.symptom.render(lookup, value)) continue;
      key.id = value;
      if (!x.node.empty() && x.node.render(lookup, value)) key.node = value;
      for (const auto& fb : x.node_fallback) {
        if (!key.node.empty()) break;
        if (fb.render(lookup, value)) key.node = value;
      }
      if (!obs.node.empty()) key.node = obs.node;  // the collector knows the node best
      key.rank = obs.rank;
      if (!x.gpu.empty() && x.gpu.render(lookup, value)) key.gpu = detail::normalize_gpu(value);
      Fields fields(vars);
      for (const auto& [fkey, tmpl] : x.fabric) {
        if (tmpl.render(lookup, value)) fields["_fabric." + fkey] = value;
      }
      if (x.catalog) {
        std::string cat_key;
        if (x.catalog->key.render(lookup, cat_key)) {
          fields["_catalog"] = x.catalog->name;
          fields["_catalog_key"] = cat_key;
        }
      }
      TimeNs t = m.t != kNoTime ? m.t : obs.observed_at;
      if (!out.in_window(t)) {
        out.out_of_window++;
        continue;
      }
      std::string text = m.name + "{";
      bool first = true;
      for (const auto& [lk, lv] : m.labels) {
        text += fmt::format("{}{}=\"{}\"", first ? "" : ",", lk, lv);
        first = false;
      }
      text += "} " + vars["value"];
      EvidenceLine ev;
      ev.t = t;
      ev.kind = ObservationKind::kNodeMetrics;
      ev.source = obs.source.source;
      ev.line = obs.source.line;
      ev.node = key.node;
      ev.text = detail::clean_evidence_text(text);
      ev.rule = x.id;
      out.add(key, t, std::move(fields), std::move(ev));
    }
    return;
  }
  TextSource src;
  src.name = obs.source.source;
  src.kind = obs.kind == ObservationKind::kNodeMetrics ? ObservationKind::kAppLog : obs.kind;
  src.node = obs.node;
  src.rank = obs.rank;
  src.gpu = obs.gpu;
  src.default_year = default_year;
  src.boot_time = obs.boot_time;
  src.utc_offset_s = obs.utc_offset_s;
  src.note = obs.note;
  impl_->scan(src, obs.text, 0, obs.source.line == 0 ? 1 : obs.source.line, out, obs.observed_at, nullptr);
}

}  // namespace attribution
