// Refiners: declarative explain rules and the built-in C++ refiners named in docs/rules.md.
// Every refiner marks items as explained (explained_by + rule id) or adds synthetic items; none
// deletes evidence. Iteration orders are fixed so results are deterministic.
#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <set>

#include "analysis.h"

namespace attribution {
namespace {

constexpr int64_t kSecond = 1000000000LL;

TimeNs sort_time(TimeNs t) { return t == kNoTime ? std::numeric_limits<TimeNs>::max() : t; }

bool matches_any(const std::vector<std::string>& globs, const std::string& id) {
  return std::any_of(globs.begin(), globs.end(), [&](const std::string& g) { return glob_match(g, id); });
}

bool starts_with(const std::string& s, std::string_view prefix) {
  return s.compare(0, prefix.size(), prefix) == 0;
}

int64_t to_int(const std::string& s, int64_t fallback = -1) {
  int64_t v = 0;
  auto r = std::from_chars(s.data(), s.data() + s.size(), v);
  return r.ec == std::errc() ? v : fallback;
}

// Items ordered as candidate causes: priority desc, first seen asc, then key.
std::vector<int> by_strength(const Analysis& a, const std::vector<int>& idx) {
  std::vector<int> out = idx;
  std::sort(out.begin(), out.end(), [&](int x, int y) {
    const Item& ix = a.items[x];
    const Item& iy = a.items[y];
    if (ix.attrs.priority != iy.attrs.priority) return ix.attrs.priority > iy.attrs.priority;
    if (sort_time(ix.first()) != sort_time(iy.first())) return sort_time(ix.first()) < sort_time(iy.first());
    return ix.key < iy.key;
  });
  return out;
}

// Combines records of items into one synthetic record (first/last seen, counts, evidence).
SymptomRecord combine(const Analysis& a, const std::vector<int>& idx) {
  SymptomRecord r;
  std::vector<EvidenceLine> ev;
  for (int i : idx) {
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
  return r;
}

SymptomAttrs attrs_for(const Analysis& a, const std::string& id, SymptomAttrs fallback) {
  SymptomAttrs from_rules = a.rules.attributes(id, {});
  return from_rules.resolved ? from_rules : fallback;
}

SymptomAttrs make_attrs(std::string label, std::string domain, std::string outcome, int priority) {
  SymptomAttrs s;
  s.label = std::move(label);
  s.domain = std::move(domain);
  s.outcome = std::move(outcome);
  s.role = "cause";
  s.priority = priority;
  s.resolved = true;
  return s;
}

void xid_followups(const Refiner& r, Analysis& a) {
  std::map<std::pair<std::string, std::string>, std::vector<int>> per_gpu;
  for (int i = 0; i < static_cast<int>(a.items.size()); ++i) {
    const Item& it = a.items[i];
    if (it.filtered || !starts_with(it.key.id, "gpu.xid.")) continue;
    per_gpu[{it.key.node, it.key.gpu}].push_back(i);
  }
  for (auto& [gpu, idx] : per_gpu) {
    std::sort(idx.begin(), idx.end(), [&](int x, int y) {
      return std::forward_as_tuple(sort_time(a.items[x].first()), a.items[x].key) <
             std::forward_as_tuple(sort_time(a.items[y].first()), a.items[y].key);
    });
    int primary = -1;
    for (int i : idx) {
      if (a.items[i].attrs.role == "cause" && a.items[i].active()) {
        primary = i;
        break;
      }
    }
    if (primary < 0) continue;
    for (int i : idx) {
      if (i == primary || !a.items[i].active()) continue;
      if (within_window(a.items[primary], a.items[i], 5 * kSecond, 600 * kSecond)) a.explain(i, primary, r.id);
    }
  }
}

void shared_software_xid(const Refiner& r, Analysis& a) {
  std::map<std::pair<std::string, std::string>, std::vector<int>> groups;  // (node, id)
  for (int i = 0; i < static_cast<int>(a.items.size()); ++i) {
    const Item& it = a.items[i];
    if (!it.active() || (it.key.id != "gpu.xid.13" && it.key.id != "gpu.xid.31")) continue;
    groups[{it.key.node, it.key.id}].push_back(i);
  }
  for (const auto& [g, idx] : groups) {
    std::set<std::string> gpus;
    TimeNs lo = kNoTime, hi = kNoTime;
    for (int i : idx) {
      gpus.insert(a.items[i].key.gpu);
      TimeNs t = a.items[i].first();
      if (t == kNoTime) continue;
      lo = lo == kNoTime ? t : std::min(lo, t);
      hi = hi == kNoTime ? t : std::max(hi, t);
    }
    if (gpus.size() < 3) continue;
    if (lo != kNoTime && hi - lo > 60 * kSecond) continue;
    std::string code = g.second.substr(8);
    SymptomAttrs attrs = attrs_for(
        a, "application.gpu_fault.shared_xid",
        make_attrs(fmt::format("Xid {} on {} GPUs of {} within seconds: a fault in shared software "
                               "(e.g. a collective kernel), not {} broken GPUs",
                               code, gpus.size(), g.first, gpus.size()),
                   "application", "application.gpu_fault", 55));
    SymptomKey key{"application.gpu_fault.shared_xid", g.first, kNoRank, ""};
    SymptomRecord rec = combine(a, idx);
    rec.fields["xid"] = code;
    rec.fields["gpus"] = std::to_string(gpus.size());
    int s = a.add_synthetic(key, attrs, std::move(rec), false);
    for (int i : idx) a.explain(i, s, r.id);
  }
}

std::string strip_peer(std::string peer) {
  auto lt = peer.find('<');
  if (lt != std::string::npos) peer.resize(lt);
  auto pct = peer.find('%');
  if (pct != std::string::npos) peer.resize(pct);
  if (starts_with(peer, "::ffff:")) peer = peer.substr(7);
  return peer;
}

void peer_convergence(const Refiner& r, Analysis& a) {
  std::map<std::string, std::string> ip_to_node;
  for (const Item& it : a.items) {
    if (it.key.id != "net.address") continue;
    std::string ip = strip_peer(it.field("ip"));
    std::string host = it.field("host").empty() ? it.key.node : it.field("host");
    if (!ip.empty() && !host.empty()) ip_to_node.emplace(ip, host);
  }
  std::set<std::string> nodes(a.context.nodes.begin(), a.context.nodes.end());
  for (const auto& [rank, node] : a.context.ranks) nodes.insert(node);
  auto resolve = [&](const std::string& raw) -> std::string {
    std::string peer = strip_peer(raw);
    if (peer.empty()) return "";
    if (nodes.count(peer)) return peer;
    auto it = ip_to_node.find(peer);
    if (it != ip_to_node.end()) return it->second;
    for (const auto& n : nodes) {
      if (starts_with(peer, n + ".")) return n;  // FQDN
    }
    return "";
  };
  std::map<std::string, std::vector<int>> by_peer;
  for (int i = 0; i < static_cast<int>(a.items.size()); ++i) {
    const Item& it = a.items[i];
    if (!it.active()) continue;
    bool peer_kind = starts_with(it.key.id, "nccl.remote_error") ||
                     starts_with(it.key.id, "nccl.connection_closed") ||
                     starts_with(it.key.id, "nccl.socket_error") ||
                     starts_with(it.key.id, "ib.completion_error.");
    if (!peer_kind) continue;
    std::string node = resolve(it.field("peer"));
    if (node.empty() || node == it.key.node) continue;
    by_peer[node].push_back(i);
  }
  int strongest_elsewhere = 0;
  for (const Item& it : a.items) {
    if (it.active() && it.attrs.role == "cause") strongest_elsewhere = std::max(strongest_elsewhere, it.attrs.priority);
  }
  for (const auto& [peer, reporters] : by_peer) {
    std::vector<int> causes;
    for (int i = 0; i < static_cast<int>(a.items.size()); ++i) {
      const Item& it = a.items[i];
      if (it.active() && it.attrs.role == "cause" && it.key.node == peer) causes.push_back(i);
    }
    if (!causes.empty()) {
      int cause = by_strength(a, causes).front();
      for (int i : reporters) a.explain(i, cause, r.id);
      continue;
    }
    std::set<std::string> reporter_nodes;
    std::set<int> reporter_ranks;
    for (int i : reporters) {
      reporter_nodes.insert(a.items[i].key.node);
      if (a.items[i].key.rank != kNoRank) reporter_ranks.insert(a.items[i].key.rank);
    }
    // Who reported: distinct ranks when the lines name them, else distinct reports.
    std::string who = reporter_ranks.empty() ? fmt::format("{} report(s)", reporters.size())
                                             : fmt::format("{} rank(s)", reporter_ranks.size());
    if (reporters.size() < 2 || strongest_elsewhere >= 70) continue;
    std::string ip = strip_peer(a.items[reporters.front()].field("peer"));
    SymptomAttrs attrs = attrs_for(
        a, "network.peer_unreachable",
        make_attrs(fmt::format("{} on {} node(s) lost their connection to {} ({}); the collected "
                               "evidence shows no crash there",
                               who, reporter_nodes.size(), peer, ip),
                   "network", "network.fabric", 40));
    SymptomRecord rec = combine(a, reporters);
    rec.fields["peer"] = ip;
    int s = a.add_synthetic({"network.peer_unreachable", peer, kNoRank, ""}, attrs, std::move(rec), true);
    for (int i : reporters) a.explain(i, s, r.id);
  }
}

void ib_error_at_start(const Refiner& r, Analysis& a) {
  std::vector<int> errors;
  for (int i = 0; i < static_cast<int>(a.items.size()); ++i) {
    const Item& it = a.items[i];
    if (it.filtered) continue;
    if ((it.key.id == "ib.port_error" || it.key.id == "net.link_down") && it.active()) return;
    if (it.key.id == "ib.completion_error.12" && it.active()) errors.push_back(i);
  }
  if (errors.empty() || a.job_start == kNoTime) return;
  TimeNs first = kNoTime;
  bool first_inferred = false;
  for (int i : errors) {
    TimeNs t = a.items[i].first();
    if (t != kNoTime && (first == kNoTime || t < first)) {
      first = t;
      const auto& ev = a.items[i].rec->evidence;
      first_inferred = !ev.empty() && std::all_of(ev.begin(), ev.end(), [](const EvidenceLine& e) { return e.time_inferred; });
    }
  }
  if (first == kNoTime || first - a.job_start > 300 * kSecond) return;
  std::set<std::string> nodes;
  for (int i : errors) nodes.insert(a.items[i].key.node);
  // An inferred time is the last stamp before the unstamped error lines: a lower bound.
  std::string when = first_inferred
                         ? fmt::format("early in the job (the error lines carry no time; the last stamp before "
                                       "them is {} s after job start)",
                                       (first - a.job_start) / kSecond)
                         : fmt::format("within {} s of job start", (first - a.job_start) / kSecond);
  SymptomAttrs attrs = attrs_for(
      a, "network.ib_configuration",
      make_attrs(fmt::format("IB completion error 12 (transport retry counter exceeded) {} on {} node(s): "
                             "fabric configuration (GID index, routing, RoCE settings), not a failing link",
                             when, nodes.size()),
                 "network", "network.configuration", 70));
  int s = a.add_synthetic({"network.ib_configuration", "", kNoRank, ""}, attrs, combine(a, errors), false);
  for (int i : errors) a.explain(i, s, r.id);
}

void late_cuda_oom(const Refiner& r, Analysis& a) {
  int first_timeout = -1;
  for (int i = 0; i < static_cast<int>(a.items.size()); ++i) {
    const Item& it = a.items[i];
    if (it.filtered || it.key.id != "nccl.watchdog_timeout" || it.first() == kNoTime) continue;
    if (first_timeout < 0 || it.first() < a.items[first_timeout].first()) first_timeout = i;
  }
  if (first_timeout < 0) return;
  for (int i = 0; i < static_cast<int>(a.items.size()); ++i) {
    Item& it = a.items[i];
    if (!it.active() || !starts_with(it.key.id, "cuda.oom")) continue;
    if (it.first() != kNoTime && it.first() >= a.items[first_timeout].first()) a.explain(i, first_timeout, r.id);
  }
}

void seqnum_straggler(const Refiner& r, Analysis& a) {
  std::vector<int> timeouts;
  std::map<int, int64_t> max_seq;  // rank → highest SeqNum it timed out on
  std::map<int, int64_t> last_completed;
  std::string op, numel;
  for (int i = 0; i < static_cast<int>(a.items.size()); ++i) {
    const Item& it = a.items[i];
    if (!it.active()) continue;
    if (it.key.id == "nccl.watchdog_timeout") {
      timeouts.push_back(i);
      int64_t seq = to_int(it.field("seq"));
      if (it.key.rank != kNoRank && seq >= 0) {
        auto& m = max_seq[it.key.rank];
        m = std::max(m, seq);
      }
    } else if (it.key.id == "nccl.watchdog_progress") {
      timeouts.push_back(i);
      int64_t done = to_int(it.field("last_completed"));
      if (it.key.rank != kNoRank && done >= 0) {
        auto [p, inserted] = last_completed.emplace(it.key.rank, done);
        if (!inserted) p->second = std::min(p->second, done);
      }
    }
  }
  if (timeouts.empty()) return;
  for (const Item& it : a.items) {
    if (it.active() && it.attrs.role == "cause" && it.attrs.priority > 30) return;  // a real cause exists
  }
  int64_t top = -1;
  for (const auto& [rank, seq] : max_seq) top = std::max(top, seq);
  std::set<int> universe;
  for (const auto& [rank, node] : a.context.ranks) universe.insert(rank);
  for (int rank : a.extraction.ranks_seen()) universe.insert(rank);
  std::set<int> reached;
  for (const auto& [rank, seq] : max_seq) {
    if (seq == top) reached.insert(rank);
  }
  std::vector<int> suspects;
  if (top >= 0) {
    for (int rank : universe) {
      if (!reached.count(rank)) suspects.push_back(rank);
    }
  }
  if (suspects.empty() && last_completed.size() >= 2) {
    int64_t low = std::numeric_limits<int64_t>::max();
    for (const auto& [rank, done] : last_completed) low = std::min(low, done);
    for (const auto& [rank, done] : last_completed) {
      if (done == low) suspects.push_back(rank);
    }
    if (suspects.size() == last_completed.size()) suspects.clear();  // all equal: no straggler
  }
  if (suspects.empty() || reached.size() + last_completed.size() == 0) return;
  auto node_of = [&](int rank) -> std::string {
    auto it = a.context.ranks.find(rank);
    if (it != a.context.ranks.end()) return it->second;
    for (const Item& item : a.items) {
      if (item.key.rank == rank && !item.key.node.empty()) return item.key.node;
    }
    return "";
  };
  std::set<std::string> suspect_nodes;
  for (int s : suspects) suspect_nodes.insert(node_of(s));
  if (suspects.size() > 2 && suspect_nodes.size() > 1) return;  // no single straggler
  int rank = suspects.front();
  for (int i : timeouts) {
    const Item& it = a.items[i];
    if (it.key.id == "nccl.watchdog_timeout" && to_int(it.field("seq")) == top) {
      op = it.field("op");
      numel = it.field("numel_in");
      break;
    }
  }
  std::string who = suspects.size() == 1 ? fmt::format("Rank {}", rank)
                                         : fmt::format("Ranks {}", fmt::join(suspects, ", "));
  std::string label;
  if (numel == "1") {
    label = fmt::format("{} never joined the 1-element collective{} (SeqNum {}) that {} rank(s) "
                        "timed out on: a barrier, so the rank was busy elsewhere (data loading, "
                        "checkpoint, evaluation)",
                        who, op.empty() ? "" : " " + op, top, reached.size());
  } else if (top >= 0) {
    label = fmt::format("{} never reached collective SeqNum {}{} that {} rank(s) timed out on",
                        who, top, op.empty() ? "" : " (" + op + ")", reached.size());
  } else {
    label = fmt::format("{} has the lowest completed collective; the other ranks waited on it", who);
  }
  SymptomAttrs attrs = attrs_for(a, "application.stuck_rank",
                                 make_attrs(label, "application", "application.stuck_rank", 30));
  attrs.label = label;
  attrs.indirect = true;
  SymptomRecord rec = combine(a, timeouts);
  rec.count = suspects.size();
  rec.fields["rank"] = std::to_string(rank);
  if (top >= 0) rec.fields["seq"] = std::to_string(top);
  if (!op.empty()) rec.fields["op"] = op;
  if (!numel.empty()) rec.fields["numel_in"] = numel;
  int s = a.add_synthetic({"application.stuck_rank", node_of(rank), rank, ""}, attrs, std::move(rec), true);
  for (int i = 0; i < static_cast<int>(a.items.size()); ++i) {
    Item& it = a.items[i];
    if (i == s || !it.active() || it.attrs.role != "victim") continue;
    a.explain(i, s, r.id);
  }
}

void scheduler_state(const Refiner& /*r*/, Analysis& a) {
  std::string native = a.context.terminal_state.empty() ? a.context.state : a.context.terminal_state;
  std::string state = normalize_terminal_state(native);
  struct Mapping {
    const char* state;
    const char* id;
    const char* domain;
    const char* outcome;
    int priority;
    const char* label;
  };
  static const Mapping kMap[] = {
      {"TIMEOUT", "scheduler.state.timeout", "scheduler", "scheduler.time_limit", 60, "the scheduler ended the job at its time limit"},
      {"PREEMPTED", "scheduler.state.preempted", "scheduler", "scheduler.preempted", 60, "the scheduler preempted the job"},
      {"CANCELLED", "scheduler.state.cancelled", "scheduler", "scheduler.cancelled", 20, "the job was cancelled"},
      {"NODE_FAIL", "scheduler.state.node_fail", "node", "node.unreachable", 75, "the scheduler reports a node failure"},
      {"OUT_OF_MEMORY", "scheduler.state.out_of_memory", "application", "application.memory_limit", 65, "the scheduler reports the job ran out of its memory limit"},
      {"EVICTED", "scheduler.state.evicted", "scheduler", "scheduler.evicted", 60, "the job's pods were evicted"},
  };
  for (const auto& m : kMap) {
    if (state != m.state) continue;
    SymptomAttrs attrs = attrs_for(a, m.id, make_attrs(m.label, m.domain, m.outcome, m.priority));
    attrs.indirect = true;
    SymptomRecord rec;
    rec.count = 1;
    rec.first_seen = rec.last_seen = a.context.end;
    rec.fields["state"] = native;
    if (!a.context.reason.empty()) rec.fields["reason"] = a.context.reason;
    if (!a.context.exit_code.empty()) rec.fields["exit_code"] = a.context.exit_code;
    EvidenceLine ev;
    ev.t = a.context.end;
    ev.kind = ObservationKind::kScheduler;
    ev.source = "execution context";
    ev.text = fmt::format("{} job {} state={}{}{}", a.context.scheduler, a.context.id, native,
                          a.context.exit_code.empty() ? "" : " exit_code=" + a.context.exit_code,
                          a.context.reason.empty() ? "" : " reason=" + a.context.reason);
    ev.rule = "refine.scheduler-state";
    rec.evidence.push_back(std::move(ev));
    std::string node;
    if (state == "NODE_FAIL" && a.context.nodes.size() == 1) node = a.context.nodes.front();
    a.add_synthetic({m.id, node, kNoRank, ""}, attrs, std::move(rec), true);
  }
}

}  // namespace

int Analysis::add_synthetic(SymptomKey key, SymptomAttrs attrs, SymptomRecord record, bool indirect) {
  synthetic_records.push_back(std::move(record));
  Item item;
  item.key = std::move(key);
  item.rec = &synthetic_records.back();
  item.attrs = std::move(attrs);
  item.label = render_label(item.attrs.label, item.rec->fields);
  item.indirect = indirect || item.attrs.indirect;
  item.synthetic = true;
  items.push_back(std::move(item));
  return static_cast<int>(items.size()) - 1;
}

void Analysis::explain(int effect, int cause, const std::string& rule) {
  if (effect == cause || items[effect].explained_by >= 0) return;
  items[effect].explained_by = cause;
  items[effect].explained_rule = rule;
}

bool within_window(const Item& cause, const Item& effect, int64_t before_ns, int64_t within_ns) {
  TimeNs c = cause.first(), e = effect.first();
  if (c == kNoTime || e == kNoTime) return true;
  return e >= c - before_ns && e <= c + within_ns;
}

void run_declarative_refiner(const Refiner& r, Analysis& a) {
  std::vector<int> causes;
  for (int i = 0; i < static_cast<int>(a.items.size()); ++i) {
    const Item& it = a.items[i];
    if (!it.active() || !matches_any(r.cause, it.key.id)) continue;
    if (!r.cause_role.empty() && it.attrs.role != r.cause_role) continue;
    causes.push_back(i);
  }
  for (int c : by_strength(a, causes)) {
    if (!a.items[c].active()) continue;
    const Item& cause = a.items[c];
    for (int e = 0; e < static_cast<int>(a.items.size()); ++e) {
      Item& effect = a.items[e];
      if (e == c || !effect.active() || !matches_any(r.explains, effect.key.id)) continue;
      if (effect.attrs.role == "cause" && effect.attrs.priority > cause.attrs.priority) continue;
      if (r.scope == "same_node" && (effect.key.node.empty() || effect.key.node != cause.key.node)) continue;
      if (r.scope == "same_gpu" && (effect.key.node != cause.key.node || effect.key.gpu != cause.key.gpu)) continue;
      if (r.scope == "same_rank" && (effect.key.rank == kNoRank || effect.key.rank != cause.key.rank)) continue;
      if (!within_window(cause, effect, r.before_ns, r.within_ns)) continue;
      a.explain(e, c, r.id);
    }
  }
}

void run_builtin_refiner(const Refiner& r, Analysis& a) {
  if (r.builtin == "xid_followups") xid_followups(r, a);
  else if (r.builtin == "shared_software_xid") shared_software_xid(r, a);
  else if (r.builtin == "peer_convergence") peer_convergence(r, a);
  else if (r.builtin == "ib_error_at_start") ib_error_at_start(r, a);
  else if (r.builtin == "late_cuda_oom") late_cuda_oom(r, a);
  else if (r.builtin == "seqnum_straggler") seqnum_straggler(r, a);
  else if (r.builtin == "scheduler_state") scheduler_state(r, a);
}

std::string render_label(const std::string& label, const std::map<std::string, std::string>& fields) {
  if (label.find('{') == std::string::npos) return label;
  std::string out;
  size_t i = 0;
  while (i < label.size()) {
    if (label[i] == '{') {
      size_t close = label.find('}', i);
      if (close != std::string::npos) {
        auto it = fields.find(label.substr(i + 1, close - i - 1));
        out += it == fields.end() ? "?" : it->second;
        i = close + 1;
        continue;
      }
    }
    out += label[i++];
  }
  return out;
}

}  // namespace attribution
