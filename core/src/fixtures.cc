// `rules test`: every fixture runs through the real scanner, alone and after unrelated text.
// `rules inventory`: every inventory example runs through the same path (docs/rules.md).
#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <map>
#include <set>

#include "attribution/codec.h"
#include "analysis.h"
#include "rule_set.h"

namespace attribution {

std::string fixture_after_noise(const std::string& line, size_t noise_bytes) {
  std::string noisy;
  for (size_t i = 0; i < noise_bytes; ++i) noisy += static_cast<char>('a' + (i * 7) % 26);
  noisy += "\nINFO step 100 loss 2.31\n" + line + "\n";
  return noisy;
}

std::string fixture_repeated(const std::string& line) {
  std::string repeated;
  for (size_t i = 0; i < kFixtureRepeats; ++i) {
    repeated += "INFO step " + std::to_string(i) + " loss 2.31" + std::string((i % 5) * 40, ' ') + "\n" + line + "\n";
  }
  return repeated;
}

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
      // "fabric.hca" checks the location the rule's fabric block recorded ("_fabric.hca").
      auto it = hit->second.fields.find(k.rfind("fabric.", 0) == 0 ? "_" + k : k);
      got = it == hit->second.fields.end() ? "<absent>" : it->second;
    }
    if (got != want) return fmt::format("{}: expected '{}', got '{}'", k, want, got);
  }
  return "";
}

// A field hook's fixture: the line through the scanner (as the first kind its extractor scans),
// the record its extractor made through every hook on that extractor, then the expectations.
std::string check_field_hook(const RuleSet& rules, Scanner& scanner, const ExternalRule& rule, const ExternalFixture& f) {
  auto x = std::find_if(rules.extractors.begin(), rules.extractors.end(),
                        [&](const Extractor& e) { return e.id == rule.extractor; });
  if (x == rules.extractors.end()) return fmt::format("no extractor '{}'", rule.extractor);
  TextSource src;
  src.name = "fixture";
  src.default_year = 2026;
  // A syslog line names its host: scan as syslog when the extractor scans syslog.
  constexpr int kSyslog = static_cast<int>(ObservationKind::kSyslog);
  for (int k : {kSyslog, 0, 1, 2, 3, 4, 5}) {
    if (x->kinds_mask & (1u << k)) {
      src.kind = static_cast<ObservationKind>(k);
      break;
    }
  }
  Extraction ex;
  scanner.scan(src, f.input_line, 0, 1, ex);
  const std::pair<const SymptomKey, SymptomRecord>* hit = nullptr;
  for (const auto& kv : ex.symptoms()) {
    for (const auto& e : kv.second.evidence) {
      if (e.rule == rule.extractor) hit = &kv;
    }
  }
  if (f.expect.count("none")) return hit == nullptr ? "" : fmt::format("expected no match, got symptom {}", hit->first.id);
  if (hit == nullptr) return fmt::format("extractor '{}' does not match the line", rule.extractor);
  std::map<std::string, std::string> fields = hit->second.fields.to_map();
  for (size_t h : rules.field_hooks.at(rule.extractor)) {
    const ExternalRule& hook = rules.external_rules[h];
    std::map<std::string, std::string> extra;
    RuleFailure failure;
    if (!hook.hook->run(hook.extractor, hook_input(hit->second.fields, hit->first), hit->second.evidence.front().text,
                        extra, failure))
      return fmt::format("{} failed ({}) at {}:{}: {}", hook.id, failure.status, failure.file, failure.line, failure.message);
    for (auto& [k, v] : extra) fields.emplace(k, std::move(v));
  }
  for (const auto& [k, want] : f.expect) {
    std::string got;
    if (k == "symptom") got = hit->first.id;
    else if (k == "node") got = hit->first.node;
    else if (k == "rank") got = hit->first.rank == kNoRank ? "" : std::to_string(hit->first.rank);
    else if (k == "gpu") got = hit->first.gpu;
    else {
      auto it = fields.find(k);
      got = it == fields.end() ? "<absent>" : it->second;
    }
    if (got != want) return fmt::format("{}: expected '{}', got '{}'", k, want, got);
  }
  return "";
}

// A refiner's fixture: its lines ("<kind> <node>: <text>") through a whole session of the rule set,
// then the verdict against the expectations. Any rule report in the verdict fails it.
std::string check_refiner(const std::shared_ptr<const RuleSet>& rules, const ExternalFixture& f) {
  std::map<std::pair<int, std::string>, std::string> texts;
  std::set<std::string> nodes(f.nodes.begin(), f.nodes.end());
  for (const auto& l : f.lines) {
    size_t sp = l.find(' ');
    size_t colon = l.find(": ", sp == std::string::npos ? 0 : sp);
    auto kind = sp == std::string::npos ? std::nullopt : parse_observation_kind(l.substr(0, sp));
    if (!kind || colon == std::string::npos)
      return fmt::format("fixture line '{}' is not '<kind> <node>: <text>' (kind: applog, syslog, scheduler, ...)", l);
    std::string node = l.substr(sp + 1, colon - sp - 1);
    texts[{static_cast<int>(*kind), node}] += l.substr(colon + 2) + "\n";
    if (f.nodes.empty()) nodes.insert(node);
  }
  ExecutionContext ctx;
  ctx.id = "fixture";
  ctx.nodes.assign(nodes.begin(), nodes.end());
  Session session(rules, ctx);
  for (const auto& [key, text] : texts) {
    TextSource src;
    src.kind = static_cast<ObservationKind>(key.first);
    src.node = key.second;
    src.name = fmt::format("fixture/{}/{}", to_string(src.kind), key.second);
    src.default_year = 2026;
    session.ingest_text(src, text);
  }
  Verdict v = session.attribute();
  nlohmann::json j = nlohmann::json::parse(v.json, nullptr, false);
  if (j.is_discarded()) return "the verdict is not JSON";
  if (j.contains("rule_reports")) {
    const auto& r = j["rule_reports"][0];
    return fmt::format("rule {} failed ({}) at {}:{}: {}", r["rule"].get<std::string>(), r["status"].get<std::string>(),
                       r["file"].get<std::string>(), r["line"].get<int>(), r["message"].get<std::string>());
  }
  for (const auto& [k, want] : f.expect) {
    std::string got;
    if (k == "outcome") got = v.outcome;
    else if (k == "domain") got = v.domain;
    else if (k == "quality") got = v.quality;
    else if (k == "root_symptom") got = v.root_symptom;
    else if (k == "root_node") got = v.root_node;
    else if (k == "explained") {
      std::set<std::string> explained;
      for (const auto& e : j.value("explained", nlohmann::json::array())) explained.insert(e.value("id", ""));
      size_t p = 0;
      while (p <= want.size()) {
        size_t comma = want.find(',', p);
        std::string id = want.substr(p, comma == std::string::npos ? std::string::npos : comma - p);
        if (!id.empty() && !explained.count(id))
          return fmt::format("explained: expected '{}' among [{}]", id, fmt::join(explained, ", "));
        if (comma == std::string::npos) break;
        p = comma + 1;
      }
      continue;
    } else {
      return fmt::format("unknown expectation '{}' (outcome, domain, quality, root_symptom, root_node, explained)", k);
    }
    if (got != want) return fmt::format("{}: expected '{}', got '{}'", k, want, got);
  }
  return "";
}

void run_external_fixtures(const std::shared_ptr<const RuleSet>& rules, Scanner& scanner,
                           std::vector<FixtureResult>& out) {
  for (const auto& rule : rules->external_rules) {
    if (rule.fixtures.empty()) {
      out.push_back({rule.where.file, rule.where.line, rule.id, false,
                     "needs at least one fixture (fixtures=[...] in its decorator)"});
      continue;
    }
    for (const auto& f : rule.fixtures) {
      FixtureResult r{rule.where.file, f.line, rule.id, true, ""};
      r.message = rule.kind == ExternalRule::Kind::kFieldHook ? check_field_hook(*rules, scanner, rule, f)
                                                              : check_refiner(rules, f);
      r.passed = r.message.empty();
      out.push_back(std::move(r));
    }
  }
}

}  // namespace

std::vector<FixtureResult> run_fixtures(const RuleSet& rules_ref) {
  // The scanner needs shared ownership; alias the caller's object without taking ownership.
  std::shared_ptr<const RuleSet> rules(std::shared_ptr<const RuleSet>{}, &rules_ref);
  Scanner scanner(rules);
  std::vector<FixtureResult> out;
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
    for (size_t n : kFixtureNoiseLengths) {
      if (!message.empty()) return message;
      std::string noisy = fixture_after_noise(f.input, n);
      Extraction ex2;
      scanner.scan(src, noisy, 0, 1, ex2);
      std::string m = check(ex2, x.id, f);
      if (!m.empty()) message = fmt::format("after {} bytes of unrelated text: {}", n, m);
    }
    if (!message.empty() || f.expect_none) return message;
    // Every occurrence is found, also between lines that end in blanks: Vectorscan 5.4.9 drops
    // most matches of some pattern shapes there (e.g. '^(?:X\s*)?Y').
    std::string repeated = fixture_repeated(f.input);
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
    if (found != kFixtureRepeats)
      return fmt::format("found {} of {} repeated occurrences between other lines", found, kFixtureRepeats);
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
  run_external_fixtures(rules, scanner, out);
  return out;
}

bool InventoryResult::ok() const {
  if (!errors.empty()) return false;
  for (const auto& p : producers) {
    if (p.failures != 0) return false;
  }
  return true;
}

namespace {

constexpr std::string_view kInventoryKinds[] = {"applog", "syslog", "scheduler", "k8s_event", "node_report"};

struct InventoryParser {
  InventoryResult& result;
  std::string file;

  void error(const YAML::Mark& m, std::string msg) {
    result.errors.push_back({file, m.line + 1, m.column + 1, std::move(msg)});
  }
  bool keys(const YAML::Node& node, std::initializer_list<std::string_view> allowed, std::string_view what) {
    if (!node.IsMap()) {
      error(node.Mark(), fmt::format("{} must be a mapping", what));
      return false;
    }
    bool ok = true;
    for (const auto& kv : node) {
      std::string key = kv.first.Scalar();
      if (std::find(allowed.begin(), allowed.end(), key) == allowed.end()) {
        error(kv.first.Mark(), fmt::format("unknown key '{}' in {} (allowed: {})", key, what, fmt::join(allowed, ", ")));
        ok = false;
      }
    }
    return ok;
  }
  // A required (or optional) non-empty scalar; "" when missing or wrong.
  std::string scalar(const YAML::Node& node, const char* key, bool required) {
    YAML::Node v = node[key];
    if (!v) {
      if (required) error(node.Mark(), fmt::format("missing required key '{}'", key));
      return "";
    }
    if (!v.IsScalar() || v.Scalar().empty()) {
      error(v.Mark(), fmt::format("'{}' must be a non-empty string", key));
      return "";
    }
    return v.Scalar();
  }
};

}  // namespace

InventoryResult check_inventory(const RuleSet& rules_ref, const std::vector<RuleText>& files) {
  std::shared_ptr<const RuleSet> rules(std::shared_ptr<const RuleSet>{}, &rules_ref);
  Scanner scanner(rules);
  InventoryResult result;
  for (const auto& f : files) {
    InventoryParser p{result, f.name};
    YAML::Node root;
    try {
      root = YAML::Load(f.text);
    } catch (const YAML::Exception& e) {
      p.error(e.mark, e.msg);
      continue;
    }
    if (!p.keys(root, {"version", "producer", "source", "messages"}, "an inventory file")) continue;
    YAML::Node version = root["version"];
    if (!version || !version.IsScalar() || version.Scalar() != "1") {
      p.error(version ? version.Mark() : root.Mark(), "'version' must be 1");
    }
    InventoryReport report;
    report.file = f.name;
    report.producer = p.scalar(root, "producer", true);
    report.source = p.scalar(root, "source", true);
    YAML::Node messages = root["messages"];
    if (!messages || !messages.IsSequence()) {
      p.error(messages ? messages.Mark() : root.Mark(), "'messages' must be a list");
      continue;
    }
    std::set<std::string> ids;
    for (const auto& m : messages) {
      size_t entry_errors = result.errors.size();
      p.keys(m, {"id", "component", "format", "where", "versions", "example", "status", "symptom", "reason", "kind", "note"},
             "an inventory message");
      if (!m.IsMap()) continue;
      InventoryEntryResult r;
      r.file = f.name;
      r.line = m.Mark().line + 1;
      r.id = p.scalar(m, "id", true);
      if (!r.id.empty() && !ids.insert(r.id).second) p.error(m["id"].Mark(), fmt::format("duplicate id '{}'", r.id));
      for (const char* k : {"component", "format", "where", "versions"}) p.scalar(m, k, true);
      std::string example = p.scalar(m, "example", true);
      r.status = p.scalar(m, "status", true);
      std::string symptom = p.scalar(m, "symptom", false);
      std::string reason = p.scalar(m, "reason", false);
      std::string kind_name = p.scalar(m, "kind", false);
      p.scalar(m, "note", false);
      if (!r.status.empty() && r.status != "matched" && r.status != "ignored") {
        p.error(m["status"].Mark(), "'status' must be matched or ignored");
      }
      if (r.status == "matched" && symptom.empty() && !m["symptom"]) {
        p.error(m.Mark(), "a matched message needs 'symptom'");
      }
      if (r.status == "ignored" && reason.empty() && !m["reason"]) p.error(m.Mark(), "an ignored message needs 'reason'");
      if (r.status == "ignored" && m["symptom"]) p.error(m["symptom"].Mark(), "an ignored message has no 'symptom'");
      if (example.find('\n') != std::string::npos) p.error(m["example"].Mark(), "'example' must be one line");
      std::vector<ObservationKind> kinds;
      if (!kind_name.empty()) {
        auto k = parse_observation_kind(kind_name);
        if (!k || *k == ObservationKind::kNodeMetrics) {
          p.error(m["kind"].Mark(), fmt::format("'kind' must be one of {}", fmt::join(kInventoryKinds, ", ")));
        } else {
          kinds.push_back(*k);
        }
      } else {
        for (auto name : kInventoryKinds) kinds.push_back(*parse_observation_kind(name));
      }
      if (result.errors.size() != entry_errors) continue;

      // Every symptom the example produces, under each kind, alone and after unrelated text.
      std::map<std::string, std::string> produced;  // symptom id -> role
      bool expected_everywhere_alone = false;
      std::string missing_after_noise;
      for (auto kind : kinds) {
        TextSource src;
        src.name = "inventory";
        src.kind = kind;
        src.default_year = 2026;
        bool alone_hit = false;
        for (int variant = 0; variant < 2; ++variant) {
          std::string text = variant == 0 ? example : "INFO step 100 loss 2.31\n" + example + "\n";
          Extraction ex;
          scanner.scan(src, text, 0, 1, ex);
          bool hit = false;
          for (const auto& kv : ex.symptoms()) {
            produced[kv.first.id] = rules_ref.attributes(kv.first.id, kv.second.fields).role;
            if (kv.first.id == symptom) hit = true;
          }
          if (variant == 0) alone_hit = hit;
          else if (alone_hit && !hit) missing_after_noise = std::string(to_string(kind));
        }
        if (alone_hit) expected_everywhere_alone = true;
      }
      for (const auto& [id, role] : produced) r.produced.push_back(fmt::format("{} ({})", id, role));
      if (r.status == "matched") {
        ++report.matched;
        if (!expected_everywhere_alone) {
          r.message = produced.empty() ? fmt::format("expected symptom {}, the example produced none", symptom)
                                       : fmt::format("expected symptom {}, the example produced: {}", symptom,
                                                     fmt::join(r.produced, ", "));
        } else if (!missing_after_noise.empty()) {
          r.message = fmt::format("as {}: symptom {} found alone but not after an unrelated line", missing_after_noise,
                                  symptom);
        }
      } else {
        ++report.ignored;
        std::vector<std::string> causes;
        for (const auto& [id, role] : produced) {
          if (role == "cause") causes.push_back(id);
        }
        if (!causes.empty()) {
          r.message = fmt::format("ignored, but the example produces cause symptom(s): {}", fmt::join(causes, ", "));
        }
      }
      r.passed = r.message.empty();
      if (!r.passed) ++report.failures;
      ++report.messages;
      report.entries.push_back(std::move(r));
    }
    result.producers.push_back(std::move(report));
  }
  return result;
}

}  // namespace attribution
