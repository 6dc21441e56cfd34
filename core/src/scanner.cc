// Extraction hot path: one Vectorscan pass over the whole buffer per observation kind; RE2 runs
// only on candidate lines to confirm and take captures. No per-line loop over patterns and no
// per-line allocation for lines without a match.
#include <fmt/format.h>

#include <algorithm>
#include <cstring>

#include "attribution/engine.h"
#include "attribution/text.h"
#include "line_prefix.h"
#include "rule_set.h"
#include "text_util.h"

namespace attribution {
namespace {

struct Candidate {
  size_t line_start;
  size_t line_end;
  uint32_t extractor;
};

struct MatchContext {
  const char* data;
  size_t len;
  const KindDatabase* db;
  std::vector<Candidate>* out;
  size_t cur_start = 1;  // empty range: no current line
  size_t cur_end = 0;
};

int on_match(unsigned int id, unsigned long long /*from*/, unsigned long long to,
             unsigned int /*flags*/, void* ctx_ptr) {
  auto* ctx = static_cast<MatchContext*>(ctx_ptr);
  if (to == 0) return 0;
  uint32_t extractor = ctx->db->extractors[id];
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
  std::vector<re2::StringPiece> groups;
  std::vector<const re2::RE2::Arg*> arg_ptrs;

  explicit Impl(std::shared_ptr<const RuleSet> r) : rules(std::move(r)) {
    if (rules->scratch_prototype != nullptr) hs_clone_scratch(rules->scratch_prototype, &scratch);
  }
  ~Impl() {
    if (scratch != nullptr) hs_free_scratch(scratch);
  }

  // Confirms extractor x on `line` and, when it matches, adds the symptom. Returns true on match.
  bool confirm_and_add(const Extractor& x, std::string_view line, uint64_t line_no,
                       const TextSource& src, int year, TimeNs time, bool time_inferred,
                       const detail::LinePrefix& prefix, Extraction& out) {
    size_t ngroups = x.group_names.size();
    groups.assign(ngroups, re2::StringPiece());
    if (!x.re->Match(re2::StringPiece(line.data(), line.size()), 0, line.size(), RE2::UNANCHORED,
                     groups.data(), static_cast<int>(ngroups))) {
      return false;
    }
    std::map<std::string, std::string> fields;
    for (size_t i = 1; i < ngroups; ++i) {
      if (x.group_names[i].empty() || groups[i].data() == nullptr) continue;
      if (!x.fields.empty() &&
          std::find(x.fields.begin(), x.fields.end(), x.group_names[i]) == x.fields.end()) {
        // Not kept, but still available to templates below.
      }
      fields.emplace(x.group_names[i], std::string(groups[i].data(), groups[i].size()));
    }
    auto lookup = [&](const std::string& name) -> const std::string* {
      auto it = fields.find(name);
      return it == fields.end() ? nullptr : &it->second;
    };
    SymptomKey key;
    if (!x.symptom.render(lookup, key.id)) return false;
    std::string value;
    if (!x.node.empty() && x.node.render(lookup, value)) {
      key.node = value;
    } else if (!src.node.empty()) {
      key.node = src.node;
    } else {
      key.node = std::string(prefix.host);
    }
    key.rank = src.rank;
    if (prefix.rank != kNoRank) key.rank = prefix.rank;
    if (!x.rank.empty() && x.rank.render(lookup, value)) {
      int r = 0;
      bool digits = !value.empty() && value.size() < 8 &&
                    std::all_of(value.begin(), value.end(), [](char c) { return c >= '0' && c <= '9'; });
      if (digits) {
        for (char c : value) r = r * 10 + (c - '0');
        key.rank = r;
      }
    }
    if (!x.gpu.empty() && x.gpu.render(lookup, value)) {
      key.gpu = detail::normalize_gpu(value);
    } else {
      key.gpu = detail::normalize_gpu(src.gpu);
    }
    if (x.catalog) {
      std::string cat_key;
      if (x.catalog->key.render(lookup, cat_key)) {
        fields["_catalog"] = x.catalog->name;
        fields["_catalog_key"] = cat_key;
      }
    }
    if (!x.fields.empty()) {
      for (auto it = fields.begin(); it != fields.end();) {
        bool keep = it->first[0] == '_' ||
                    std::find(x.fields.begin(), x.fields.end(), it->first) != x.fields.end();
        it = keep ? std::next(it) : fields.erase(it);
      }
    }
    (void)year;
    if (!out.in_window(time)) {
      out.out_of_window++;
      return true;
    }
    EvidenceLine ev;
    ev.t = time;
    ev.time_inferred = time_inferred;
    ev.kind = src.kind;
    ev.source = src.name;
    ev.line = line_no;
    ev.node = key.node;
    ev.text = detail::clean_evidence_text(line);
    if (line.size() > 1024) out.lines_truncated++;
    ev.rule = x.id;
    ev.note = src.note;
    out.add(key, time, std::move(fields), std::move(ev));
    return true;
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
    if (db == nullptr || db->db == nullptr || scratch == nullptr) return account(count_newlines(data, len));

    candidates.clear();
    // Vectorscan takes an unsigned length: scan in slices below 2 GiB on line boundaries.
    size_t slice_from = 0;
    while (slice_from < len) {
      size_t slice_len = std::min<size_t>(len - slice_from, size_t{1} << 30);
      if (slice_from + slice_len < len) {
        const void* nl = memrchr(data + slice_from, '\n', slice_len);
        if (nl != nullptr) slice_len = static_cast<const char*>(nl) - (data + slice_from) + 1;
      }
      MatchContext ctx{data + slice_from, slice_len, db, &candidates};
      size_t before = candidates.size();
      hs_scan(db->db, data + slice_from, static_cast<unsigned>(slice_len), 0, scratch, on_match, &ctx);
      for (size_t i = before; i < candidates.size(); ++i) {
        candidates[i].line_start += slice_from;
        candidates[i].line_end += slice_from;
      }
      slice_from += slice_len;
    }
    if (candidates.empty()) return account(count_newlines(data, len));

    const auto& xs = rules->extractors;
    std::sort(candidates.begin(), candidates.end(), [&](const Candidate& a, const Candidate& b) {
      if (a.line_start != b.line_start) return a.line_start < b.line_start;
      if (xs[a.extractor].precedence != xs[b.extractor].precedence)
        return xs[a.extractor].precedence > xs[b.extractor].precedence;
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
      out.candidate_lines++;
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
      bool matched = false;
      while (j < candidates.size() && candidates[j].line_start == start) {
        if (!matched) {
          matched = confirm_and_add(xs[candidates[j].extractor], line, line_no, src, year, time,
                                    inferred, prefix, out);
        }
        ++j;
      }
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
      if (!x.symptom.render(lookup, key.id)) continue;
      std::string value;
      if (!x.node.empty() && x.node.render(lookup, value)) key.node = value;
      for (const auto& fb : x.node_fallback) {
        if (!key.node.empty()) break;
        if (fb.render(lookup, value)) key.node = value;
      }
      if (!obs.node.empty()) key.node = obs.node;  // the collector knows the node best
      key.rank = obs.rank;
      if (!x.gpu.empty() && x.gpu.render(lookup, value)) key.gpu = detail::normalize_gpu(value);
      std::map<std::string, std::string> fields = vars;
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
