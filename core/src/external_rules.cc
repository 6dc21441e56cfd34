// Rules in other languages during attribute() (rule_extension.h): the view a refiner reads, the
// application of what it returns, field hooks on aggregated records, and how failures and quality
// caps reach the verdict. Everything here is deterministic given the rules' own determinism.
#include <fmt/format.h>

#include <algorithm>
#include <numeric>
#include <set>

#include "analysis.h"

namespace attribution {
namespace {

TimeNs sort_time(TimeNs t) { return t == kNoTime ? std::numeric_limits<TimeNs>::max() : t; }

const std::set<std::string> kDomains = {"gpu", "network", "node", "storage", "scheduler", "application", "unknown", "none"};
const std::vector<std::string> kQualityOrder = {"definitive", "probable", "ambiguous", "insufficient"};

long quality_rank(const std::string& level) {
  return std::find(kQualityOrder.begin(), kQualityOrder.end(), level) - kQualityOrder.begin();
}

class ItemsView final : public AnalysisView {
 public:
  ItemsView(const Analysis& a, std::string_view phase) : a_(a), phase_(phase) {}

  std::string_view phase() const override { return phase_; }
  const ExecutionContext& context() const override { return a_.context; }
  size_t size() const override { return a_.items.size(); }
  SymptomView symptom(size_t i) const override {
    const Item& it = a_.items[i];
    SymptomView s;
    s.index = i;
    s.id = it.key.id;
    s.node = it.key.node;
    s.gpu = it.key.gpu;
    s.rank = it.key.rank;
    s.label = it.label();
    s.role = it.attrs->role;
    s.domain = it.attrs->domain;
    s.outcome = it.attrs->outcome;
    s.priority = it.attrs->priority;
    s.indirect = it.indirect;
    s.synthetic = it.synthetic;
    s.filtered = it.filtered;
    s.explained_by = it.explained_by;
    if (it.explained_rule != nullptr) s.explained_rule = *it.explained_rule;
    s.first_seen = it.rec->first_seen;
    s.last_seen = it.rec->last_seen;
    s.count = it.rec->count;
    s.fields = &it.rec->fields;
    s.evidence = &it.rec->evidence;
    return s;
  }
  std::vector<size_t> timeline() const override {
    std::vector<size_t> order(a_.items.size());
    std::iota(order.begin(), order.end(), size_t{0});
    std::stable_sort(order.begin(), order.end(), [&](size_t x, size_t y) {
      const Item& ix = a_.items[x];
      const Item& iy = a_.items[y];
      if (sort_time(ix.first()) != sort_time(iy.first())) return sort_time(ix.first()) < sort_time(iy.first());
      return ix.key < iy.key;
    });
    return order;
  }
  std::vector<SourceCoverage> coverage() const override {
    std::vector<SourceCoverage> out;
    for (const auto& [k, lines] : a_.extraction.coverage()) {
      out.push_back({std::string(to_string(static_cast<ObservationKind>(k.first))), k.second, lines});
    }
    return out;
  }
  const std::vector<ConnectorReport>& connector_reports() const override { return a_.reports; }
  std::string_view outcome() const override { return a_.outcome != nullptr ? std::string_view(a_.outcome->outcome) : ""; }
  std::string_view quality() const override { return a_.outcome != nullptr ? std::string_view(a_.outcome->quality) : ""; }
  int root() const override { return a_.outcome != nullptr ? a_.outcome->root : -1; }

 private:
  const Analysis& a_;
  std::string_view phase_;
};

SymptomRecord combine_records(const Analysis& a, const std::vector<size_t>& idx) {
  SymptomRecord r;
  std::vector<EvidenceLine> ev;
  for (size_t i : idx) {
    const SymptomRecord& s = *a.items[i].rec;
    r.count += s.count;
    if (s.first_seen != kNoTime && (r.first_seen == kNoTime || s.first_seen < r.first_seen)) r.first_seen = s.first_seen;
    if (s.last_seen != kNoTime && (r.last_seen == kNoTime || s.last_seen > r.last_seen)) r.last_seen = s.last_seen;
    for (const auto& e : s.evidence) ev.push_back(e);
  }
  std::sort(ev.begin(), ev.end(), [](const EvidenceLine& x, const EvidenceLine& y) {
    return std::forward_as_tuple(sort_time(x.t), x.source, x.line) <
           std::forward_as_tuple(sort_time(y.t), y.source, y.line);
  });
  if (ev.size() > kMaxEvidencePerSymptom) ev.resize(kMaxEvidencePerSymptom);
  r.evidence = std::move(ev);
  if (r.count == 0) r.count = 1;
  return r;
}

// Checks what the core cannot take from a refiner's actions; "" when they are fine.
std::string invalid_actions(const Analysis& a, const RefinerActions& actions) {
  for (const auto& s : actions.symptoms) {
    if (!kDomains.count(s.domain)) return fmt::format("symptom '{}': unknown domain '{}'", s.id, s.domain);
    if (s.role != "cause" && s.role != "context" && s.role != "victim")
      return fmt::format("symptom '{}': role must be cause, victim or context", s.id);
    std::string outcome = s.outcome.empty() ? s.domain + ".unknown" : s.outcome;
    auto dot = outcome.find('.');
    if (dot == std::string::npos || !kDomains.count(outcome.substr(0, dot)))
      return fmt::format("symptom '{}': outcome '{}' must be <domain>.<what>", s.id, outcome);
    if (s.priority < 0 || s.priority > 100) return fmt::format("symptom '{}': priority must be 0-100", s.id);
  }
  if (actions.quality_cap && quality_rank(actions.quality_cap->level) >= static_cast<long>(kQualityOrder.size()))
    return fmt::format("unknown quality level '{}'", actions.quality_cap->level);
  (void)a;
  return "";
}

}  // namespace

void Analysis::report_rule_failure(const ExternalRule& rule, const RuleFailure& failure) {
  for (auto& r : rule_reports) {
    if (r.rule == rule.id) {
      ++r.failures;
      return;
    }
  }
  rule_reports.push_back({rule.id, failure.file.empty() ? rule.where.file : failure.file,
                          failure.line > 0 ? failure.line : rule.where.line, failure.status, failure.message, 1});
}

void run_external_refiner(const ExternalRule& rule, std::string_view phase, Analysis& a) {
  ItemsView view(a, phase);
  RefinerActions actions;
  RuleFailure failure;
  if (!rule.refiner->run(view, actions, failure)) {
    a.report_rule_failure(rule, failure);
    return;
  }
  if (std::string why = invalid_actions(a, actions); !why.empty()) {
    a.report_rule_failure(rule, {"invalid", "invalid return value: " + why, rule.where.file, rule.where.line});
    return;
  }
  for (const auto& [cause, effect] : actions.explanations) a.explain(static_cast<int>(effect), static_cast<int>(cause), rule.id);
  for (const auto& s : actions.symptoms) {
    SymptomAttrs attrs;
    attrs.label = s.label.empty() ? s.id : s.label;
    attrs.domain = s.domain;
    attrs.outcome = s.outcome.empty() ? s.domain + ".unknown" : s.outcome;
    attrs.role = s.role;
    attrs.priority = s.priority;
    attrs.indirect = s.indirect;
    attrs.resolved = true;
    SymptomRecord rec = combine_records(a, s.based_on);
    for (const auto& [k, v] : s.fields) rec.fields[k] = v;
    rec.fields["rule"] = rule.id;
    int added = a.add_synthetic({s.id, s.node, s.rank, s.gpu}, std::move(attrs), std::move(rec), s.indirect);
    for (size_t e : s.explains) a.explain(static_cast<int>(e), added, rule.id);
  }
  if (actions.quality_cap) a.quality_caps.emplace_back(rule.id, *actions.quality_cap);
}

std::map<std::string, std::string> hook_input(const Fields& fields, const SymptomKey& key) {
  std::map<std::string, std::string> in = fields.to_map();
  in.emplace("node", key.node);
  if (!key.gpu.empty()) in.emplace("gpu", key.gpu);
  if (key.rank != kNoRank) in.emplace("rank", std::to_string(key.rank));
  return in;
}

const SymptomRecord* apply_field_hooks(Analysis& a, const SymptomKey& key, const SymptomRecord& record,
                                       const std::vector<size_t>& hooks) {
  std::map<std::string, std::string> added;
  const EvidenceLine& first = record.evidence.front();
  std::map<std::string, std::string> input = hook_input(record.fields, key);
  for (size_t h : hooks) {
    const ExternalRule& rule = a.rules.external_rules[h];
    std::map<std::string, std::string> extra;
    RuleFailure failure;
    if (!rule.hook->run(rule.extractor, input, first.text, extra, failure)) {
      a.report_rule_failure(rule, failure);
      continue;
    }
    for (auto& [k, v] : extra) added.emplace(k, std::move(v));  // an earlier hook wins
  }
  if (added.empty()) return &record;
  SymptomRecord copy = record;
  for (auto& [k, v] : added) copy.fields.emplace(k, std::move(v));  // a capture of the same name wins
  a.synthetic_records.push_back(std::move(copy));
  return &a.synthetic_records.back();
}

void apply_rule_outcomes(const Analysis& a, Outcome& o) {
  for (const auto& [rule, cap] : a.quality_caps) {
    if (quality_rank(cap.level) > quality_rank(o.quality)) {
      o.quality = cap.level;
      o.reasons.push_back(fmt::format("rule {} caps the quality at {}: {}", rule, cap.level, cap.reason));
    }
  }
  for (const auto& r : a.rule_reports) {
    if (o.quality == "definitive") o.quality = "probable";
    o.reasons.push_back(fmt::format("rule {} failed ({}): {}", r.rule, r.status, r.message));
  }
}

}  // namespace attribution
