#include <algorithm>
#include <tuple>

#include "attribution/engine.h"
#include "text_util.h"

namespace attribution {
namespace {

bool evidence_before(const EvidenceLine& a, const EvidenceLine& b) {
  TimeNs ta = a.t == kNoTime ? std::numeric_limits<TimeNs>::max() : a.t;
  TimeNs tb = b.t == kNoTime ? std::numeric_limits<TimeNs>::max() : b.t;
  return std::tie(ta, a.source, a.line, a.rule) < std::tie(tb, b.source, b.line, b.rule);
}

TimeNs min_time(TimeNs a, TimeNs b) {
  if (a == kNoTime) return b;
  if (b == kNoTime) return a;
  return std::min(a, b);
}
TimeNs max_time(TimeNs a, TimeNs b) {
  if (a == kNoTime) return b;
  if (b == kNoTime) return a;
  return std::max(a, b);
}

uint64_t fnv1a(std::string_view s) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

// Keeps the `cap` smallest values of a sorted vector after inserting `v`.
template <class T, class V>
void insert_capped(std::vector<T>& sorted, const V& v, size_t cap) {
  auto pos = std::lower_bound(sorted.begin(), sorted.end(), v);
  if (pos != sorted.end() && *pos == v) return;
  if (sorted.size() >= cap && pos == sorted.end()) return;
  sorted.insert(pos, T(v));
  if (sorted.size() > cap) sorted.pop_back();
}

template <class T>
void merge_capped(std::vector<T>& into, const std::vector<T>& from, size_t cap) {
  if (from.size() <= 4) {  // the common case (one source merged into many): no new vector
    for (const T& v : from) insert_capped(into, v, cap);
    return;
  }
  std::vector<T> merged;
  merged.reserve(std::min(into.size() + from.size(), cap));
  std::set_union(into.begin(), into.end(), from.begin(), from.end(), std::back_inserter(merged));
  if (merged.size() > cap) merged.resize(cap);
  into = std::move(merged);
}

constexpr size_t kUnrecognizedTextBytes = 256;
constexpr std::string_view kFabricPrefix = "_fabric.";

bool location_before(const FabricLocation& a, const Fields& b) { return a.fields < b; }

// Adds one occurrence (or `n` of them, first line `first`) at `fabric` to the sorted, capped
// location list. Keeping the smallest locations by fields makes the kept set and every kept count
// exact under any split and merge order.
void add_location(std::vector<FabricLocation>& locations, const Fields& fabric,
                  uint64_t n, const EvidenceLine& first) {
  auto pos = std::lower_bound(locations.begin(), locations.end(), fabric, location_before);
  if (pos != locations.end() && pos->fields == fabric) {
    pos->count += n;
    if (evidence_before(first, pos->first)) pos->first = first;
    return;
  }
  if (locations.size() >= kMaxFabricLocationsPerSymptom && pos == locations.end()) return;
  locations.insert(pos, FabricLocation{fabric, n, first});
  if (locations.size() > kMaxFabricLocationsPerSymptom) locations.pop_back();
}

// The `_fabric.*` subset of an occurrence's fields.
Fields fabric_fields(const Fields& fields) {
  Fields out;
  for (auto f = fields.lower_bound(kFabricPrefix);
       f != fields.end() && f->first.compare(0, kFabricPrefix.size(), kFabricPrefix) == 0; ++f)
    out.insert(*f);
  return out;
}

}  // namespace

void Extraction::add_unrecognized(std::string_view key, std::string_view line, const std::string& source,
                                  uint64_t line_no) {
  unrecognized_lines++;
  auto it = unrecognized_.find(key);
  if (it == unrecognized_.end()) {
    it = unrecognized_.emplace(std::string(key), UnrecognizedLine{}).first;
    UnrecognizedLine& u = it->second;
    u.count = 1;
    u.text = detail::clean_evidence_text(line, kUnrecognizedTextBytes);
    u.source = source;
    u.line = line_no;
    u.sources.push_back(source);
    u.source_hashes.push_back(fnv1a(source));
    if (unrecognized_.size() > 2 * kMaxUnrecognizedKeys) prune_unrecognized();
    return;
  }
  UnrecognizedLine& u = it->second;
  u.count++;
  if (std::tie(source, line_no) < std::tie(u.source, u.line)) {
    u.text = detail::clean_evidence_text(line, kUnrecognizedTextBytes);
    u.source = source;
    u.line = line_no;
  }
  if (u.sources.back() != source) {  // the common case: the same source again
    insert_capped(u.sources, source, kMaxUnrecognizedSourceNames);
    insert_capped(u.source_hashes, fnv1a(source), kMaxUnrecognizedSourceHashes);
  }
}

void Extraction::prune_unrecognized() {
  if (unrecognized_.size() <= 2 * kMaxUnrecognizedKeys) return;
  std::vector<std::pair<uint64_t, const std::string*>> order;
  order.reserve(unrecognized_.size());
  for (const auto& [k, u] : unrecognized_) order.emplace_back(u.count, &k);
  // Keep the most frequent, then the smallest key.
  std::nth_element(order.begin(), order.begin() + kMaxUnrecognizedKeys, order.end(), [](const auto& a, const auto& b) {
    return a.first != b.first ? a.first > b.first : *a.second < *b.second;
  });
  std::vector<std::string> drop;
  for (size_t i = kMaxUnrecognizedKeys; i < order.size(); ++i) drop.push_back(*order[i].second);
  for (const auto& k : drop) {
    auto it = unrecognized_.find(k);
    unrecognized_dropped += it->second.count;
    unrecognized_.erase(it);
  }
}

void Extraction::add(const SymptomKey& key, TimeNs t, Fields&& fields,
                     EvidenceLine&& evidence) {
  SymptomRecord& rec = symptoms_[key];
  if (Fields fabric = fabric_fields(fields); !fabric.empty())
    add_location(rec.locations, fabric, 1, evidence);
  if (rec.count == 0) {
    rec.first_seen = rec.last_seen = t;
    rec.fields = std::move(fields);
    rec.evidence.push_back(std::move(evidence));
    rec.count = 1;
    return;
  }
  rec.count++;
  rec.first_seen = min_time(rec.first_seen, t);
  rec.last_seen = max_time(rec.last_seen, t);
  auto pos = std::upper_bound(rec.evidence.begin(), rec.evidence.end(), evidence, evidence_before);
  if (pos == rec.evidence.begin()) rec.fields = std::move(fields);
  if (size_t at = static_cast<size_t>(pos - rec.evidence.begin()); at < kMaxEvidencePerSymptom) {
    // The vector holds exactly its lines: it grows one at a time up to the cap, and at the cap the
    // last line makes room first (the default doubling kept unused slots, 112k records of them).
    if (rec.evidence.size() >= kMaxEvidencePerSymptom) {
      rec.evidence.pop_back();
    } else if (rec.evidence.size() == rec.evidence.capacity()) {
      rec.evidence.reserve(rec.evidence.size() + 1);
    }
    rec.evidence.insert(rec.evidence.begin() + static_cast<std::ptrdiff_t>(at), std::move(evidence));
  }
}

bool Extraction::add_repeat(const SymptomKey& key, TimeNs t, const std::string& source, uint64_t line,
                            const std::string& rule, const Fields& fabric) {
  auto it = symptoms_.find(key);
  if (it == symptoms_.end()) return false;
  SymptomRecord& rec = it->second;
  if (rec.evidence.size() < kMaxEvidencePerSymptom) return false;
  // evidence_before(new line, last kept line): the new line would be kept.
  const EvidenceLine& last = rec.evidence.back();
  TimeNs tn = t == kNoTime ? std::numeric_limits<TimeNs>::max() : t;
  TimeNs tl = last.t == kNoTime ? std::numeric_limits<TimeNs>::max() : last.t;
  if (std::tie(tn, source, line, rule) < std::tie(tl, last.source, last.line, last.rule)) return false;
  FabricLocation* at = nullptr;
  if (!fabric.empty()) {
    auto pos = std::lower_bound(rec.locations.begin(), rec.locations.end(), fabric, location_before);
    if (pos != rec.locations.end() && pos->fields == fabric) {
      const EvidenceLine& f = pos->first;
      TimeNs tf = f.t == kNoTime ? std::numeric_limits<TimeNs>::max() : f.t;
      if (std::tie(tn, source, line, rule) < std::tie(tf, f.source, f.line, f.rule)) return false;
      at = &*pos;
    } else if (rec.locations.size() < kMaxFabricLocationsPerSymptom || pos != rec.locations.end()) {
      return false;  // a new location that is kept
    }
  }
  if (at != nullptr) at->count++;
  rec.count++;
  rec.first_seen = min_time(rec.first_seen, t);
  rec.last_seen = max_time(rec.last_seen, t);
  return true;
}

void Extraction::combine(SymptomRecord& rec, SymptomRecord&& src) {
  bool other_first = !src.evidence.empty() &&
                     (rec.evidence.empty() || evidence_before(src.evidence.front(), rec.evidence.front()));
  if (other_first) rec.fields = std::move(src.fields);
  rec.count += src.count;
  rec.first_seen = min_time(rec.first_seen, src.first_seen);
  rec.last_seen = max_time(rec.last_seen, src.last_seen);
  std::vector<EvidenceLine> merged;
  merged.reserve(std::min(rec.evidence.size() + src.evidence.size(), kMaxEvidencePerSymptom));
  auto a = rec.evidence.begin(), ae = rec.evidence.end();
  auto b = src.evidence.begin(), be = src.evidence.end();
  // std::merge order (ties take rec's line first), stopping at the cap.
  while (merged.size() < kMaxEvidencePerSymptom && (a != ae || b != be)) {
    if (b != be && (a == ae || evidence_before(*b, *a))) {
      merged.push_back(std::move(*b++));
    } else {
      merged.push_back(std::move(*a++));
    }
  }
  rec.evidence = std::move(merged);
  if (rec.locations.empty()) {
    rec.locations = std::move(src.locations);
  } else {
    for (const FabricLocation& l : src.locations) add_location(rec.locations, l.fields, l.count, l.first);
  }
}

void Extraction::combine(UnrecognizedLine& u, const UnrecognizedLine& src) {
  u.count += src.count;
  if (std::tie(src.source, src.line) < std::tie(u.source, u.line)) {
    u.text = src.text;
    u.source = src.source;
    u.line = src.line;
  }
  merge_capped(u.sources, src.sources, kMaxUnrecognizedSourceNames);
  merge_capped(u.source_hashes, src.source_hashes, kMaxUnrecognizedSourceHashes);
}

void Extraction::add_totals(const Extraction& other) {
  unrecognized_lines += other.unrecognized_lines;
  unrecognized_dropped += other.unrecognized_dropped;
  prune_unrecognized();
  for (const auto& [k, v] : other.coverage_) coverage_[k] += v;
  ranks_seen_.insert(other.ranks_seen_.begin(), other.ranks_seen_.end());
  lines_scanned += other.lines_scanned;
  bytes_scanned += other.bytes_scanned;
  candidate_lines += other.candidate_lines;
  lines_truncated += other.lines_truncated;
  out_of_window += other.out_of_window;
}

void Extraction::merge(const Extraction& other) {
  for (const auto& [key, src] : other.symptoms_) {
    auto [it, inserted] = symptoms_.try_emplace(key, src);
    if (inserted) continue;
    combine(it->second, SymptomRecord(src));
  }
  for (const auto& [key, src] : other.unrecognized_) {
    auto [it, inserted] = unrecognized_.try_emplace(key, src);
    if (inserted) continue;
    combine(it->second, src);
  }
  add_totals(other);
}

void Extraction::merge(Extraction&& other) {
  // Into an empty aggregate (the session taking a scan's whole result) the trees are swapped: the
  // same records, without re-inserting each node (112k inserts of a 16,384-rank job: 2 % of its
  // instructions).
  if (symptoms_.empty()) symptoms_.swap(other.symptoms_);
  if (unrecognized_.empty()) unrecognized_.swap(other.unrecognized_);
  // Records under new keys move over as tree nodes (no copies, no allocation); the keys both
  // sides hold stay in `other` and are combined as in merge(const Extraction&).
  symptoms_.merge(other.symptoms_);
  for (auto& [key, src] : other.symptoms_) combine(symptoms_.find(key)->second, std::move(src));
  unrecognized_.merge(other.unrecognized_);
  for (const auto& [key, src] : other.unrecognized_) combine(unrecognized_.find(key)->second, src);
  add_totals(other);
}

void Extraction::offset_lines(uint64_t delta) {
  if (delta == 0) return;
  for (auto& [key, rec] : symptoms_) {
    for (auto& e : rec.evidence) e.line += delta;
    for (auto& l : rec.locations) l.first.line += delta;
  }
  for (auto& [key, u] : unrecognized_) u.line += delta;
}

void Extraction::note_coverage(ObservationKind kind, const std::string& node, uint64_t lines,
                               uint64_t bytes) {
  coverage_[{static_cast<int>(kind), node}] += lines;
  (void)bytes;
}

}  // namespace attribution

namespace attribution::detail {

std::string clean_evidence_text(std::string_view s, size_t max_bytes) {
  std::string out;
  out.reserve(std::min(s.size(), max_bytes) + 8);
  size_t i = 0;
  while (i < s.size() && out.size() < max_bytes) {
    // A run of printable ASCII is copied as it is, in one append (nearly every line is one run;
    // byte by byte this was 7 % of a 16,384-rank run's instructions).
    size_t run = i;
    const size_t run_limit = std::min(s.size(), i + (max_bytes - out.size()));
    while (run < run_limit && static_cast<unsigned char>(s[run]) >= 0x20 && static_cast<unsigned char>(s[run]) < 0x7f)
      ++run;
    if (run > i) {
      out.append(s.data() + i, run - i);
      i = run;
      continue;
    }
    unsigned char c = static_cast<unsigned char>(s[i]);
    if (c == 0x1b && i + 1 < s.size() && s[i + 1] == '[') {  // ANSI CSI
      size_t q = i + 2;
      while (q < s.size() && !(s[q] >= '@' && s[q] <= '~')) ++q;
      i = q + 1;
      continue;
    }
    if (c < 0x80) {
      if (c == '\t') out += ' ';
      else if (c >= 0x20 && c != 0x7f) out += static_cast<char>(c);
      ++i;
      continue;
    }
    size_t len = (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3 : (c & 0xF8) == 0xF0 ? 4 : 0;
    bool valid = len > 0 && i + len <= s.size();
    for (size_t k = 1; valid && k < len; ++k) {
      valid = (static_cast<unsigned char>(s[i + k]) & 0xC0) == 0x80;
    }
    if (valid) {
      uint32_t cp = len == 2 ? (c & 0x1F) : len == 3 ? (c & 0x0F) : (c & 0x07);
      for (size_t k = 1; k < len; ++k) cp = (cp << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3F);
      bool overlong = (len == 2 && cp < 0x80) || (len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000);
      valid = !overlong && cp <= 0x10FFFF && !(cp >= 0xD800 && cp <= 0xDFFF);
    }
    if (valid) {
      out.append(s.substr(i, len));
      i += len;
    } else {
      out += "\xEF\xBF\xBD";
      ++i;
    }
  }
  while (!out.empty() && out.back() == ' ') out.pop_back();
  return out;
}

}  // namespace attribution::detail
