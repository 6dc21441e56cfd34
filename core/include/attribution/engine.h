// The attribution engine: extraction (Scanner), aggregation (Extraction) and attribution
// (Session::attribute → Verdict). Pure functions of (rules, context, observations); no I/O,
// clocks, threads or logging.
//
// Flow: text → Scanner::scan → Extraction (mergeable symptom aggregate) → Session::merge →
// Session::attribute() → Verdict (canonical JSON, SPEC §6).
//
// Determinism: the aggregate keeps, per (symptom, node, rank, GPU), the count, first/last time and
// the earliest few evidence lines ordered by (time, source, line). Merging is commutative and
// associative, so any split of the input across threads, chunks or ingest calls gives the same
// verdict bytes.
#pragma once

#include <atomic>
#include <compare>
#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "attribution/fields.h"
#include "attribution/shared_string.h"
#include "attribution/model.h"
#include "attribution/rules.h"

namespace attribution {

// One evidence line kept for a symptom.
struct EvidenceLine {
  TimeNs t = kNoTime;
  bool time_inferred = false;  // time taken from a neighbouring line or the context end
  ObservationKind kind = ObservationKind::kAppLog;
  SharedString source;
  uint64_t line = 0;
  SharedString node;
  std::string text;   // the line, truncated to 1,024 bytes, invalid UTF-8 replaced
  SharedString rule;  // extractor id
  SharedString note;  // the source's note, if any
};

// A symptom's identity. The strings are shared: every record and every item of one (rule, node)
// holds the same copies (a 16,384-rank job keeps about 110k records).
struct SymptomKey {
  SharedString id;
  SharedString node;
  int rank = kNoRank;
  SharedString gpu;
  auto operator<=>(const SymptomKey&) const = default;
};

// One distinct place in the fabric a symptom's lines point at: the `_fabric.*` fields of an
// extractor's `fabric:` block (docs/fabric.md §2), with how many lines named it and the earliest.
// A node report listing several switch ports, or completion errors towards several peers, keeps
// each one instead of only the earliest line's.
struct FabricLocation {
  Fields fields;  // `_fabric.*` captures, prefix included
  uint64_t count = 0;
  EvidenceLine first;  // the earliest line (by time, source, line, rule) that named it
};

struct SymptomRecord {
  TimeNs first_seen = kNoTime;
  TimeNs last_seen = kNoTime;
  uint64_t count = 0;
  Fields fields;  // captures of the earliest occurrence
  std::vector<EvidenceLine> evidence;         // earliest first, at most kMaxEvidencePerSymptom
  // Distinct fabric locations, ordered by their fields; at most kMaxFabricLocationsPerSymptom, the
  // smallest by fields (so the kept set and each count do not depend on how input was split).
  std::vector<FabricLocation> locations;
};
inline constexpr size_t kMaxEvidencePerSymptom = 3;
inline constexpr size_t kMaxFabricLocationsPerSymptom = 16;

// Error-like lines (error, failed, fatal, exception, Traceback, timeout, killed, segfault, NCCL
// WARN, ...) that no extractor matched, aggregated by a normalised key: the line without its
// time/host/launcher prefix, digits and hex runs masked, whitespace collapsed. They tell a user
// what to write a rule for (the verdict's `unrecognized` section).
struct UnrecognizedLine {
  uint64_t count = 0;
  std::string text;    // the first occurrence (by source, line), cleaned, truncated to 256 bytes
  std::string source;  // where the first occurrence is
  uint64_t line = 0;
  std::vector<std::string> sources;  // the kMaxUnrecognizedSourceNames smallest source names, sorted
  std::vector<uint64_t> source_hashes;  // sorted hashes of distinct sources (the smallest kMaxUnrecognizedSourceHashes)
};
inline constexpr size_t kMaxUnrecognizedKeys = 256;  // kept per extraction (pruned from twice this)
inline constexpr size_t kMaxUnrecognizedSourceNames = 8;
inline constexpr size_t kMaxUnrecognizedSourceHashes = 4096;

// The symptom aggregate produced by extraction. Mergeable; memory grows with the number of
// distinct (symptom, node, rank, GPU) keys, not with input size.
// Thread-safety: not thread-safe; use one per thread and merge.
class Extraction {
 public:
  void add(const SymptomKey& key, TimeNs t, Fields&& fields,
           EvidenceLine&& evidence);
  // add() for an occurrence whose evidence line would not be kept: when `key` already holds
  // kMaxEvidencePerSymptom evidence lines that all sort before (t, source, line, rule), counts it
  // (count, first and last seen) exactly as add() would and returns true. Otherwise changes
  // nothing and returns false: call add() with the fields and the evidence line.
  // `fabric` is the occurrence's `_fabric.*` fields (empty when its extractor records no location);
  // an occurrence that would add a fabric location or move one's earliest line is not a repeat.
  bool add_repeat(const SymptomKey& key, TimeNs t, const std::string& source, uint64_t line,
                  const std::string& rule,
                  const Fields& fabric = {});
  void merge(const Extraction& other);
  // The same result as merge(other); moves other's records instead of copying them (other is left
  // valid but unspecified).
  void merge(Extraction&& other);
  void note_coverage(ObservationKind kind, const std::string& node, uint64_t lines,
                     uint64_t bytes);
  // Adds `delta` to every evidence line number (for a byte range scanned with first_line = 1
  // before the lines of the earlier ranges of its file were counted).
  void offset_lines(uint64_t delta);
  void note_rank(int rank) { if (rank != kNoRank) ranks_seen_.insert(rank); }
  // Lines whose time falls outside [lo, hi] are counted in out_of_window and not added.
  void set_window(TimeNs lo, TimeNs hi) { window_lo_ = lo; window_hi_ = hi; }
  bool in_window(TimeNs t) const {
    return t == kNoTime || ((window_lo_ == kNoTime || t >= window_lo_) &&
                            (window_hi_ == kNoTime || t <= window_hi_));
  }

  // An error-like line no extractor matched; `key` is its normalised form.
  void add_unrecognized(std::string_view key, std::string_view line, const std::string& source, uint64_t line_no);

  const std::map<SymptomKey, SymptomRecord>& symptoms() const { return symptoms_; }
  // By normalised key. At most 2 x kMaxUnrecognizedKeys keys: beyond that the least frequent
  // (count, then key) are dropped down to kMaxUnrecognizedKeys. Exact and independent of how the
  // input was split as long as nothing was dropped (unrecognized_dropped == 0).
  const std::map<std::string, UnrecognizedLine, std::less<>>& unrecognized() const { return unrecognized_; }
  // (kind, node) → lines seen; node "" when the source named none.
  const std::map<std::pair<int, std::string>, uint64_t>& coverage() const { return coverage_; }
  // Ranks whose own log stream was ingested (from the source's rank).
  const std::set<int>& ranks_seen() const { return ranks_seen_; }

  uint64_t lines_scanned = 0;
  uint64_t bytes_scanned = 0;
  uint64_t candidate_lines = 0;
  uint64_t lines_truncated = 0;
  uint64_t out_of_window = 0;
  uint64_t unrecognized_lines = 0;    // error-like lines no extractor matched (all of them)
  uint64_t unrecognized_dropped = 0;  // of those, in keys dropped by the key cap

 private:
  void prune_unrecognized();
  void combine(SymptomRecord& rec, SymptomRecord&& src);
  void combine(UnrecognizedLine& u, const UnrecognizedLine& src);
  void add_totals(const Extraction& other);

  std::map<SymptomKey, SymptomRecord> symptoms_;
  std::map<std::string, UnrecognizedLine, std::less<>> unrecognized_;
  std::map<std::pair<int, std::string>, uint64_t> coverage_;
  std::set<int> ranks_seen_;
  TimeNs window_lo_ = kNoTime;
  TimeNs window_hi_ = kNoTime;
};

// A line without a time takes the time of the nearest earlier stamped line of the same source
// that starts at most this many bytes before it (marked as inferred). Callers that scan a source
// in pieces pass at least this much preceding text as look-back context, or a TimeCarry, so the
// times do not depend on where the pieces were cut.
inline constexpr size_t kTimeLookBackBytes = 128 * 1024;

// The time state of a source between two scans of consecutive pieces of it: the last stamped
// line seen and how far before the next piece it starts.
struct TimeCarry {
  TimeNs t = kNoTime;
  uint64_t line = 0;            // its line number
  uint64_t bytes_to_next = 0;   // from its first byte to the first byte of the next piece
};

// Scans text with the rule set's Vectorscan databases; RE2 runs only on candidate lines.
// Thread-safety: one Scanner per thread (it owns Vectorscan scratch space).
class Scanner {
 public:
  explicit Scanner(std::shared_ptr<const RuleSet> rules);
  ~Scanner();
  Scanner(const Scanner&) = delete;
  Scanner& operator=(const Scanner&) = delete;

  // Scans the lines of buffer[scan_from, size). buffer[0, scan_from) holds preceding lines of the
  // same source, used only to give a time to lines that have none (kTimeLookBackBytes);
  // scan_from must be 0 or follow a '\n'. `first_line` is the 1-based number of the line at
  // scan_from. A last line without '\n' is scanned. `carry`, when given, supplies the time from
  // before the buffer and is updated for the piece that follows it. Returns the lines scanned.
  uint64_t scan(const TextSource& source, std::string_view buffer, size_t scan_from,
                uint64_t first_line, Extraction& out, TimeCarry* carry = nullptr);

  // Classifies one observation (a log line or a metric sample) into `out`.
  void scan_observation(const Observation& observation, int default_year, Extraction& out);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// The outcome of attribution. `json` is the canonical verdict document (SPEC §6): sorted keys,
// no insignificant whitespace, identical bytes for identical inputs.
struct Verdict {
  std::string outcome;
  std::string domain;
  std::string quality;  // definitive | probable | ambiguous | insufficient
  std::string root_symptom;
  std::string root_node;
  std::vector<std::string> affected_nodes;
  std::string json;
  std::string summary;  // a few lines of text for terminals
};

// Evidence for one workload attempt. ingest/merge/attribute may be called in any order and
// repeatedly; attribute() after all evidence equals one-shot attribution.
// Thread-safety: not thread-safe; callers serialize access (the service holds a lock per session).
class Session {
 public:
  Session(std::shared_ptr<const RuleSet> rules, ExecutionContext context);
  ~Session();
  Session(Session&&) noexcept;
  Session& operator=(Session&&) noexcept;

  const ExecutionContext& context() const;
  const RuleSet& rules() const;

  // Scans a whole text (or a chunk of one, with first_line set) of one source.
  void ingest_text(const TextSource& source, std::string_view text, uint64_t first_line = 1);
  // One normalized observation (a line or a metric sample).
  void ingest(const Observation& observation);
  // Symptoms extracted elsewhere (parallel scanners).
  void merge(const Extraction& extraction);
  void merge(Extraction&& extraction);
  void add_connector_report(const ConnectorReport& report);

  const Extraction& extraction() const;
  // An empty Extraction carrying this session's time window, for parallel scanners to fill.
  Extraction new_extraction() const;
  Verdict attribute() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Engine version string, e.g. "0.1.0".
std::string_view engine_version();

}  // namespace attribution
