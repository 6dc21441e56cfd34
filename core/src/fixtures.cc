// `rules test`: every fixture runs through the real scanner, alone and after unrelated text.
#include <fmt/format.h>

#include "attribution/codec.h"
#include "rule_set.h"

namespace attribution {
namespace {

// Finds the record produced by extractor `id`; checks the expectations. Returns "" when they hold.
std::string check(const Extraction& ex, const std::string& id, const Fixture& f) {
  const std::pair<const SymptomKey, SymptomRecord>* hit = nullptr;
  std::vector<std::string> others;
  for (const auto& kv : ex.symptoms()) {
    for (const auto& e : kv.second.evidence) {
      if (e.rule == id) hit = &kv;
      else others.push_back(fmt::format("{} (by {})", kv.first.id, e.rule));
    }
  }
  if (f.expect_none) {
    return hit == nullptr ? "" : fmt::format("expected no match, got symptom {}", hit->first.id);
  }
  if (hit == nullptr) {
    return others.empty() ? "no match"
                          : fmt::format("no match by this rule; matched instead: {}", fmt::join(others, ", "));
  }
  for (const auto& [k, want] : f.expect) {
    std::string got;
    if (k == "symptom") got = hit->first.id;
    else if (k == "node") got = hit->first.node;
    else if (k == "rank") got = hit->first.rank == kNoRank ? "" : std::to_string(hit->first.rank);
    else if (k == "gpu") got = hit->first.gpu;
    else {
      auto it = hit->second.fields.find(k);
      got = it == hit->second.fields.end() ? "<absent>" : it->second;
    }
    if (got != want) return fmt::format("{}: expected '{}', got '{}'", k, want, got);
  }
  return "";
}

}  // namespace

std::vector<FixtureResult> run_fixtures(const RuleSet& rules_ref) {
  // The scanner needs shared ownership; alias the caller's object without taking ownership.
  std::shared_ptr<const RuleSet> rules(std::shared_ptr<const RuleSet>{}, &rules_ref);
  Scanner scanner(rules);
  std::vector<FixtureResult> out;
  static const size_t kNoiseLengths[] = {1, 17, 63, 64, 65, 129};
  // One fixture under one observation kind: alone, after unrelated text, and repeated between
  // other lines. Returns "" when every expectation holds.
  auto run_one = [&](const Extractor& x, const Fixture& f, ObservationKind kind) -> std::string {
    TextSource src;
    src.name = "fixture";
    src.kind = kind;
    src.default_year = 2026;
    Extraction ex;
    scanner.scan(src, f.input, 0, 1, ex);
    std::string message = check(ex, x.id, f);
    for (size_t n : kNoiseLengths) {
      if (!message.empty()) return message;
      std::string noisy;
      for (size_t i = 0; i < n; ++i) noisy += static_cast<char>('a' + (i * 7) % 26);
      noisy += "\nINFO step 100 loss 2.31\n" + f.input + "\n";
      Extraction ex2;
      scanner.scan(src, noisy, 0, 1, ex2);
      std::string m = check(ex2, x.id, f);
      if (!m.empty()) message = fmt::format("after {} bytes of unrelated text: {}", n, m);
    }
    if (!message.empty() || f.expect_none) return message;
    // Every occurrence is found, also between lines that end in blanks: Vectorscan 5.4.9 drops
    // most matches of some pattern shapes there (e.g. '^(?:X\s*)?Y').
    constexpr int kRepeats = 40;
    std::string repeated;
    for (int i = 0; i < kRepeats; ++i) {
      repeated += "INFO step " + std::to_string(i) + " loss 2.31" + std::string(static_cast<size_t>(i % 5) * 40, ' ') +
                  "\n" + f.input + "\n";
    }
    Extraction ex3;
    scanner.scan(src, repeated, 0, 1, ex3);
    uint64_t found = 0;
    for (const auto& kv : ex3.symptoms()) {
      for (const auto& e : kv.second.evidence) {
        if (e.rule == x.id) {
          found += kv.second.count;
          break;
        }
      }
    }
    if (found != kRepeats) return fmt::format("found {} of {} repeated occurrences between other lines", found, kRepeats);
    return "";
  };
  for (const auto& x : rules_ref.extractors) {
    for (const auto& f : x.fixtures) {
      FixtureResult r{f.pos.file, f.pos.line, x.id, true, ""};
      // Under every kind the extractor scans: another kind's database holds other competitors.
      for (int k = 0; k < kObservationKindCount && r.message.empty(); ++k) {
        if (!(x.kinds_mask & (1u << k))) continue;
        auto kind = static_cast<ObservationKind>(k);
        std::string m = run_one(x, f, kind);
        if (!m.empty()) r.message = fmt::format("as {}: {}", to_string(kind), m);
      }
      r.passed = r.message.empty();
      out.push_back(std::move(r));
    }
  }
  for (const auto& m : rules_ref.metric_extractors) {
    for (const auto& f : m.fixtures) {
      FixtureResult r{f.pos.file, f.pos.line, m.id, true, ""};
      MetricParse parsed = parse_metrics_text(f.input);
      if (!parsed.errors.empty() || parsed.samples.empty()) {
        r.passed = false;
        r.message = parsed.errors.empty() ? "no sample in fixture" : "bad sample: " + parsed.errors.front();
        out.push_back(std::move(r));
        continue;
      }
      Extraction ex;
      for (const auto& s : parsed.samples) {
        Observation o;
        o.kind = ObservationKind::kNodeMetrics;
        o.metric = s;
        o.source.source = "fixture";
        scanner.scan_observation(o, 2026, ex);
      }
      r.message = check(ex, m.id, f);
      r.passed = r.message.empty();
      out.push_back(std::move(r));
    }
  }
  return out;
}

}  // namespace attribution
