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
    if (ix.attrs->priority != iy.attrs->priority) return ix.attrs->priority > iy.attrs->priority;
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

// How deep a cause sits: 1 the workload's own code, 2 driver or software state (the GPU driver,
// the host kernel), 3 hardware or firmware (GPU, host, PCIe) and the host's configuration. A
// consequence is explained only by a cause at least as deep: an application fault never explains a
// later hardware fault, and a kernel stall can be the GPU driver's.
int depth(const Item& it) {
  if (it.attrs->domain == "application") return 1;
  const std::string& o = it.attrs->outcome;
  if (o == "gpu.driver" || o == "node.kernel") return 2;
  if (starts_with(o, "gpu.") || starts_with(o, "node.")) return 3;
  return 2;
}

bool may_explain(const Item& cause, const Item& effect) {
  if (effect.attrs->role != "cause") return true;
  return depth(effect) < 3 || depth(cause) >= depth(effect);
}

// Distinct process ids named by the kept evidence lines of an Xid ("pid=1234").
std::set<std::string> xid_pids(const Item& it) {
  std::set<std::string> pids;
  for (const auto& e : it.rec->evidence) {
    auto p = e.text.find("pid=");
    if (p == std::string::npos) continue;
    size_t q = p + 4;
    size_t end = q;
    while (end < e.text.size() && e.text[end] >= '0' && e.text[end] <= '9') ++end;
    if (end > q) pids.insert(e.text.substr(q, end - q));
  }
  const std::string& first = it.field("pid");
  if (!first.empty() && first.find_first_not_of("0123456789") == std::string::npos) pids.insert(first);
  return pids;
}

// Where an item's earliest kept line is: (source, line); items without evidence sort last.
std::pair<std::string_view, uint64_t> log_position(const Item& it) {
  if (it.rec->evidence.empty()) return {"\xff", 0};
  const EvidenceLine& e = it.rec->evidence.front();
  return {e.source.view(), e.line};
}

// A later Xid that the catalogue puts on the driver as well as the hardware ("drv/hw", not "hw"
// alone) and that names a process the earlier application fault named (a real pid, not 0).
bool same_context_aftermath(const Item& app_fault, const Item& later) {
  auto detail = later.attrs->extra.find("class_detail");
  if (detail == later.attrs->extra.end() || !detail->second.starts_with("drv")) return false;
  std::set<std::string> a = xid_pids(app_fault), b = xid_pids(later);
  for (const auto& pid : a) {
    if (pid != "0" && b.count(pid) != 0) return true;
  }
  return false;
}

// Xid 45 says "caused by previous Xid N": the earlier Xid is a cause even when its own line was
// not collected (ring buffer rotated, journal cut). Adds it as an implied item on that GPU.
void implied_xids(const Refiner& r, Analysis& a) {
  size_t n = a.items.size();
  for (size_t i = 0; i < n; ++i) {
    if (a.items[i].filtered || a.items[i].key.id != "gpu.xid.45") continue;
    std::string prev = a.items[i].field("prev_xid");
    if (prev.empty() || prev == "45") continue;
    std::string id = "gpu.xid." + prev;
    int found = -1;
    for (size_t j = 0; j < a.items.size(); ++j) {
      const Item& o = a.items[j];
      if (o.key.id == id && o.key.node == a.items[i].key.node && o.key.gpu == a.items[i].key.gpu) found = static_cast<int>(j);
    }
    if (found < 0) {
      Fields f = {{"_catalog", "xid"}, {"_catalog_key", prev}, {"xid", prev}};
      SymptomAttrs attrs = a.rules.attributes(id, f);
      if (!attrs.resolved) continue;
      SymptomRecord rec = combine(a, {static_cast<int>(i)});
      rec.fields["xid"] = prev;
      rec.fields["implied_by"] = "gpu.xid.45";
      for (const auto& [k, v] : attrs.extra) rec.fields[k] = v;
      attrs.label = fmt::format("{} — implied: the driver's Xid 45 says it followed Xid {}, whose own line was not collected",
                                render_label(attrs.label, rec.fields), prev);
      if (attrs.role != "cause") continue;
      found = a.add_synthetic({id, a.items[i].key.node, kNoRank, a.items[i].key.gpu}, attrs, std::move(rec), true);
    }
    a.explain(static_cast<int>(i), found, r.id);
  }
}

void xid_followups(const Refiner& r, Analysis& a) {
  implied_xids(r, a);
  std::map<std::pair<std::string, std::string>, std::vector<int>> per_gpu;
  for (int i = 0; i < static_cast<int>(a.items.size()); ++i) {
    const Item& it = a.items[i];
    if (it.filtered || !starts_with(it.key.id, "gpu.xid.")) continue;
    per_gpu[{it.key.node, it.key.gpu}].push_back(i);
  }
  for (auto& [gpu, idx] : per_gpu) {
    // By time; lines without one (or at the same instant) in the order the log printed them.
    std::sort(idx.begin(), idx.end(), [&](int x, int y) {
      return std::make_tuple(sort_time(a.items[x].first()), log_position(a.items[x]), std::cref(a.items[x].key)) <
             std::make_tuple(sort_time(a.items[y].first()), log_position(a.items[y]), std::cref(a.items[y].key));
    });
    int primary = -1;
    for (int i : idx) {
      if (a.items[i].attrs->role == "cause" && a.items[i].active()) {
        primary = i;
        break;
      }
    }
    if (primary < 0) continue;
    for (int i : idx) {
      if (i == primary || !a.items[i].active()) continue;
      if (!may_explain(a.items[primary], a.items[i])) continue;
      if (within_window(a.items[primary], a.items[i], 5 * kSecond, 600 * kSecond)) a.explain(i, primary, r.id);
    }
    // An application-class Xid first, then a hardware one on the same GPU: the hardware Xid is the
    // root and the earlier fault its symptom — unless the later Xid is one the catalogue also puts on
    // the driver (class_detail "drv/hw": a context-switch timeout, a copy-engine exception) and it
    // names the process that faulted: then it is that faulted context failing to be switched out or
    // torn down, the fault's aftermath, and the application fault stays the root.
    if (depth(a.items[primary]) == 1) {
      for (int i : idx) {
        if (i == primary || !a.items[i].active() || a.items[i].attrs->role != "cause" || depth(a.items[i]) < 3) continue;
        if (!within_window(a.items[i], a.items[primary], 600 * kSecond, 5 * kSecond)) continue;
        if (same_context_aftermath(a.items[primary], a.items[i])) {
          a.explain(i, primary, r.id);
          continue;
        }
        a.explain(primary, i, r.id);
        break;
      }
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
    std::string host = it.field("host").empty() ? it.key.node.str() : it.field("host");
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
    if (it.active() && it.attrs->role == "cause") strongest_elsewhere = std::max(strongest_elsewhere, it.attrs->priority);
  }
  for (const auto& [peer, reporters] : by_peer) {
    std::vector<int> causes;
    for (int i = 0; i < static_cast<int>(a.items.size()); ++i) {
      const Item& it = a.items[i];
      if (it.active() && it.attrs->role == "cause" && it.key.node == peer) causes.push_back(i);
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

constexpr double kGiB = 1073741824.0;

// "14.76 GiB", "520.00 MiB", "3 bytes" -> bytes; negative when the text is not a size.
double size_in_bytes(const std::string& s) {
  char* end = nullptr;
  double v = std::strtod(s.c_str(), &end);
  if (end == s.c_str() || v < 0) return -1;
  std::string unit(end);
  while (!unit.empty() && unit.front() == ' ') unit.erase(0, 1);
  static const std::map<std::string, double> kUnits = {
      {"bytes", 1.0}, {"B", 1.0}, {"KiB", 1024.0}, {"KB", 1024.0}, {"MiB", 1048576.0}, {"MB", 1048576.0},
      {"GiB", kGiB}, {"GB", kGiB}, {"TiB", 1099511627776.0}, {"TB", 1099511627776.0}};
  auto u = kUnits.find(unit);
  return u == kUnits.end() ? -1 : v * u->second;
}

// Replaces CUDA OOM item i by an indirect synthetic `id` of the same outcome that says why the OOM's own
// figures do not show the workload's appetite: the verdict stays the OOM, probable rather than definitive.
void demote_oom(const Refiner& r, Analysis& a, size_t i, const std::string& id, std::string label) {
  const Item& it = a.items[i];
  SymptomAttrs attrs =
      attrs_for(a, id, make_attrs(std::move(label), it.attrs->domain, it.attrs->outcome, it.attrs->priority));
  attrs.indirect = true;
  int s = a.add_synthetic({id, it.key.node, it.key.rank, it.key.gpu}, attrs, combine(a, {static_cast<int>(i)}), true);
  a.explain(static_cast<int>(i), s, r.id);
}

std::string oom_gpu(const Item& it) { return it.field("gpu").empty() ? "?" : it.field("gpu"); }

// The GPU memory an OOM report leaves to no one it names: its total capacity minus what is free minus what the
// report attributes (known_text, a size such as "520.00 MiB"). Negative when a figure is missing or not a size.
double unattributed_bytes(const Item& it, const std::string& known_text) {
  const double total = size_in_bytes(it.field("total"));
  const double free_bytes = size_in_bytes(it.field("free"));
  const double known = size_in_bytes(known_text);
  if (total <= 0 || free_bytes < 0 || known < 0) return -1;
  return total - free_bytes - known;
}

// A CUDA OOM whose own figures leave much of the GPU unaccounted for: total capacity minus what is free
// minus what this process holds (PyTorch's reserved memory, or since 2.0 everything the process has) is
// memory held outside it — a co-tenant on a shared or time-sliced GPU, a leftover of an earlier job,
// another rank of the job on the same GPU. At least a quarter of the GPU and 2 GiB, so the process's own
// context and small buffers do not count. Returns whether the OOM was demoted.
bool oom_memory_held_elsewhere(const Refiner& r, Analysis& a, size_t i) {
  const Item& it = a.items[i];
  const std::string held_text = it.field("held").empty() ? it.field("reserved") : it.field("held");
  const double other = unattributed_bytes(it, held_text);
  if (other < 2.0 * kGiB || other < 0.25 * size_in_bytes(it.field("total"))) return false;
  demote_oom(r, a, i, "inferred.oom_memory_held_elsewhere",
             fmt::format("CUDA out of memory on GPU {}: of its {} total, {} is free and this process holds "
                         "{}, so {:.1f} GiB is held outside it: another process on the GPU (a co-tenant of a "
                         "shared or time-sliced GPU, a leftover of an earlier job, another rank of this job "
                         "placed on the same GPU) or, in PyTorch before 2.0, this process's memory outside "
                         "PyTorch's allocator",
                         oom_gpu(it), it.field("total"), it.field("free"), held_text, other / kGiB));
  return true;
}

// A CUDA OOM whose report names one process's memory but not this process's (PyTorch lists every process on the
// GPU, "Process %d has %s memory in use", and itself as "this process has"; inside a container NVML's host PID is
// not the process's own, so the one named may be this process) and leaves at least 2 GiB and a tenth of the GPU in
// use by no process it names: at least two processes shared the GPU, and the report does not say which one is
// this. Returns whether the OOM was demoted.
bool oom_held_by_named_process(const Refiner& r, Analysis& a, size_t i) {
  const Item& it = a.items[i];
  if (!it.field("held").empty() || !it.field("reserved").empty()) return false;
  const double rest = unattributed_bytes(it, it.field("other_held"));
  if (rest < 2.0 * kGiB || rest < 0.1 * size_in_bytes(it.field("total"))) return false;
  demote_oom(r, a, i, "inferred.oom_held_by_named_process",
             fmt::format("CUDA out of memory on GPU {}: of its {} total, {} is free, one process named in the report "
                         "holds {} and {:.1f} GiB is held by processes it does not name, nor does it name this one: "
                         "the GPU was shared by at least two processes, and whose appetite filled it is not shown",
                         oom_gpu(it), it.field("total"), it.field("free"), it.field("other_held"), rest / kGiB));
  return true;
}

// A CUDA OOM whose own report says more was free than it asked for (at least twice the request and a GiB):
// the figures were read after memory was released, or the failing allocator was not the one the figures
// describe; what filled the GPU is not shown. Returns whether the OOM was demoted.
bool oom_free_exceeds_request(const Refiner& r, Analysis& a, size_t i) {
  const Item& it = a.items[i];
  const double tried = size_in_bytes(it.field("tried"));
  const double free_bytes = size_in_bytes(it.field("free"));
  if (tried <= 0 || free_bytes < 2.0 * tried || free_bytes < kGiB) return false;
  demote_oom(r, a, i, "inferred.oom_free_exceeds_request",
             fmt::format("CUDA out of memory on GPU {}: it tried to allocate {} while its own report says {} "
                         "was free: the figures were read after memory was released, or another allocator "
                         "refused the request; what filled the GPU is not shown",
                         oom_gpu(it), it.field("tried"), it.field("free")));
  return true;
}

// An OOM whose own figures do not show the workload's appetite stays an OOM but is probable, not
// definitive: memory held outside the process, or more free than was asked for.
void cuda_oom_held_elsewhere(const Refiner& r, Analysis& a) {
  const size_t n = a.items.size();
  for (size_t i = 0; i < n; ++i) {
    const Item& it = a.items[i];
    if (!it.active() || it.key.id != "cuda.oom") continue;
    if (oom_memory_held_elsewhere(r, a, i)) continue;
    if (oom_held_by_named_process(r, a, i)) continue;
    oom_free_exceeds_request(r, a, i);
  }
}

// The attributes of a synthesized application.stuck_rank (indirect: inferred from which ranks waited where),
// with the label that says why.
SymptomAttrs stuck_rank_attrs(const Analysis& a, const std::string& label) {
  SymptomAttrs attrs = attrs_for(a, "application.stuck_rank",
                                 make_attrs(label, "application", "application.stuck_rank", 30));
  attrs.label = label;
  attrs.indirect = true;
  return attrs;
}

// Every active victim is explained by the synthesized cause s.
void explain_victims(const Refiner& r, Analysis& a, int s) {
  for (int i = 0; i < static_cast<int>(a.items.size()); ++i) {
    if (i != s && a.items[i].active() && a.items[i].attrs->role == "victim") a.explain(i, s, r.id);
  }
}

// An operation name without the API variant that issued it ("_ALLGATHER_BASE" and "ALLGATHER" are both
// all-gathers, "_REDUCE_SCATTER_BASE" a reduce-scatter).
std::string collective_kind(std::string op) {
  if (!op.empty() && op.front() == '_') op.erase(0, 1);
  for (std::string_view suffix : {std::string_view("_BASE"), std::string_view("_COALESCED")}) {
    if (op.size() > suffix.size() && op.compare(op.size() - suffix.size(), suffix.size(), suffix) == 0)
      op.erase(op.size() - suffix.size());
  }
  return op;
}

// Two ranks that timed out on the same collective of one process group (same SeqNum, same group when the
// lines name it) in different operations, or in an all-reduce/broadcast/reduce of different sizes, were not
// running the same code: a rank-dependent branch (evaluation, logging or checkpointing on some ranks, an
// uneven last batch, a conditional gather) put their collectives out of step, and each waits for a partner
// that is calling something else. Which rank strayed the lines do not say. Returns whether it was found.
bool collective_divergence(const Refiner& r, Analysis& a, const std::vector<int>& timeouts) {
  struct Seen {
    int rank;
    std::string op, numel;
  };
  std::map<std::pair<std::string, int64_t>, Seen> first;  // (group, SeqNum) -> the first rank seen there
  for (int i : timeouts) {
    const Item& it = a.items[i];
    if (it.key.id != "nccl.watchdog_timeout" || it.key.rank == kNoRank) continue;
    const int64_t seq = to_int(it.field("seq"));
    const std::string& op = it.field("op");
    if (seq < 0 || op.empty()) continue;
    auto [p, inserted] = first.emplace(std::make_pair(it.field("pg"), seq), Seen{it.key.rank, op, it.field("numel_in")});
    const Seen& s = p->second;
    if (inserted || s.rank == it.key.rank) continue;
    const std::string kind = collective_kind(op);
    const bool op_differs = collective_kind(s.op) != kind;
    const bool sized = kind == "ALLREDUCE" || kind == "BROADCAST" || kind == "REDUCE";
    const std::string& numel = it.field("numel_in");
    const bool size_differs = !op_differs && sized && !s.numel.empty() && !numel.empty() && s.numel != numel;
    if (!op_differs && !size_differs) continue;
    const std::string label =
        op_differs
            ? fmt::format("ranks {} and {} timed out on the same collective of their group (SeqNum {}) in different "
                          "operations, {} and {}: their code paths diverged (a rank-dependent branch such as "
                          "evaluation, logging or checkpointing on some ranks, an uneven last batch), so their "
                          "collectives no longer pair up",
                          s.rank, it.key.rank, seq, s.op, op)
            : fmt::format("ranks {} and {} timed out on the same {} of their group (SeqNum {}) with different sizes, "
                          "{} and {} elements: the tensors differ across ranks (a rank-dependent shape or branch), so "
                          "the collectives no longer pair up",
                          s.rank, it.key.rank, s.op, seq, s.numel, numel);
    SymptomRecord rec = combine(a, timeouts);
    rec.fields["seq"] = std::to_string(seq);
    explain_victims(r, a, a.add_synthetic({"application.stuck_rank", "", kNoRank, ""}, stuck_rank_attrs(a, label),
                                          std::move(rec), true));
    return true;
  }
  return false;
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
    if (it.active() && it.attrs->role == "cause" && it.attrs->priority > 30) return;  // a real cause exists
  }
  int64_t top = -1;
  for (const auto& [rank, seq] : max_seq) top = std::max(top, seq);
  std::set<int> universe;
  for (const auto& [rank, node] : a.context.ranks) universe.insert(rank);
  for (int rank : a.extraction.ranks_seen()) universe.insert(rank);
  // Without a rank map the world is at least ranks 0..highest seen: a rank below the highest that
  // never timed out never arrived. (Only a missing highest rank goes unseen.)
  const bool inferred_universe = a.context.ranks.empty();
  if (inferred_universe && !universe.empty()) {
    for (int k = 0; k < *universe.rbegin() && k < 1000000; ++k) universe.insert(k);
  }
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
  // Inferred absence is believed only when most ranks are accounted for (one rank's log with a
  // timeout says nothing about the others).
  if (inferred_universe && !suspects.empty() && (suspects.size() > 2 || reached.size() < 2 * suspects.size()))
    suspects.clear();
  // A rank whose own timeout is at a lower SeqNum than the others' is behind them, whether or not a
  // source is its own (one merged log with rank prefixes on the lines): evidenced, not inferred.
  for (const auto& [rank, seq] : max_seq) {
    if (seq < top) suspects.push_back(rank);
  }
  std::sort(suspects.begin(), suspects.end());
  suspects.erase(std::unique(suspects.begin(), suspects.end()), suspects.end());
  // Ranks that log their own progress (steps, checkpoint saving, evaluation) and no timeout were
  // busy elsewhere while the others waited.
  std::set<int> progressing;
  for (const Item& it : a.items) {
    if (it.filtered || it.key.id != "app.progress" || it.key.rank == kNoRank) continue;
    if (!max_seq.count(it.key.rank) && !last_completed.count(it.key.rank)) progressing.insert(it.key.rank);
  }
  if (!progressing.empty() && progressing.size() <= 2 && !max_seq.empty()) {
    std::vector<int> both;
    for (int k : suspects)
      if (progressing.count(k)) both.push_back(k);
    suspects = both.empty() ? std::vector<int>(progressing.begin(), progressing.end()) : both;
  }
  if (suspects.empty() && last_completed.size() >= 2) {
    int64_t low = std::numeric_limits<int64_t>::max();
    for (const auto& [rank, done] : last_completed) low = std::min(low, done);
    for (const auto& [rank, done] : last_completed) {
      if (done == low) suspects.push_back(rank);
    }
    if (suspects.size() == last_completed.size()) suspects.clear();  // all equal: no straggler
  }
  if (suspects.empty()) {
    if (collective_divergence(r, a, timeouts)) return;
    // Every timed-out collective is a 1-element ALLREDUCE (a barrier in disguise) and nothing else
    // went wrong: some rank never joined it, busy in its own code. Which one, the logs cannot say.
    // Not when every timeout is on the group's first collective (SeqNum 1): that one also creates the
    // NCCL communicator lazily, so a hang there is as likely the communicator's setup (transport,
    // peer access) as a rank that never came.
    bool barrier = !timeouts.empty();
    bool first_collective = true;
    int reporters = 0;
    for (int i : timeouts) {
      const Item& it = a.items[i];
      if (it.key.id != "nccl.watchdog_timeout") continue;
      ++reporters;
      if (it.field("numel_in") != "1") barrier = false;
      if (to_int(it.field("seq")) > 1) first_collective = false;
    }
    if (!barrier || reporters == 0 || first_collective) return;
    std::string label = fmt::format(
        "the collective that timed out is a 1-element {} (a barrier): a rank that did not report never joined it, "
        "busy in its own code (data loading, checkpoint saving, evaluation); the collected logs do not show which",
        a.items[timeouts.front()].field("op").empty() ? "collective" : a.items[timeouts.front()].field("op"));
    explain_victims(r, a, a.add_synthetic({"application.stuck_rank", "", kNoRank, ""}, stuck_rank_attrs(a, label),
                                          combine(a, timeouts), true));
    return;
  }
  if (reached.size() + last_completed.size() == 0) return;
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
  SymptomRecord rec = combine(a, timeouts);
  rec.count = suspects.size();
  rec.fields["rank"] = std::to_string(rank);
  if (top >= 0) rec.fields["seq"] = std::to_string(top);
  if (!op.empty()) rec.fields["op"] = op;
  if (!numel.empty()) rec.fields["numel_in"] = numel;
  explain_victims(r, a, a.add_synthetic({"application.stuck_rank", node_of(rank), rank, ""}, stuck_rank_attrs(a, label),
                                        std::move(rec), true));
}

// The scheduler recorded the job as COMPLETED (its terminal state, else its state).
bool recorded_completed(const Analysis& a) {
  const ExecutionContext& c = a.context;
  return normalize_terminal_state(c.terminal_state.empty() ? c.state : c.terminal_state) == "COMPLETED";
}

// Nodes of one job whose library banners disagree (NCCL's "NCCL version X+cudaY", symptom
// nccl.version): the node(s) running a build no other node runs, when one build is run by more nodes
// than any other, are suspects (a stale image, a pip environment, a site plugin pinned to an old
// NCCL). A node that prints two builds itself is left out; a tie names no one; a job the scheduler
// recorded as COMPLETED is left alone. Indirect: the banners say what differs, not that it broke.
void version_outlier(const Refiner& /*r*/, Analysis& a) {
  if (recorded_completed(a)) return;
  std::map<std::string, std::set<std::string>> versions_of_node;
  std::map<std::pair<std::string, std::string>, std::vector<int>> items_of;  // (node, version) -> items
  for (int i = 0; i < static_cast<int>(a.items.size()); ++i) {
    const Item& it = a.items[i];
    if (it.key.id != "nccl.version" || it.key.node.empty()) continue;
    std::string version = it.field("version");
    if (version.empty()) continue;
    versions_of_node[it.key.node.str()].insert(version);
    items_of[{it.key.node.str(), version}].push_back(i);
  }
  std::map<std::string, std::vector<std::string>> nodes_of_version;
  for (const auto& [node, versions] : versions_of_node) {
    if (versions.size() == 1) nodes_of_version[*versions.begin()].push_back(node);
  }
  if (nodes_of_version.size() < 2) return;
  std::string majority;
  size_t most = 0;
  bool tie = false;
  for (const auto& [version, nodes] : nodes_of_version) {
    if (nodes.size() > most) {
      most = nodes.size();
      majority = version;
      tie = false;
    } else if (nodes.size() == most) {
      tie = true;
    }
  }
  if (tie) return;
  const std::vector<int>& reference = items_of[{nodes_of_version[majority].front(), majority}];
  for (const auto& [version, nodes] : nodes_of_version) {
    if (version == majority) continue;
    for (const std::string& node : nodes) {
      std::string label = fmt::format(
          "{} runs NCCL {} while {} other node(s) of the job run {}: mixed library builds in one job (an image, a "
          "Python environment or a plugin pinned to another version)",
          node, version, most, majority);
      SymptomAttrs attrs = attrs_for(a, "node.library_version_outlier",
                                     make_attrs(label, "node", "node.platform_config", 55));
      attrs.label = label;
      attrs.indirect = true;
      std::vector<int> idx = items_of[{node, version}];
      idx.push_back(reference.front());
      SymptomRecord rec = combine(a, idx);
      rec.fields["version"] = version;
      rec.fields["majority_version"] = majority;
      a.add_synthetic({"node.library_version_outlier", node, kNoRank, ""}, attrs, std::move(rec), true);
    }
  }
}

// Ranks that announce themselves at start-up (PyTorch Lightning's "GLOBAL_RANK: r, MEMBER: m/N") form a
// census: when some ranks of the world never announce while others do (some twice), the launcher
// started other processes than the world the program expects — run without srun, or Slurm's task
// count not matching nodes x devices. A restart announces every rank again, so only missing ranks
// count; a job the scheduler recorded as COMPLETED is left alone. Indirect: a bundle holding the logs
// of only some nodes also misses ranks. One rank other than 0 announcing once is an excerpt of one rank's
// output, not a census: every world that started has a rank 0.
void rank_census(const Refiner& /*r*/, Analysis& a) {
  if (recorded_completed(a)) return;
  std::map<int, std::map<int, std::vector<int>>> items_of_world;  // world -> rank -> items
  for (int i = 0; i < static_cast<int>(a.items.size()); ++i) {
    const Item& it = a.items[i];
    if (it.key.id != "launcher.rank_announced" || it.key.rank == kNoRank) continue;
    int world = 0;
    const std::string& w = it.field("world");
    auto res = std::from_chars(w.data(), w.data() + w.size(), world);
    if (res.ec != std::errc() || world < 2 || world > (1 << 20) || it.key.rank >= world) continue;
    items_of_world[world][it.key.rank].push_back(i);
  }
  for (const auto& [world, ranks] : items_of_world) {
    if (static_cast<int>(ranks.size()) >= world) continue;
    std::vector<int> idx;
    std::vector<int> twice;
    for (const auto& [rank, items] : ranks) {
      uint64_t n = 0;
      for (int i : items) {
        n += a.items[i].rec->count;
        idx.push_back(i);
      }
      if (n > 1) twice.push_back(rank);
    }
    if (ranks.size() == 1 && ranks.begin()->first != 0 && twice.empty()) continue;  // one excerpt, not a census
    std::vector<int> missing;
    for (int rank = 0; rank < world && missing.size() <= 8; ++rank)
      if (!ranks.count(rank)) missing.push_back(rank);
    auto list = [](const std::vector<int>& v) {
      std::string out;
      for (size_t k = 0; k < v.size() && k < 8; ++k) out += (k ? ", " : "") + std::to_string(v[k]);
      if (v.size() > 8) out += ", ...";
      return out;
    };
    std::string label = fmt::format(
        "only {} of the world's {} ranks announced themselves (never: {}){}: the launcher started other processes "
        "than the world the program expects (run without srun, or the scheduler's task count not matching nodes x "
        "devices)",
        ranks.size(), world, list(missing),
        twice.empty() ? std::string() : fmt::format(", and ranks {} announced twice", list(twice)));
    SymptomAttrs attrs = attrs_for(a, "launcher.rank_census_mismatch",
                                   make_attrs(label, "application", "application.exception", 40));
    attrs.label = label;
    attrs.indirect = true;
    SymptomRecord rec = combine(a, idx);
    rec.fields["world"] = std::to_string(world);
    rec.fields["announced"] = std::to_string(ranks.size());
    a.add_synthetic({"launcher.rank_census_mismatch", "", kNoRank, ""}, attrs, std::move(rec), true);
  }
}

// The same GPU raising an app-or-hardware Xid (13, 31 ...) in different processes or on different
// days, while the node's other GPUs do not, points at the GPU rather than at one program.
void repeat_gpu_fault(const Refiner& r, Analysis& a) {
  std::map<std::pair<std::string, std::string>, std::vector<int>> per_gpu;  // (node, gpu)
  std::map<std::string, std::set<std::string>> gpus_per_node;
  // The comparison "the node's other GPUs did not fault" needs another GPU there: one that some line
  // names, or the job's own ranks — two or more on the node (one GPU each). On a one-GPU node, or one
  // of which nothing says more, two runs of the same program faulting tell a program or driver fault
  // from a broken GPU no better than one.
  std::map<std::string, std::set<std::string>> gpus_seen;
  std::map<std::string, int> ranks_on;
  for (const auto& [rank, node] : a.context.ranks) ranks_on[node]++;
  for (int i = 0; i < static_cast<int>(a.items.size()); ++i) {
    const Item& it = a.items[i];
    if (!it.key.gpu.empty()) gpus_seen[it.key.node].insert(it.key.gpu);
    if (!it.active() || it.attrs->role != "cause" || !app_or_hardware_xid(it) || it.key.gpu.empty()) continue;
    per_gpu[{it.key.node, it.key.gpu}].push_back(i);
    gpus_per_node[it.key.node].insert(it.key.gpu);
  }
  for (const auto& [where, idx] : per_gpu) {
    if (gpus_per_node[where.first].size() > 1) continue;  // several GPUs of the node fault: software
    if (gpus_seen[where.first].size() < 2 && ranks_on[where.first] < 2) continue;  // no other GPU to compare with
    std::set<std::string> pids;
    TimeNs lo = kNoTime, hi = kNoTime;
    std::vector<int> all = idx;
    for (int i = 0; i < static_cast<int>(a.items.size()); ++i) {  // the GPU's faults before this job
      const Item& h = a.items[i];
      if (h.key.node == where.first && h.key.gpu == where.second && h.key.id.view().starts_with("history.gpu.xid.") &&
          h.attrs->extra.count("class") && h.attrs->extra.at("class") == "app")
        all.push_back(i);
    }
    for (int i : all) {
      for (const auto& p : xid_pids(a.items[i])) pids.insert(p);
      const SymptomRecord& rec = *a.items[i].rec;
      if (rec.first_seen != kNoTime) lo = lo == kNoTime ? rec.first_seen : std::min(lo, rec.first_seen);
      if (rec.last_seen != kNoTime) hi = hi == kNoTime ? rec.last_seen : std::max(hi, rec.last_seen);
    }
    bool days = lo != kNoTime && hi != kNoTime && hi - lo >= 86400 * kSecond;
    if (pids.size() < 2 && !days) continue;
    std::string why = pids.size() >= 2 ? fmt::format("in {} different processes", pids.size())
                                       : fmt::format("on {} different days", (hi - lo) / (86400 * kSecond) + 1);
    SymptomAttrs attrs = attrs_for(
        a, "gpu.repeat_fault",
        make_attrs(fmt::format("GPU {} of {} faulted {} (Xid {}) while the node's other GPUs did not: the GPU, "
                               "not one program",
                               where.second, where.first.empty() ? "the node" : where.first, why,
                               a.items[idx.front()].field("xid")),
                   "gpu", "gpu.hardware", 60));
    attrs.indirect = true;
    SymptomRecord rec = combine(a, all);
    rec.fields["xid"] = a.items[idx.front()].field("xid");
    rec.fields["processes"] = std::to_string(pids.size());
    int s = a.add_synthetic({"gpu.repeat_fault", where.first, kNoRank, where.second}, attrs, std::move(rec), true);
    for (int i : idx) a.explain(i, s, r.id);
  }
}

// Parses a Slurm task list ("0-5,7,9-11") into ranks; empty on anything else.
std::set<int> parse_task_list(const std::string& list) {
  std::set<int> out;
  size_t i = 0;
  while (i < list.size()) {
    size_t comma = list.find(',', i);
    std::string part = list.substr(i, comma == std::string::npos ? std::string::npos : comma - i);
    auto dash = part.find('-');
    int64_t lo = to_int(dash == std::string::npos ? part : part.substr(0, dash));
    int64_t hi = dash == std::string::npos ? lo : to_int(part.substr(dash + 1));
    if (lo < 0 || hi < lo || hi - lo > 1000000) return {};
    for (int64_t k = lo; k <= hi; ++k) out.insert(static_cast<int>(k));
    if (comma == std::string::npos) break;
    i = comma + 1;
  }
  return out;
}

// The task lists of srun's "host: tasks A-B,C: Terminated" lines, per host, from the kept fields
// and evidence lines.
std::map<std::string, std::set<int>> terminated_tasks(const Analysis& a) {
  std::map<std::string, std::set<int>> per_host;
  for (const Item& it : a.items) {
    if (it.key.id != "slurm.task.terminated") continue;
    auto add = [&](const std::string& list) {
      for (int t : parse_task_list(list)) per_host[it.key.node].insert(t);
    };
    add(it.field("tasks"));
    for (const auto& e : it.rec->evidence) {
      auto p = e.text.find(": task");
      if (p == std::string::npos) continue;
      p = e.text.find(' ', p + 2);
      if (p == std::string::npos) continue;
      auto q = e.text.find(':', p);
      if (q == std::string::npos) continue;
      add(e.text.substr(p + 1, q - p - 1));
    }
  }
  return per_host;
}

// Slurm step teardown. "CANCELLED AT ... DUE TO TASK FAILURE" means a task of the step failed:
// when no log shows which or why, the failing task is the one srun did not list as Terminated.
// A plain "CANCELLED AT ..." with no failure before it is a cancellation by the scheduler or a
// user.
void slurm_teardown(const Refiner& r, Analysis& a) {
  int task_failure = -1, plain = -1;
  bool other_cause = false;    // a cause of the task's failure is in the logs
  bool other_failure = false;  // a failure (cause or failed task) is in the logs
  TimeNs first_failure = kNoTime;
  for (int i = 0; i < static_cast<int>(a.items.size()); ++i) {
    const Item& it = a.items[i];
    if (it.filtered) continue;
    if (it.key.id == "slurm.cancelled.task_failure") {
      if (task_failure < 0) task_failure = i;
      continue;
    }
    if (it.key.id == "slurm.cancelled.plain") {
      if (plain < 0 || sort_time(it.first()) < sort_time(a.items[plain].first())) plain = i;
      continue;
    }
    const bool cause = it.attrs->role == "cause" && it.attrs->domain != "scheduler" && !it.synthetic;
    const bool failure =
        cause || (it.attrs->terminal && it.attrs->domain != "scheduler" && !starts_with(it.key.id, "slurm.state."));
    if (cause) other_cause = true;
    // Collectives timing out: the task died of the hang (watchdog abort), which is the story.
    if (it.active() && (it.key.id == "nccl.watchdog_timeout" || it.key.id == "nccl.watchdog_progress")) other_cause = true;
    if (failure) {
      other_failure = true;
      if (it.first() != kNoTime && (first_failure == kNoTime || it.first() < first_failure)) first_failure = it.first();
    }
  }
  if (task_failure >= 0 && !other_cause) {
    std::set<int> failed_set;
    std::string node;
    // srun names the failed task itself ("host: task 6: Exited with exit code 1"); else the
    // failing task is the one missing from its "tasks A-B,C: Terminated" lists.
    for (const Item& it : a.items) {
      if (it.filtered || it.key.id != "slurm.task.exit_code") continue;
      for (int t : parse_task_list(it.field("tasks"))) failed_set.insert(t);
      if (node.empty()) node = it.key.node;
    }
    if (failed_set.empty()) {
      auto per_host = terminated_tasks(a);
      std::set<int> terminated;
      int top = -1;
      for (const auto& [host, tasks] : per_host) {
        terminated.insert(tasks.begin(), tasks.end());
        if (!tasks.empty()) top = std::max(top, *tasks.rbegin());
      }
      std::set<int> universe;
      for (const auto& [rank, n] : a.context.ranks) universe.insert(rank);
      for (int k = 0; k <= top; ++k) universe.insert(k);
      for (int k : universe)
        if (!terminated.count(k)) failed_set.insert(k);
      if (terminated.empty() || failed_set.size() > 2) failed_set.clear();
      for (const auto& [host, tasks] : per_host) {
        if (failed_set.empty() || !node.empty() || tasks.empty()) continue;
        int k = *failed_set.begin();
        if (*tasks.begin() < k && k < *tasks.rbegin()) node = host;
      }
    }
    std::vector<int> failed(failed_set.begin(), failed_set.end());
    int rank = failed.empty() ? kNoRank : failed.front();
    if (rank != kNoRank && node.empty()) {
      auto it = a.context.ranks.find(rank);
      if (it != a.context.ranks.end()) node = it->second;
    }
    std::string who = failed.empty() ? "a task"
                                     : fmt::format("task {}", fmt::join(failed, ","));
    SymptomAttrs attrs = attrs_for(
        a, "slurm.task_failed",
        make_attrs(fmt::format("Slurm tore the step down DUE TO TASK FAILURE: {} of the job failed and the "
                               "collected logs do not say why",
                               who),
                   "application", "application.exception", 35));
    attrs.indirect = true;
    attrs.terminal = true;
    SymptomRecord rec = combine(a, {task_failure});
    if (!failed.empty()) rec.fields["tasks"] = fmt::format("{}", fmt::join(failed, ","));
    int s = a.add_synthetic({"slurm.task_failed", node, rank, ""}, attrs, std::move(rec), true);
    a.explain(task_failure, s, r.id);
  }
  if (plain >= 0 && task_failure < 0 &&
      (!other_failure || (first_failure != kNoTime && a.items[plain].first() != kNoTime &&
                          a.items[plain].first() < first_failure))) {
    SymptomAttrs attrs = attrs_for(
        a, "slurm.step_cancelled",
        make_attrs(a.items[plain].field("signal").empty()
                       ? "Slurm cancelled the step with no reason and no failure before it: a cancellation by the "
                         "scheduler, an administrator or the user (Slurm 24.11 and older also print this line when "
                         "srun tears a step down after a task failed; 25.05 says DUE TO TASK FAILURE then)"
                       : "Slurm signalled the step (DUE to SIGNAL) with no failure before it: a cancellation by the "
                         "scheduler, an administrator or the user",
                   "scheduler", "scheduler.cancelled", 25));
    attrs.indirect = true;
    int s = a.add_synthetic({"slurm.step_cancelled", "", kNoRank, ""}, attrs, combine(a, {plain}), true);
    a.explain(plain, s, r.id);
  }
}

// Every recognised symptom is a consequence, but the ones that point anywhere all point to one
// domain (IB completion errors on several ranks, no crash, no times): name that domain as the
// probable cause, instead of nothing.
void victim_domain(const Refiner& r, Analysis& a) {
  for (const Item& it : a.items) {
    if (it.active() && it.attrs->role == "cause") return;
  }
  static const std::set<std::string> kPointing = {"gpu", "network", "node", "storage"};
  std::vector<int> pointing;
  std::map<std::string, uint64_t> outcomes;
  std::set<std::string> domains, ids;
  for (int i = 0; i < static_cast<int>(a.items.size()); ++i) {
    const Item& it = a.items[i];
    if (!it.active() || it.attrs->role != "victim" || !kPointing.count(it.attrs->domain)) continue;
    if (!starts_with(it.attrs->outcome, it.attrs->domain + ".")) continue;
    pointing.push_back(i);
    domains.insert(it.attrs->domain);
    outcomes[it.attrs->outcome] += it.rec->count;
    ids.insert(it.key.id);
  }
  if (pointing.empty() || domains.size() != 1) return;
  std::string outcome;
  uint64_t best = 0;
  for (const auto& [o, n] : outcomes) {
    if (n > best) {
      best = n;
      outcome = o;
    }
  }
  std::set<std::string> nodes;
  for (int i : pointing) nodes.insert(a.items[i].key.node);
  const std::string& domain = *domains.begin();
  // IB completion error 12 (retry exceeded) alone says a QP could not reach its peer, not why: at job
  // start it is configuration (GID index, routing, rails: NCCL's own reading, refine.ib-error-at-start),
  // mid-run a link that went away. With no time to place it (no job start or no error time) and no
  // progress of the workload logged before it, nothing shows the job ever ran: the configuration
  // reading leads and the verdict names the link as the alternative (probable at most: inferred).
  std::string alternative;
  if (ids == std::set<std::string>{"ib.completion_error.12"} || ids == std::set<std::string>{"ib.completion_error.12", "ib.completion_error.5"}) {
    TimeNs first_error = kNoTime;
    for (int i : pointing) {
      TimeNs t = a.items[i].first();
      if (t != kNoTime && (first_error == kNoTime || t < first_error)) first_error = t;
    }
    bool untimed = a.job_start == kNoTime || first_error == kNoTime;
    bool progress_before = std::any_of(a.items.begin(), a.items.end(), [&](const Item& it) {
      return it.key.id == "app.progress" &&
             (first_error == kNoTime || it.first() == kNoTime || it.first() <= first_error);
    });
    if (untimed && !progress_before) {
      outcome = "network.configuration";
      alternative = "; with no time to tell job start from mid-run and no progress of the workload logged before it, "
                    "it fits a fabric configuration fault at start (GID index, routing, rails) or a link that went "
                    "away (network.link_flap) alike";
    }
  }
  SymptomAttrs attrs = attrs_for(
      a, "inferred.victim_domain",
      make_attrs(fmt::format("every recognised symptom is a consequence, and all that point anywhere point to the "
                             "{}: {} ({} report(s) on {} node(s)); no crash or failing peer was found{}. "
                             "Alternatives: a failure on a node or process whose logs were not collected",
                             domain, fmt::join(ids, ", "), [&] {
                               uint64_t n = 0;
                               for (int i : pointing) n += a.items[i].rec->count;
                               return n;
                             }(),
                             nodes.size(), alternative),
                 domain, outcome, 25));
  attrs.indirect = true;
  int s = a.add_synthetic({"inferred.victim_domain", "", kNoRank, ""}, attrs, combine(a, pointing), true);
  for (int i : pointing) a.explain(i, s, r.id);
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

bool app_or_hardware_xid(const Item& it) {
  if (!it.key.id.view().starts_with("gpu.xid.")) return false;
  auto cls = it.attrs->extra.find("class");
  auto detail = it.attrs->extra.find("class_detail");
  if (cls == it.attrs->extra.end() || cls->second != "app" || detail == it.attrs->extra.end()) return false;
  return detail->second.find("hw") != std::string::npos || detail->second.find("drv") != std::string::npos;
}

int Analysis::add_synthetic(SymptomKey key, SymptomAttrs attrs, SymptomRecord record, bool indirect) {
  synthetic_records.push_back(std::move(record));
  Item item;
  item.key = std::move(key);
  item.rec = &synthetic_records.back();
  item.attrs = &attrs_store.emplace_back(std::move(attrs));
  item.indirect = indirect || item.attrs->indirect;
  item.synthetic = true;
  items.push_back(std::move(item));
  return static_cast<int>(items.size()) - 1;
}

void Analysis::explain(int effect, int cause, const std::string& rule) {
  if (effect == cause || items[effect].explained_by >= 0) return;
  items[effect].explained_by = cause;
  items[effect].explained_rule = &rule;
}

bool within_window(const Item& cause, const Item& effect, int64_t before_ns, int64_t within_ns) {
  TimeNs c = cause.first(), e = effect.first();
  if (c != kNoTime && e != kNoTime) return e >= c - before_ns && e <= c + within_ns;
  // Without times, lines of one source are still in time order: a window that is one-sided
  // (nothing before the cause, or nothing after it) keeps that side by line number.
  const EvidenceLine* ce = cause.rec->evidence.empty() ? nullptr : &cause.rec->evidence.front();
  const EvidenceLine* ee = effect.rec->evidence.empty() ? nullptr : &effect.rec->evidence.front();
  if (ce == nullptr || ee == nullptr || ce->source != ee->source) return true;
  if (within_ns == 0 && ee->line > ce->line) return false;
  if (before_ns == 0 && ee->line < ce->line) return false;
  return true;
}

void run_declarative_refiner(const Refiner& r, Analysis& a) {
  std::vector<int> causes;
  for (int i = 0; i < static_cast<int>(a.items.size()); ++i) {
    const Item& it = a.items[i];
    if (!it.active() || !matches_any(r.cause, it.key.id)) continue;
    if (!r.cause_role.empty() && it.attrs->role != r.cause_role) continue;
    causes.push_back(i);
  }
  for (int c : by_strength(a, causes)) {
    if (!a.items[c].active()) continue;
    const Item& cause = a.items[c];
    for (int e = 0; e < static_cast<int>(a.items.size()); ++e) {
      Item& effect = a.items[e];
      if (e == c || !effect.active() || !matches_any(r.explains, effect.key.id)) continue;
      const bool any_effect = r.recovery || r.same_event;
      if (!any_effect && !r.outranks && effect.attrs->role == "cause" && effect.attrs->priority > cause.attrs->priority)
        continue;
      if (!any_effect && !may_explain(cause, effect)) continue;
      // Symptoms that name no node come from sources the bundle ties to no host: one unnamed host (a
      // bundle that knows its hosts names them on every node-level source).
      if (r.scope == "same_node" && effect.key.node != cause.key.node) continue;
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
  else if (r.builtin == "repeat_gpu_fault") repeat_gpu_fault(r, a);
  else if (r.builtin == "slurm_teardown") slurm_teardown(r, a);
  else if (r.builtin == "victim_domain") victim_domain(r, a);
  else if (r.builtin == "version_outlier") version_outlier(r, a);
  else if (r.builtin == "rank_census") rank_census(r, a);
  else if (r.builtin == "cuda_oom_held_elsewhere") cuda_oom_held_elsewhere(r, a);
}

std::string Item::label() const {
  // A catalogue symptom without a label reads as its id; a synthetic one keeps the label it was given.
  return render_label(attrs->label.empty() && !synthetic ? key.id.str() : attrs->label, rec->fields);
}

std::string render_label(const std::string& label, const Fields& fields) {
  if (label.find('{') == std::string::npos) return label;
  std::string out;
  size_t i = 0;
  while (i < label.size()) {
    if (label[i] == '{') {
      size_t close = label.find('}', i);
      if (close != std::string::npos) {
        auto it = fields.find(label.substr(i + 1, close - i - 1));
        if (it != fields.end()) out += it->second;
        i = close + 1;
        continue;
      }
    }
    out += label[i++];
  }
  return out;
}

}  // namespace attribution
