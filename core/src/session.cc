// Session: accumulates evidence; attribute() runs filtering, refinement phases, the outcome and
// quality decision, and writes the verdict.
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <set>

#include "analysis.h"
#include "attribution/codec.h"
#include "attribution/engine.h"
#include "rule_set.h"

namespace attribution {
namespace {

constexpr int64_t kSecond = 1000000000LL;
// Evidence this long before the job start or after its end belongs to another job.
constexpr int64_t kWindowSlack = 300 * kSecond;

TimeNs sort_time(TimeNs t) { return t == kNoTime ? std::numeric_limits<TimeNs>::max() : t; }

bool is_success(const ExecutionContext& c) {
  std::string s = normalize_terminal_state(c.terminal_state.empty() ? c.state : c.terminal_state);
  bool exit_ok = c.exit_code.empty() || c.exit_code == "0" || c.exit_code == "0:0";
  return s == "COMPLETED" && exit_ok;
}

bool all_metric_evidence(const SymptomRecord& r) {
  return !r.evidence.empty() && std::all_of(r.evidence.begin(), r.evidence.end(), [](const EvidenceLine& e) {
    return e.kind == ObservationKind::kNodeMetrics;
  });
}

// The job's spelling of `host` when the two name one machine, one fully qualified and one not
// ("gpu-a07.cluster.example.org" and "gpu-a07": Open MPI's and many daemons' prefixes print the
// hostname as the system gives it, schedulers keep the short name); empty when no job node, or more
// than one, matches. A dotted quad is an address, not a qualified name, and never matches.
std::string job_node_spelling(std::string_view host, const std::set<std::string>& job_nodes) {
  auto qualified = [](std::string_view name, std::string_view& first_label) {
    size_t dot = name.find('.');
    if (dot == 0 || dot == std::string_view::npos) return false;
    std::string_view rest = name.substr(dot + 1);
    if (std::none_of(rest.begin(), rest.end(), [](char c) { return std::isalpha(static_cast<unsigned char>(c)); }))
      return false;
    first_label = name.substr(0, dot);
    return true;
  };
  std::string found;
  int matches = 0;
  std::string_view label;
  if (qualified(host, label)) {
    auto it = job_nodes.find(std::string(label));
    if (it != job_nodes.end()) {
      found = *it;
      ++matches;
    }
  }
  for (const auto& node : job_nodes) {
    std::string_view node_label;
    if (qualified(node, node_label) && node_label == host && node != found) {
      found = node;
      ++matches;
    }
  }
  return matches == 1 ? found : std::string();
}

void build_items(Analysis& a) {
  std::set<std::string> job_nodes(a.context.nodes.begin(), a.context.nodes.end());
  for (const auto& [rank, node] : a.context.ranks) job_nodes.insert(node);
  TimeNs lo = kNoTime, hi = kNoTime;
  struct AttrsKey {
    std::string_view id;
    const std::string* catalog;
    const std::string* catalog_key;
    static int cmp(const std::string* x, const std::string* y) {
      if (!x || !y) return (x != nullptr) - (y != nullptr);
      return x->compare(*y);
    }
    bool operator<(const AttrsKey& o) const {
      if (int c = id.compare(o.id)) return c < 0;
      if (int c = cmp(catalog, o.catalog)) return c < 0;
      return cmp(catalog_key, o.catalog_key) < 0;
    }
  };
  std::map<AttrsKey, const SymptomAttrs*> attrs_cache;
  a.items.reserve(a.extraction.symptoms().size());
  for (const auto& [key, rec] : a.extraction.symptoms()) {
    Item it;
    it.key = key;
    if (it.key.node.empty() && it.key.rank != kNoRank) {
      auto r = a.context.ranks.find(it.key.rank);
      if (r != a.context.ranks.end()) it.key.node = r->second;
    }
    it.rec = &rec;
    if (!a.rules.field_hooks.empty() && !rec.evidence.empty()) {
      auto hooks = a.rules.field_hooks.find(rec.evidence.front().rule);
      if (hooks != a.rules.field_hooks.end()) it.rec = apply_field_hooks(a, it.key, rec, hooks->second);
    }
    // Attributes depend on the symptom id and the catalog capture only: one shared copy per
    // distinct (id, catalog, catalog key), not one per item.
    auto cat = rec.fields.find("_catalog");
    auto cat_key = rec.fields.find("_catalog_key");
    const SymptomAttrs*& shared = attrs_cache[{key.id.view(), cat == rec.fields.end() ? nullptr : &cat->second,
                                               cat_key == rec.fields.end() ? nullptr : &cat_key->second}];
    if (!shared) {
      SymptomAttrs attrs = a.rules.attributes(key.id, rec.fields);
      if (key.id.compare(0, 8, "history.") == 0) {  // outside the job's window: context only
        attrs.role = "context";
        attrs.priority = 0;
        attrs.terminal = false;
        attrs.label = "earlier, outside this job: " + attrs.label;
      }
      shared = &a.attrs_store.emplace_back(std::move(attrs));
    }
    it.attrs = shared;
    it.indirect = it.attrs->indirect || all_metric_evidence(rec);
    if (!job_nodes.empty() && !it.key.node.empty() && !job_nodes.count(it.key.node) &&
        it.key.id != "net.address") {
      std::string same = job_node_spelling(it.key.node.view(), job_nodes);
      if (!same.empty()) {
        it.key.node = same;
      } else {
        it.filtered = true;  // a line about a host outside the job (shared syslog, controller log)
      }
    }
    if (rec.first_seen != kNoTime) {
      lo = lo == kNoTime ? rec.first_seen : std::min(lo, rec.first_seen);
      hi = hi == kNoTime ? rec.last_seen : std::max(hi, rec.last_seen);
    }
    a.items.push_back(std::move(it));
  }
  // Items whose node was resolved from the rank map may now share a key; that is fine: they stay
  // separate items with the same node.
  a.job_start = a.context.start != kNoTime ? a.context.start : lo;
  a.job_end = a.context.end != kNoTime ? a.context.end : hi;
}

void run_phase(Phase phase, Analysis& a) {
  for (const Refiner& r : a.rules.refiners) {
    if (r.phase != phase) continue;
    if (r.builtin.empty()) run_declarative_refiner(r, a);
    else run_builtin_refiner(r, a);
  }
  // Refiners in other languages run after the YAML and built-in ones of the phase, in load order.
  static constexpr std::string_view kPhaseNames[] = {"EARLY", "DEFAULT", "LATE", "FINAL", "POST_OUTCOME"};
  std::string_view name = kPhaseNames[static_cast<int>(phase)];
  for (const ExternalRule& r : a.rules.external_rules) {
    if (r.kind == ExternalRule::Kind::kRefiner && r.phase == name) run_external_refiner(r, name, a);
  }
}

bool has_coverage(const Extraction& e, ObservationKind kind, const std::string& node) {
  const auto& cov = e.coverage();
  auto k = static_cast<int>(kind);
  if (cov.count({k, node})) return true;
  if (cov.count({k, ""})) return true;  // a multi-host stream (host taken from each line)
  return false;
}

bool any_coverage(const Extraction& e, ObservationKind kind) {
  for (const auto& [k, lines] : e.coverage()) {
    if (k.first == static_cast<int>(kind)) return true;
  }
  return false;
}

std::vector<std::string> missing_sources(const Analysis& a, const std::vector<std::string>& nodes) {
  std::vector<std::string> missing;
  for (const auto& n : nodes) {
    if (!has_coverage(a.extraction, ObservationKind::kSyslog, n))
      missing.push_back(fmt::format("kernel log (dmesg/journal) of {}", n));
  }
  if (!any_coverage(a.extraction, ObservationKind::kAppLog))
    missing.push_back("application logs of the job's ranks");
  if (a.context.state.empty() && a.context.terminal_state.empty() &&
      !any_coverage(a.extraction, ObservationKind::kScheduler))
    missing.push_back("scheduler record of the job (sacct / scontrol / pod status)");
  if (!any_coverage(a.extraction, ObservationKind::kNodeMetrics))
    missing.push_back("GPU metrics (DCGM exporter: DCGM_FI_DEV_XID_ERRORS, ECC counters)");
  return missing;
}

// The node of a cause whose line named none: the node of its rank, the only node of the job, or
// the one host that srun/slurmstepd/torchrun name for the failed task.
std::string infer_node(const Analysis& a, const Item& root, std::string* why) {
  if (root.key.rank != kNoRank) {
    auto it = a.context.ranks.find(root.key.rank);
    if (it != a.context.ranks.end()) {
      *why = fmt::format("the rank map (rank {})", root.key.rank);
      return it->second;
    }
    std::set<std::string> nodes;
    for (const Item& other : a.items) {
      if (other.key.rank == root.key.rank && !other.key.node.empty()) nodes.insert(other.key.node);
    }
    if (nodes.size() == 1) {
      *why = fmt::format("other lines of rank {}", root.key.rank);
      return *nodes.begin();
    }
  }
  std::set<std::string> job_nodes(a.context.nodes.begin(), a.context.nodes.end());
  for (const auto& [rank, node] : a.context.ranks) job_nodes.insert(node);
  if (job_nodes.size() == 1) {
    *why = "the job record (a single-node job)";
    return *job_nodes.begin();
  }
  std::set<std::string> covered;  // every node a collected source or line names
  for (const auto& [k, lines] : a.extraction.coverage()) {
    if (!k.second.empty()) covered.insert(k.second);
  }
  if (job_nodes.empty() && covered.size() == 1) {
    *why = "the only node any collected source names";
    return *covered.begin();
  }
  if (root.attrs->domain == "scheduler") return "";
  std::set<std::string> explained_on;  // the same event as seen by another source that names the host
  for (const Item& other : a.items) {
    if (other.explained_by >= 0 && &a.items[other.explained_by] == &root && !other.key.node.empty())
      explained_on.insert(other.key.node);
  }
  if (explained_on.size() == 1) {
    *why = "the records of the same event it explains";
    return *explained_on.begin();
  }
  std::set<std::string> failed_on;
  for (const Item& other : a.items) {
    if (other.filtered || !other.attrs->terminal || other.key.node.empty()) continue;
    if (other.key.id.rfind("slurm.state.", 0) == 0 || other.key.id.rfind("scheduler.", 0) == 0) continue;
    failed_on.insert(other.key.node);
  }
  if (failed_on.size() == 1) {
    *why = "the launcher's report of the failed task";
    return *failed_on.begin();
  }
  return "";
}

Outcome decide(Analysis& a) {
  Outcome o;
  std::vector<int> causes;
  for (int i = 0; i < static_cast<int>(a.items.size()); ++i) {
    const Item& it = a.items[i];
    if (it.active() && it.attrs->role == "cause") causes.push_back(i);
  }
  // A catch-all reading (`evidence: generic`: a RuntimeError, an OSError by its class) names what was
  // raised, not why; a specific reading of at least kSpecificOverCatchAll explains more and ranks
  // ahead of it, whatever the catch-all's own priority. Below that weight the catch-all keeps its
  // priority. The key is a total order: specific items by priority, catch-alls capped just below
  // the floor, raw priority next.
  constexpr int kSpecificOverCatchAll = 40;
  const auto rank = [](const Item& it) {
    return it.attrs->generic ? std::min(2 * it.attrs->priority, 2 * kSpecificOverCatchAll - 1) : 2 * it.attrs->priority;
  };
  std::sort(causes.begin(), causes.end(), [&](int x, int y) {
    const Item& ix = a.items[x];
    const Item& iy = a.items[y];
    if (rank(ix) != rank(iy)) return rank(ix) > rank(iy);
    if (ix.attrs->priority != iy.attrs->priority) return ix.attrs->priority > iy.attrs->priority;
    if (sort_time(ix.first()) != sort_time(iy.first())) return sort_time(ix.first()) < sort_time(iy.first());
    return ix.key < iy.key;
  });
  std::string state = normalize_terminal_state(a.context.terminal_state.empty() ? a.context.state
                                                                                : a.context.terminal_state);
  // A scheduler record of success is believed unless a log says a task of the job failed (srun
  // task exit, torchrun ChildFailedError, a FAILED step): then the record is contradicted and the
  // logs decide, at most at probable quality.
  const bool record_success = is_success(a.context);
  int contradiction = -1;
  if (record_success) {
    for (int i = 0; i < static_cast<int>(a.items.size()); ++i) {
      const Item& it = a.items[i];
      if (!it.attrs->terminal || it.filtered) continue;
      if (contradiction < 0 || sort_time(it.first()) < sort_time(a.items[contradiction].first()) ||
          (it.first() == a.items[contradiction].first() && it.key < a.items[contradiction].key))
        contradiction = i;
    }
  }
  std::string contradiction_reason;
  if (contradiction >= 0) {
    const Item& c = a.items[contradiction];
    contradiction_reason = fmt::format(
        "the scheduler reports {} with exit code {}, but {}{} shows a task of the job failed: the record "
        "contradicts the logs, which decide",
        state, a.context.exit_code.empty() ? "0" : a.context.exit_code, c.key.id,
        c.key.node.empty() ? "" : " on " + c.key.node);
  }
  if (record_success && contradiction < 0) {
    o.outcome = "none.succeeded";
    o.domain = "none";
    // A record of success is complete with its exit code (sacct's ExitCode, a container's exitCode):
    // a state alone, as a wrapper or a hand-written bundle reports it, is one leading reading, not a
    // direct one.
    if (a.context.exit_code.empty()) {
      o.quality = "probable";
      o.reasons.push_back(fmt::format("the scheduler reports {}, with no exit code: success is the leading "
                                      "reading, not a direct one",
                                      state));
    } else {
      o.quality = "definitive";
      o.reasons.push_back(fmt::format("the scheduler reports {} with exit code {}", state, a.context.exit_code));
    }
    if (!causes.empty())
      o.reasons.push_back(fmt::format("{} symptom(s) were seen but did not stop the job", causes.size()));
    return o;
  }
  if (causes.empty()) {
    bool hang = std::any_of(a.items.begin(), a.items.end(), [](const Item& it) {
      return it.active() && (it.key.id == "nccl.watchdog_timeout" || it.key.id == "nccl.watchdog_progress");
    });
    o.outcome = hang ? "unknown.collective_hang" : "unknown.no_evidence";
    o.domain = "unknown";
    o.quality = "insufficient";
    o.reasons.push_back(hang ? "collectives timed out on the ranks, and no evidence says why"
                             : "no recognised evidence of a cause was found");
    if (!contradiction_reason.empty()) o.reasons.push_back(contradiction_reason);
    o.missing = missing_sources(a, a.context.nodes);
    return o;
  }
  o.root = causes.front();
  // The same symptom seen with and without a node (an event line that names no host, and the
  // node's own record): name the node.
  if (a.items[o.root].key.node.empty()) {
    for (int i : causes) {
      const Item& it = a.items[i];
      if (it.attrs->priority != a.items[o.root].attrs->priority) break;
      if (it.key.id == a.items[o.root].key.id && !it.key.node.empty()) {
        o.root = i;
        break;
      }
    }
  }
  const Item& root = a.items[o.root];
  for (int i : causes) {
    const Item& it = a.items[i];
    if (it.key.id == root.key.id && it.key.node == root.key.node) o.root_group.push_back(i);
  }
  // The same outcome on two nodes is two suspects only for node-local faults (GPU, host); a
  // shared filesystem or fabric failing on many clients is one cause.
  static const std::set<std::string> kNodeLocal = {"gpu", "node"};
  for (int i : causes) {
    const Item& it = a.items[i];
    if (i == o.root || it.attrs->priority / 10 != root.attrs->priority / 10) continue;
    if (it.key.node == root.key.node) continue;  // same node: the culprit is clear
    if (it.key.id == root.key.id && (it.key.node.empty() || root.key.node.empty())) continue;
    bool different_outcome = it.attrs->outcome != root.attrs->outcome;
    if (!different_outcome && !kNodeLocal.count(it.attrs->domain)) continue;
    TimeNs gap = 0;
    bool close_in_time = it.first() == kNoTime || root.first() == kNoTime ||
                         (!__builtin_sub_overflow(it.first(), root.first(), &gap) && gap <= 60 * kSecond &&
                          gap >= -60 * kSecond);
    if (!close_in_time) continue;
    if (std::find_if(o.rivals.begin(), o.rivals.end(), [&](int r) {
          return a.items[r].key.id == it.key.id && a.items[r].key.node == it.key.node;
        }) != o.rivals.end())
      continue;
    o.rivals.push_back(i);
  }
  o.outcome = root.attrs->outcome;
  o.domain = root.attrs->domain;
  std::string where = root.key.node.empty() ? "" : " on " + root.key.node;
  if (!o.rivals.empty()) {
    o.quality = "ambiguous";
    o.reasons.push_back(fmt::format("{} other cause(s) fit the evidence as well: {}", o.rivals.size(),
                                    [&] {
                                      std::vector<std::string> names;
                                      for (int r : o.rivals)
                                        names.push_back(a.items[r].key.id + (a.items[r].key.node.empty() ? "" : " on " + a.items[r].key.node));
                                      return fmt::format("{}", fmt::join(names, ", "));
                                    }()));
  } else if (root.indirect) {
    o.quality = "probable";
    o.reasons.push_back(fmt::format("{}{} is indirect evidence ({})", root.key.id, where,
                                    root.synthetic ? "inferred by a refiner" : "metrics or scheduler state only"));
  } else {
    o.quality = "definitive";
    o.reasons.push_back(fmt::format("{}{} is directly evidenced", root.key.id, where));
  }
  if (o.quality == "definitive" && root.attrs->generic) {
    o.quality = "probable";
    o.reasons.push_back(fmt::format("{}{} is read by a catch-all rule: the line names what was raised, not whether "
                                    "the program or what it called (a runtime, the network, the host) is at fault",
                                    root.key.id, where));
  }
  // Two direct faults of the same weight on the same node in the same moment, naming different
  // outcomes (a contained ECC error and an NVLink error in one second; a GPU falling off the bus as
  // its port reports receiver errors): the node is clear, which fault came first is not.
  if (o.quality == "definitive") {
    for (int i : causes) {
      const Item& it = a.items[i];
      if (it.key.id == root.key.id || it.indirect || it.attrs->generic) continue;
      if (it.attrs->priority / 10 != root.attrs->priority / 10 || it.attrs->outcome == root.attrs->outcome) continue;
      if (it.key.node != root.key.node || it.first() == kNoTime || root.first() == kNoTime) continue;
      if (!within_window(root, it, 5 * kSecond, 5 * kSecond)) continue;
      o.quality = "probable";
      o.reasons.push_back(fmt::format("{}{} was raised within seconds of it, naming {}: which of the two faults came "
                                      "first is not clear",
                                      it.key.id, where, it.attrs->outcome));
      break;
    }
  }
  if (!contradiction_reason.empty()) {
    if (o.quality == "definitive") o.quality = "probable";
    o.reasons.push_back(contradiction_reason);
  }
  // Definitive needs the sources the cause needs: a hardware, host or fabric fault seen only in the
  // workload's own output (NCCL, CUDA, nvidia-smi) is confirmed by the node's kernel log. So is an Xid
  // of any class: the driver prints it to the kernel log, and a copy elsewhere (a device plugin's
  // health check, a monitoring agent) says which GPU faulted, not which process on it.
  const bool xid_root = root.key.id.compare(0, 8, "gpu.xid.") == 0;
  if (o.quality == "definitive" && (o.domain == "gpu" || o.domain == "node" || o.domain == "network" || xid_root)) {
    bool kernel_evidence = false;
    for (int i : o.root_group) {
      for (const auto& e : a.items[i].rec->evidence) kernel_evidence |= e.kind == ObservationKind::kSyslog;
    }
    bool kernel_log = root.key.node.empty() ? any_coverage(a.extraction, ObservationKind::kSyslog)
                                            : has_coverage(a.extraction, ObservationKind::kSyslog, root.key.node);
    if (!kernel_evidence && !kernel_log) {
      o.quality = "probable";
      o.reasons.push_back(fmt::format("{} is seen only in the workload's own output; the kernel log{} was not "
                                      "collected to confirm it",
                                      root.key.id, root.key.node.empty() ? "" : " of " + root.key.node));
    }
  }
  // Definitive also needs the job's own side: with no application log at all, nothing shows the
  // cause is what stopped this job (a kernel log alone describes the node, not the workload).
  if (o.quality == "definitive" && !any_coverage(a.extraction, ObservationKind::kAppLog) &&
      ((a.context.state.empty() && a.context.terminal_state.empty()) || root.first() == kNoTime)) {
    o.quality = "probable";
    o.reasons.push_back("no application log was collected, and no scheduler record or time ties the cause to the "
                        "job's end: nothing shows this cause is what ended the job");
  }
  // A port's Surprise Down / Completion Timeout is what it reports when the device below it stops
  // answering: a GPU dying of its own (thermal, power) looks the same from the port.
  if (o.quality == "definitive" && root.key.id == "node.pcie.aer_uncorrectable") {
    for (const Item& it : a.items) {
      if (it.filtered || it.key.id != "node.pcie.aer_device_gone" || it.key.node != root.key.node) continue;
      o.quality = "probable";
      o.reasons.push_back(fmt::format(
          "the port reports {}: what it sees when the device below it stops answering, so the device itself "
          "(a GPU failing of heat or power) is as likely as the host's PCIe path",
          it.field("aer_type")));
      break;
    }
  }
  // A GPU fault that names neither the GPU nor the node leaves the operator nothing to reset or drain:
  // the cause is clear, the component is not.
  if (o.quality == "definitive" && o.domain == "gpu" && root.key.gpu.empty() && root.key.node.empty()) {
    o.quality = "probable";
    o.reasons.push_back(fmt::format("{} names no GPU and no node: which device to reset or drain is not known",
                                    root.key.id));
  }
  if (app_or_hardware_xid(root) && o.quality == "definitive") {
    o.quality = "probable";
    o.reasons.push_back(fmt::format(
        "Xid {} is raised both by faults in the workload's own kernels and by failing GPUs; on its own it does "
        "not say which (the same GPU faulting in other processes or on other days would point at the GPU)",
        root.field("xid").empty() ? root.key.id.substr(root.key.id.rfind('.') + 1) : root.field("xid")));
  }
  for (const auto& rep : a.reports) {
    if (rep.status == "error") {
      if (o.quality == "definitive") o.quality = "probable";
      o.reasons.push_back(fmt::format("connector {} failed: {}", rep.connector, rep.reason));
    }
  }
  size_t explained = std::count_if(a.items.begin(), a.items.end(), [](const Item& it) { return it.explained_by >= 0; });
  if (explained > 0) o.reasons.push_back(fmt::format("{} symptom group(s) explained as consequences", explained));
  if (o.quality == "probable" && (o.domain == "gpu" || o.domain == "node") && !root.key.node.empty() &&
      !has_coverage(a.extraction, ObservationKind::kSyslog, root.key.node)) {
    o.missing.push_back(fmt::format("kernel log (dmesg/journal) of {}", root.key.node));
  }
  // Nodes to act on: those of the root (and rivals) when the fault is in the node's hardware.
  // A full local disk is the node's to fix too; a shared filesystem is not.
  static const std::set<std::string> kActionable = {"gpu", "node"};
  auto add_node = [&](const Item& it) {
    bool network_node = it.attrs->domain == "network" && it.attrs->outcome != "network.configuration";
    bool local_disk = it.attrs->outcome == "storage.disk_full";
    if ((kActionable.count(it.attrs->domain) || network_node || local_disk) && !it.key.node.empty())
      o.affected_nodes.push_back(it.key.node);
  };
  add_node(root);
  for (int r : o.rivals) add_node(a.items[r]);
  o.culprit_node = root.key.node;
  // A scheduler decision names no culprit (the node in "JOB n ON node CANCELLED" is the batch
  // node), except an eviction: the node whose pressure evicted the pod is where to look.
  bool scheduler_decision = root.attrs->domain == "scheduler" && root.attrs->outcome != "scheduler.evicted";
  if (scheduler_decision || !o.rivals.empty()) o.culprit_node.clear();
  // The workload's own error on several nodes at once (the same bad binary or config everywhere):
  // no node is the culprit.
  bool everywhere = false;
  if (root.attrs->domain == "application" && !o.culprit_node.empty()) {
    std::set<std::string> nodes;
    for (int i : causes) {
      if (a.items[i].key.id == root.key.id && !a.items[i].key.node.empty()) nodes.insert(a.items[i].key.node);
    }
    if (nodes.size() > 1) {
      everywhere = true;
      o.culprit_node.clear();
      o.reasons.push_back(fmt::format("{} happened on {} nodes: the workload's, not a node's", root.key.id, nodes.size()));
    }
  }
  // A shared filesystem failing is nobody's node, whichever client reported it.
  const bool shared = root.attrs->outcome == "storage.filesystem";
  if (o.culprit_node.empty() && !scheduler_decision && o.rivals.empty() && !everywhere && !shared) {
    std::string why;
    o.culprit_node = infer_node(a, root, &why);
    if (!o.culprit_node.empty()) {
      o.reasons.push_back(fmt::format("node {} taken from {}", o.culprit_node, why));
      Item located = root;
      located.key.node = o.culprit_node;
      add_node(located);
    }
  }
  // A node the scheduler drained (a step that would not die) is out of service whatever the cause.
  for (const Item& it : a.items) {
    if (it.filtered || !it.attrs->drains_node || it.key.node.empty()) continue;
    if (std::find(o.affected_nodes.begin(), o.affected_nodes.end(), it.key.node) == o.affected_nodes.end())
      o.reasons.push_back(fmt::format("{} on {}: the scheduler takes the node out of service", it.key.id, it.key.node));
    o.affected_nodes.push_back(it.key.node);
  }
  std::sort(o.affected_nodes.begin(), o.affected_nodes.end());
  o.affected_nodes.erase(std::unique(o.affected_nodes.begin(), o.affected_nodes.end()), o.affected_nodes.end());
  return o;
}

}  // namespace

struct Session::Impl {
  std::shared_ptr<const RuleSet> rules;
  ExecutionContext context;
  Extraction extraction;
  std::vector<ConnectorReport> reports;
  std::unique_ptr<Scanner> scanner;
  // Per source, the time state after its last ingested piece: the next piece's unstamped first
  // lines take their time as if the pieces had been one text. O(1) memory per source.
  struct SourceState {
    TimeCarry carry;
    uint64_t next_line = 0;  // the line the next piece should start at
  };
  std::map<std::string, SourceState> carries;

  Scanner& get_scanner() {
    if (!scanner) scanner = std::make_unique<Scanner>(rules);
    return *scanner;
  }
  int default_year() const {
    TimeNs t = context.start != kNoTime ? context.start : context.end;
    if (t == kNoTime) return 0;
    return std::stoi(format_rfc3339(t).substr(0, 4));
  }
};



Session::Session(std::shared_ptr<const RuleSet> rules, ExecutionContext context)
    : impl_(std::make_unique<Impl>()) {
  impl_->rules = std::move(rules);
  impl_->context = std::move(context);
  impl_->extraction = new_extraction();
}
Session::~Session() = default;
Session::Session(Session&&) noexcept = default;
Session& Session::operator=(Session&&) noexcept = default;

const ExecutionContext& Session::context() const { return impl_->context; }
const RuleSet& Session::rules() const { return *impl_->rules; }
const Extraction& Session::extraction() const { return impl_->extraction; }

Extraction Session::new_extraction() const {
  Extraction e;
  const auto& c = impl_->context;
  e.set_window(c.start == kNoTime ? kNoTime : c.start - kWindowSlack,
               c.end == kNoTime ? kNoTime : c.end + kWindowSlack);
  return e;
}

void Session::ingest_text(const TextSource& source, std::string_view text, uint64_t first_line) {
  TextSource src = source;
  if (src.default_year == 0) src.default_year = impl_->default_year();
  std::string key = fmt::format("{}\x1f{}\x1f{}\x1f{}\x1f{}", static_cast<int>(src.kind), src.node, src.rank,
                                src.gpu, src.name);
  Impl::SourceState& state = impl_->carries[key];
  // A piece that does not continue where the last one ended (a re-sent or out-of-order block)
  // starts without a carry.
  if (first_line != state.next_line) state.carry = TimeCarry{};
  uint64_t lines = impl_->get_scanner().scan(src, text, 0, first_line, impl_->extraction, &state.carry);
  state.next_line = first_line + lines;
}

void Session::ingest(const Observation& observation) {
  impl_->get_scanner().scan_observation(observation, impl_->default_year(), impl_->extraction);
}

void Session::merge(const Extraction& extraction) { impl_->extraction.merge(extraction); }
void Session::merge(Extraction&& extraction) { impl_->extraction.merge(std::move(extraction)); }

void Session::add_connector_report(const ConnectorReport& report) {
  auto& reports = impl_->reports;
  reports.push_back(report);
  std::stable_sort(reports.begin(), reports.end(), [](const ConnectorReport& x, const ConnectorReport& y) {
    return std::tie(x.connector, x.status, x.reason) < std::tie(y.connector, y.status, y.reason);
  });
}

Verdict Session::attribute() const {
  Analysis a{*impl_->rules, impl_->context, impl_->extraction, impl_->reports, {}, {}, {}, kNoTime, kNoTime};
  build_items(a);
  for (Phase p : {Phase::kEarly, Phase::kDefault, Phase::kLate, Phase::kFinal}) run_phase(p, a);
  Outcome o = decide(a);
  a.outcome = &o;
  run_phase(Phase::kPostOutcome, a);
  apply_rule_outcomes(a, o);
  Verdict v;
  v.outcome = o.outcome;
  v.domain = o.domain;
  v.quality = o.quality;
  if (o.root >= 0) {
    v.root_symptom = a.items[o.root].key.id;
    v.root_node = o.culprit_node;
  }
  v.affected_nodes = o.affected_nodes;
  v.json = write_verdict_json(a, o);
  v.summary = write_summary(a, o);
  return v;
}

}  // namespace attribution
