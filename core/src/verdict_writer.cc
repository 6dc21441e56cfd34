// The verdict document (SPEC §6) and the terminal summary. nlohmann::json objects are std::maps,
// so keys come out sorted and the bytes are stable.
#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <map>
#include <set>
#include <string_view>
#include <tuple>

#include "analysis.h"
#include "attribution/codec.h"

namespace attribution {
namespace {

using nlohmann::json;

constexpr size_t kMaxEvidence = 40;
constexpr size_t kMaxSymptomGroups = 200;
constexpr size_t kMaxTimeline = 400;
constexpr size_t kMaxNodesListed = 64;
constexpr size_t kMaxUnrecognized = 10;
constexpr size_t kMaxUnrecognizedInSummary = 5;
constexpr size_t kMaxUnrecognizedSourcesListed = 5;

json time_json(TimeNs t) { return t == kNoTime ? json(nullptr) : json(format_rfc3339(t)); }

TimeNs sort_time(TimeNs t) { return t == kNoTime ? std::numeric_limits<TimeNs>::max() : t; }

// "0-3,5,7-9", from ranks in ascending order without repeats (a std::set or a sorted, unique vector).
template <class SortedRanks>
std::string compress_ranks(const SortedRanks& ranks) {
  std::string out;
  auto it = ranks.begin();
  while (it != ranks.end()) {
    int lo = *it, hi = *it;
    auto next = std::next(it);
    while (next != ranks.end() && *next == hi + 1) hi = *next++;
    if (!out.empty()) out += ',';
    out += lo == hi ? std::to_string(lo) : fmt::format("{}-{}", lo, hi);
    it = next;
  }
  return out;
}

json public_fields(const Fields& fields) {
  json out = json::object();
  for (const auto& [k, v] : fields) {
    if (!k.empty() && k[0] != '_') out[k] = v;
  }
  return out;
}

struct EvidenceTable {
  json list = json::array();
  std::map<std::tuple<std::string, uint64_t, std::string>, size_t> index;

  // Adds the evidence lines of an item (up to `limit`) and returns their indices.
  json add(const Item& item, size_t limit) {
    json ids = json::array();
    size_t n = 0;
    for (const auto& e : item.rec->evidence) {
      if (n++ >= limit) break;
      auto key = std::make_tuple(e.source, e.line, e.rule);
      auto found = index.find(key);
      if (found != index.end()) {
        ids.push_back(found->second);
        continue;
      }
      if (list.size() >= kMaxEvidence) break;
      json obs = {{"kind", std::string(to_string(e.kind))},
                  {"node", e.node},
                  {"source", e.source},
                  {"line", e.line},
                  {"time", time_json(e.t)}};
      json entry = {{"observation", obs}, {"text", e.text}, {"rule", e.rule}, {"symptom", item.key.id}};
      if (e.time_inferred) entry["time_inferred"] = true;
      if (!e.note.empty()) entry["note"] = e.note;
      index.emplace(key, list.size());
      ids.push_back(list.size());
      list.push_back(std::move(entry));
    }
    return ids;
  }
};

// The most frequent unrecognized lines: count, then key.
std::vector<std::pair<const std::string*, const UnrecognizedLine*>> top_unrecognized(const Extraction& x, size_t n) {
  std::vector<std::pair<const std::string*, const UnrecognizedLine*>> out;
  for (const auto& [k, u] : x.unrecognized()) out.emplace_back(&k, &u);
  auto before = [](const auto& a, const auto& b) {
    return a.second->count != b.second->count ? a.second->count > b.second->count : *a.first < *b.first;
  };
  if (out.size() > n) {
    std::partial_sort(out.begin(), out.begin() + n, out.end(), before);
    out.resize(n);
  } else {
    std::sort(out.begin(), out.end(), before);
  }
  return out;
}

std::string_view role_of(const Analysis& a, const Outcome& o, int i) {
  const Item& it = a.items[i];
  if (std::find(o.root_group.begin(), o.root_group.end(), i) != o.root_group.end()) return "root_cause";
  if (std::find(o.rivals.begin(), o.rivals.end(), i) != o.rivals.end()) return "candidate";
  if (it.explained_by >= 0) return "explained";
  if (it.attrs->role == "context") return "context";
  return it.attrs->role == "victim" ? "unexplained_victim" : "unexplained_cause";
}

// Where in the fabric the evidence points (docs/fabric.md §2): one entry per (symptom, node,
// location) a rule recorded (`_fabric.*` fields; every distinct location a symptom's lines named,
// SymptomRecord::locations), and the open fleet findings a network verdict's hosts share a
// component with. Absent when there is neither (such verdicts keep their bytes).
constexpr size_t kMaxFabricEvidence = 64;
constexpr std::string_view kFabricPrefix = "_fabric.";
constexpr std::string_view kFleetFindingSymptom = "fabric.fleet_finding";

void write_fabric(const Analysis& a, const Outcome& o, json& v) {
  struct Located {
    int item;
    const FabricLocation* at;
  };
  std::vector<Located> located;
  std::vector<int> findings;
  for (int i = 0; i < static_cast<int>(a.items.size()); ++i) {
    const Item& it = a.items[i];
    if (it.filtered) continue;
    if (it.key.id == kFleetFindingSymptom) {
      findings.push_back(i);
      continue;
    }
    for (const FabricLocation& l : it.rec->locations) located.push_back({i, &l});
  }
  const bool fabric_verdict = o.domain == "network" || o.outcome == "gpu.nvlink";
  if (located.empty() && (findings.empty() || !fabric_verdict)) return;
  std::stable_sort(located.begin(), located.end(), [&](const Located& x, const Located& y) {
    TimeNs tx = sort_time(x.at->first.t), ty = sort_time(y.at->first.t);
    if (tx != ty) return tx < ty;
    if (a.items[x.item].key != a.items[y.item].key) return a.items[x.item].key < a.items[y.item].key;
    return x.at->fields < y.at->fields;
  });
  json evidence = json::array();
  // (symptom, node, location) → index in evidence: ranks and GPUs of one node share an entry.
  std::map<std::tuple<std::string, std::string, Fields>, size_t> seen;
  for (const Located& l : located) {
    const Item& it = a.items[l.item];
    auto id = std::make_tuple(it.key.id, it.key.node, l.at->fields);
    if (auto known = seen.find(id); known != seen.end()) {
      json& e = evidence[known->second];
      e["count"] = e["count"].get<uint64_t>() + l.at->count;
      continue;
    }
    if (evidence.size() >= kMaxFabricEvidence) continue;
    seen.emplace(std::move(id), evidence.size());
    json location = json::object();
    for (const auto& [k, val] : l.at->fields) location[k.substr(kFabricPrefix.size())] = val;
    const EvidenceLine& line = l.at->first;
    evidence.push_back({{"symptom", it.key.id},
                        {"node", it.key.node},
                        {"role", std::string(role_of(a, o, l.item))},
                        {"domain", it.attrs->domain},
                        {"count", l.at->count},
                        {"first_seen", time_json(line.t)},
                        {"location", location},
                        {"source", line.source},
                        {"line", line.line},
                        {"text", line.text}});
  }
  json candidates = json::array();
  if (fabric_verdict) {
    std::set<std::tuple<std::string, std::string, std::string>> listed;  // (finding, component, node)
    std::map<std::tuple<std::string, std::string, std::string>, std::string> confidence;
    for (int i : findings) {
      const Item& it = a.items[i];
      auto key = std::make_tuple(it.field("finding"), it.field("component"), it.key.node);
      if (std::get<0>(key).empty()) continue;
      listed.insert(key);
      confidence[key] = it.field("confidence");
    }
    for (const auto& key : listed)
      candidates.push_back({{"finding", std::get<0>(key)},
                            {"component", std::get<1>(key)},
                            {"node", std::get<2>(key)},
                            {"confidence", confidence[key]}});
  }
  v["fabric"] = {{"evidence", std::move(evidence)}, {"candidates", std::move(candidates)}};
}

}  // namespace

std::string write_verdict_json(const Analysis& a, const Outcome& o) {
  const ExecutionContext& c = a.context;
  json v;
  v["schema"] = "attribution.verdict/v1";
  json workload = {{"id", c.id}, {"scheduler", c.scheduler}, {"cluster", c.cluster}, {"attempt", c.attempt}};
  if (!c.step.empty()) workload["step"] = c.step;
  if (!c.name.empty()) workload["name"] = c.name;
  if (!c.user.empty()) workload["user"] = c.user;
  if (!c.queue.empty()) workload["queue"] = c.queue;
  workload["start"] = time_json(c.start);
  workload["end"] = time_json(c.end);
  workload["nodes"] = c.nodes;
  v["workload"] = workload;
  std::string native = c.terminal_state.empty() ? c.state : c.terminal_state;
  v["terminal_state"] = native.empty() ? json(nullptr) : json(normalize_terminal_state(native));
  v["scheduler_state"] = c.state;
  v["exit_code"] = c.exit_code;
  v["outcome"] = o.outcome;
  v["domain"] = o.domain;

  EvidenceTable evidence;
  if (o.root >= 0) {
    const Item& root = a.items[o.root];
    json ids = json::array();
    std::set<int> ranks;
    uint64_t count = 0;
    for (int i : o.root_group) {
      for (const auto& id : evidence.add(a.items[i], 3)) ids.push_back(id);
      if (a.items[i].key.rank != kNoRank) ranks.insert(a.items[i].key.rank);
      count += a.items[i].rec->count;
    }
    json rc = {{"symptom", root.key.id},
               {"label", root.label()},
               {"node", o.culprit_node.empty() ? json(nullptr) : json(o.culprit_node)},
               {"reported_on", root.key.node.empty() ? json(nullptr) : json(root.key.node)},
               {"gpu", root.key.gpu.empty() ? json(nullptr) : json(root.key.gpu)},
               {"rank", root.key.rank == kNoRank ? json(nullptr) : json(root.key.rank)},
               {"first_seen", time_json(root.first())},
               {"count", count},
               {"evidence", ids},
               {"fields", public_fields(root.rec->fields)},
               {"indirect", root.indirect}};
    if (ranks.size() > 1) rc["ranks"] = compress_ranks(ranks);
    for (const auto& key : {"action", "class", "mnemonic"}) {
      auto it = root.attrs->extra.find(key);
      if (it != root.attrs->extra.end()) rc[key == std::string("action") ? "recommended_action" : key] = it->second;
    }
    v["root_cause"] = rc;
  } else {
    v["root_cause"] = nullptr;
  }
  v["affected_nodes"] = o.affected_nodes;

  json quality = {{"level", o.quality}, {"reasons", o.reasons}, {"missing", o.missing}};
  json candidates = json::array();
  if (!o.rivals.empty()) {
    std::vector<int> all = {o.root};
    all.insert(all.end(), o.rivals.begin(), o.rivals.end());
    for (int i : all) {
      const Item& it = a.items[i];
      candidates.push_back({{"symptom", it.key.id},
                            {"label", it.label()},
                            {"node", it.key.node},
                            {"rank", it.key.rank == kNoRank ? json(nullptr) : json(it.key.rank)},
                            {"outcome", it.attrs->outcome},
                            {"domain", it.attrs->domain},
                            {"first_seen", time_json(it.first())},
                            {"evidence", evidence.add(it, 2)}});
    }
  }
  quality["candidates"] = candidates;
  v["quality"] = quality;

  // Symptoms grouped by (id, node); explained ones grouped by (id, explained_by, rule).
  // A group points at its first item (the items outlive it) and renders its label only when the group is printed
  // (kMaxSymptomGroups of them); ranks are collected unsorted and sorted once (a 16,384-rank storm has 23k groups over
  // 110k ranked items).
  struct Group {
    const std::string* id = nullptr;
    const std::string* node = nullptr;
    const Item* first_item = nullptr;
    const std::string* domain = nullptr;
    std::string_view role;
    uint64_t count = 0;
    TimeNs first = kNoTime, last = kNoTime;
    std::vector<int> ranks;
    std::set<std::string> gpus;
    const std::string* explained_by = nullptr;
  };
  std::map<std::pair<std::string_view, std::string_view>, Group> groups;
  struct ExplainedGroup {
    std::set<std::string> nodes;
    std::set<int> ranks;
    uint64_t count = 0;
    TimeNs first = kNoTime;
  };
  std::map<std::tuple<std::string, std::string, std::string>, ExplainedGroup> explained;
  auto upd = [](TimeNs& lo, TimeNs& hi, TimeNs f, TimeNs l) {
    if (f != kNoTime && (lo == kNoTime || f < lo)) lo = f;
    if (l != kNoTime && (hi == kNoTime || l > hi)) hi = l;
  };
  for (int i = 0; i < static_cast<int>(a.items.size()); ++i) {
    const Item& it = a.items[i];
    if (it.filtered) continue;
    std::string_view role = role_of(a, o, i);
    Group& g = groups[{it.key.id.view(), it.key.node.view()}];
    if (g.count == 0) {
      g.id = &it.key.id.str();
      g.node = &it.key.node.str();
      g.first_item = &it;
      g.domain = &it.attrs->domain;
      g.role = role;
    } else if (role == "root_cause" || (role == "candidate" && g.role != "root_cause")) {
      g.role = role;
    }
    g.count += it.rec->count;
    upd(g.first, g.last, it.rec->first_seen, it.rec->last_seen);
    if (it.key.rank != kNoRank) g.ranks.push_back(it.key.rank);
    if (!it.key.gpu.empty()) g.gpus.insert(it.key.gpu);
    if (it.explained_by >= 0) {
      const Item& by = a.items[it.explained_by];
      g.explained_by = &by.key.id.str();
      ExplainedGroup& e = explained[{it.key.id, by.key.id, it.explained_rule != nullptr ? *it.explained_rule : std::string()}];
      if (!it.key.node.empty()) e.nodes.insert(it.key.node);
      if (it.key.rank != kNoRank) e.ranks.insert(it.key.rank);
      e.count += it.rec->count;
      TimeNs dummy = kNoTime;
      upd(e.first, dummy, it.rec->first_seen, kNoTime);
    }
  }
  std::vector<const Group*> ordered;
  ordered.reserve(groups.size());
  for (auto& [k, g] : groups) {
    std::sort(g.ranks.begin(), g.ranks.end());
    g.ranks.erase(std::unique(g.ranks.begin(), g.ranks.end()), g.ranks.end());
    ordered.push_back(&g);
  }
  static const std::map<std::string, int, std::less<>> kRoleOrder = {{"root_cause", 0}, {"candidate", 1}, {"unexplained_cause", 2},
                                                        {"unexplained_victim", 3}, {"explained", 4}, {"context", 5}};
  std::stable_sort(ordered.begin(), ordered.end(), [](const Group* x, const Group* y) {
    int rx = kRoleOrder.find(x->role)->second, ry = kRoleOrder.find(y->role)->second;
    if (rx != ry) return rx < ry;
    TimeNs tx = sort_time(x->first), ty = sort_time(y->first);
    return std::tie(tx, *x->id, *x->node) < std::tie(ty, *y->id, *y->node);
  });
  json symptoms = json::array();
  for (const Group* g : ordered) {
    if (symptoms.size() >= kMaxSymptomGroups) break;
    json s = {{"id", *g->id},       {"node", *g->node},          {"label", g->first_item->label()},
              {"domain", *g->domain}, {"count", g->count},       {"first_seen", time_json(g->first)},
              {"last_seen", time_json(g->last)}, {"role", std::string(g->role)}};
    if (!g->ranks.empty()) s["ranks"] = compress_ranks(g->ranks);
    if (!g->gpus.empty()) s["gpus"] = std::vector<std::string>(g->gpus.begin(), g->gpus.end());
    if (g->explained_by != nullptr && !g->explained_by->empty()) s["explained_by"] = *g->explained_by;
    symptoms.push_back(std::move(s));
  }
  v["symptoms"] = symptoms;
  v["symptom_groups_total"] = groups.size();

  json explained_json = json::array();
  for (const auto& [k, e] : explained) {
    const auto& [id, by, rule] = k;
    std::vector<std::string> nodes(e.nodes.begin(), e.nodes.end());
    if (nodes.size() > kMaxNodesListed) nodes.resize(kMaxNodesListed);
    json x = {{"id", id},
              {"explained_by", by},
              {"rule", rule},
              {"count", e.count},
              {"nodes", nodes},
              {"nodes_total", e.nodes.size()},
              {"first_seen", time_json(e.first)}};
    if (!e.ranks.empty()) {
      x["ranks_total"] = e.ranks.size();
      x["ranks"] = compress_ranks(e.ranks);
    }
    explained_json.push_back(std::move(x));
  }
  v["explained"] = explained_json;

  // Evidence trail: root first (already added), rivals, then one line per explained group and per
  // remaining active symptom group.
  std::set<std::pair<std::string, std::string>> seen;
  std::vector<int> order(a.items.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int>(i);
  std::stable_sort(order.begin(), order.end(), [&](int x, int y) {
    // Compared in place: building tuples of keys copied three strings per comparison.
    TimeNs tx = sort_time(a.items[x].first()), ty = sort_time(a.items[y].first());
    if (tx != ty) return tx < ty;
    return a.items[x].key < a.items[y].key;
  });
  for (int i : order) {
    const Item& it = a.items[i];
    if (it.filtered || it.attrs->role == "context") continue;
    if (!seen.insert({it.key.id, it.explained_by >= 0 ? a.items[it.explained_by].key.id : ""}).second) continue;
    evidence.add(it, 1);
  }
  v["evidence"] = evidence.list;

  json timeline = json::array();
  std::vector<std::tuple<TimeNs, std::string_view, std::string_view, std::string_view, uint64_t>> points;
  points.reserve(groups.size());
  for (const auto& [k, g] : groups) points.emplace_back(sort_time(g.first), *g.node, *g.id, g.role, g.count);
  std::sort(points.begin(), points.end());
  for (const auto& [t, node, id, role, count] : points) {
    if (timeline.size() >= kMaxTimeline) break;
    std::string r = role == "root_cause" ? "root_cause" : role == "explained" ? "explained"
                    : role == "context" ? "context" : role == "candidate" ? "candidate" : "symptom";
    timeline.push_back({{"t", t == std::numeric_limits<TimeNs>::max() ? json(nullptr) : time_json(t)},
                        {"node", std::string(node)},
                        {"symptom", std::string(id)},
                        {"role", r},
                        {"count", count}});
  }
  v["timeline"] = timeline;

  json reports = json::array();
  for (const auto& r : a.reports) {
    reports.push_back({{"connector", r.connector}, {"status", r.status}, {"reason", r.reason},
                       {"observations", r.observations}, {"bytes", r.bytes}});
  }
  v["connector_reports"] = reports;
  // Rules in another language that failed (only when one did: verdicts without them keep their bytes).
  if (!a.rule_reports.empty()) {
    json rule_reports = json::array();
    for (const auto& r : a.rule_reports) {
      rule_reports.push_back({{"rule", r.rule}, {"file", r.file}, {"line", r.line}, {"status", r.status},
                              {"message", r.message}, {"failures", r.failures}});
    }
    v["rule_reports"] = rule_reports;
  }
  v["engine"] = {{"version", std::string(engine_version())}, {"rules_digest", a.rules.info.digest}};
  const Extraction& x = a.extraction;
  v["input"] = {{"lines", x.lines_scanned},
                {"bytes", x.bytes_scanned},
                {"candidate_lines", x.candidate_lines},
                {"out_of_window", x.out_of_window},
                {"symptom_records", x.symptoms().size()},
                {"unrecognized_lines", x.unrecognized_lines},
                {"unrecognized_keys", x.unrecognized().size()},
                {"unrecognized_dropped", x.unrecognized_dropped}};
  // Error-like lines no rule matched: what to write a rule for.
  json unrecognized = json::array();
  for (const auto& [key, u] : top_unrecognized(x, kMaxUnrecognized)) {
    std::vector<std::string> sources(u->sources.begin(),
                                     u->sources.begin() + std::min(u->sources.size(), kMaxUnrecognizedSourcesListed));
    unrecognized.push_back({{"text", u->text},
                            {"key", *key},
                            {"count", u->count},
                            {"sources", sources},
                            {"source_count", u->source_hashes.size()},
                            {"first", {{"source", u->source}, {"line", u->line}}}});
  }
  v["unrecognized"] = unrecognized;
  write_fabric(a, o, v);
  return v.dump(-1, ' ', false, json::error_handler_t::replace);
}

std::string write_summary(const Analysis& a, const Outcome& o) {
  const ExecutionContext& c = a.context;
  std::string s = fmt::format("job {} ({}{}, attempt {}): {}\n", c.id, c.scheduler,
                              c.cluster.empty() ? "" : "/" + c.cluster, c.attempt,
                              c.state.empty() ? "state unknown" : c.state);
  s += fmt::format("outcome: {} (domain {}), quality {}\n", o.outcome, o.domain, o.quality);
  if (o.root >= 0) {
    const Item& r = a.items[o.root];
    s += fmt::format("root cause: {}{}{} at {}\n", r.label(), r.key.node.empty() ? "" : " on " + r.key.node,
                     r.key.gpu.empty() ? "" : " GPU " + r.key.gpu,
                     r.first() == kNoTime ? "unknown time" : format_rfc3339(r.first()));
    for (const auto& e : r.rec->evidence) {
      s += fmt::format("  evidence: {}:{}: {}\n", e.source, e.line, e.text.substr(0, 160));
    }
  }
  std::map<std::string, std::pair<uint64_t, std::set<std::string>>> explained;
  for (const Item& it : a.items) {
    if (it.explained_by < 0) continue;
    auto& e = explained[it.key.id + " (explained by " + a.items[it.explained_by].key.id + ")"];
    e.first += it.rec->count;
    if (!it.key.node.empty()) e.second.insert(it.key.node);
  }
  for (const auto& [k, e] : explained) s += fmt::format("  explained: {} x {} on {} node(s)\n", e.first, k, e.second.size());
  for (const auto& r : o.reasons) s += fmt::format("  why: {}\n", r);
  for (const auto& m : o.missing) s += fmt::format("  missing: {}\n", m);
  if (!o.affected_nodes.empty()) s += fmt::format("act on: {}\n", fmt::join(o.affected_nodes, ", "));
  auto unrecognized = top_unrecognized(a.extraction, kMaxUnrecognizedInSummary);
  if (!unrecognized.empty()) {
    s += fmt::format("unrecognized: {} error-like line(s) no rule matched; the most frequent:\n",
                     a.extraction.unrecognized_lines);
    for (const auto& [key, u] : unrecognized) {
      s += fmt::format("  {:>6}x in {} source(s), first {}:{}: {}\n", u->count, u->source_hashes.size(), u->source,
                       u->line, u->text.substr(0, 160));
    }
  }
  return s;
}

}  // namespace attribution
