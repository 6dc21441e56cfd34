#include "fabric/fleet.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <numeric>
#include <set>
#include <stdexcept>

#include "attribution/codec.h"

namespace attribution::fabric {

using nlohmann::json;

double binomial_upper_tail(uint64_t n, uint64_t k, double p) {
  if (k == 0) return 1.0;
  if (k > n) return 0.0;
  if (p <= 0) return 0.0;
  if (p >= 1) return 1.0;
  double mean = static_cast<double>(n) * p;
  if (static_cast<double>(k) <= mean) return 1.0;  // not above expectation: not evidence
  // log of the first term C(n,k) p^k (1-p)^(n-k), then the ratio of consecutive terms.
  double nn = static_cast<double>(n), kk = static_cast<double>(k);
  double log_t = std::lgamma(nn + 1) - std::lgamma(kk + 1) - std::lgamma(nn - kk + 1) + kk * std::log(p) +
                 (nn - kk) * std::log1p(-p);
  double t = std::exp(log_t);
  double sum = t;
  double odds = p / (1 - p);
  for (uint64_t i = k; i < n; ++i) {
    t *= static_cast<double>(n - i) / static_cast<double>(i + 1) * odds;
    sum += t;
    if (t < sum * 1e-15 || t == 0) break;
  }
  return std::min(1.0, sum);
}

FleetAnalysis::FleetAnalysis(const TopologyIndex& topology, FleetOptions options)
    : FleetAnalysis(std::vector<TopologyEpoch>{{0, &topology}}, options) {}

FleetAnalysis::FleetAnalysis(std::vector<TopologyEpoch> epochs, FleetOptions options)
    : epochs_(std::move(epochs)), opt_(options) {
  if (epochs_.empty()) throw std::invalid_argument("FleetAnalysis: no topology");
  std::stable_sort(epochs_.begin(), epochs_.end(),
                   [](const TopologyEpoch& a, const TopologyEpoch& b) { return a.valid_from_ns < b.valid_from_ns; });
  std::map<std::string, int> by_id;
  global_of_.resize(epochs_.size());
  for (size_t e = 0; e < epochs_.size(); ++e) {
    const auto& comps = epochs_[e].index->components();
    global_of_[e].resize(comps.size());
    for (size_t c = 0; c < comps.size(); ++c) {
      auto [it, added] = by_id.emplace(comps[c].id, static_cast<int>(comps_.size()));
      if (added) comps_.push_back({comps[c].id, comps[c].kind, comps[c].group, e, static_cast<int>(c)});
      GlobalComponent& g = comps_[static_cast<size_t>(it->second)];
      g.kind = comps[c].kind;
      g.group = comps[c].group;
      g.epoch = e;
      g.local = static_cast<int>(c);
      global_of_[e][c] = it->second;
    }
  }
  local_of_.assign(epochs_.size(), std::vector<int>(comps_.size(), -1));
  for (size_t e = 0; e < epochs_.size(); ++e)
    for (size_t c = 0; c < global_of_[e].size(); ++c) local_of_[e][static_cast<size_t>(global_of_[e][c])] = static_cast<int>(c);
  crossing_.assign(comps_.size(), 0);
  failures_.resize(comps_.size());
  direct_failures_.resize(comps_.size());
}

size_t epoch_at(const std::vector<TopologyEpoch>& epochs, int64_t t) {
  size_t e = 0;
  for (size_t i = 1; i < epochs.size(); ++i)
    if (epochs[i].valid_from_ns <= t) e = i;
  return e;
}

namespace {
void split_hosts(std::string_view s, std::vector<std::string>& out) {
  out.clear();
  size_t p = 0;
  while (p < s.size()) {
    size_t q = s.find(' ', p);
    if (q == std::string_view::npos) q = s.size();
    if (q > p) out.emplace_back(s.substr(p, q - p));
    p = q + 1;
  }
}
}  // namespace

void FleetAnalysis::add(const FabricRunRow& row) {
  if (row.end_ns < opt_.from_ns || row.end_ns > opt_.to_ns) return;
  ++runs_;
  if (row.failed) ++failed_;
  split_hosts(row.hosts, host_scratch_);
  const size_t epoch = epoch_at(epochs_, row.end_ns);
  const TopologyIndex& topo = *epochs_[epoch].index;
  const std::vector<int>& global = global_of_[epoch];
  topo.crossed(host_scratch_, scratch_);
  for (int c : scratch_) ++crossing_[static_cast<size_t>(global[static_cast<size_t>(c)])];
  if (!row.fabric) return;
  ++fabric_failed_;
  FailedRun fr;
  fr.run_id = row.run_id;
  fr.end_ns = row.end_ns;
  fr.job_id = std::string(row.job_id);
  fr.user = std::string(row.user);
  fr.outcome = std::string(row.outcome);
  fr.hosts = host_scratch_;
  fr.epoch = epoch;
  json ev = json::parse(row.evidence.begin(), row.evidence.end(), nullptr, false);
  fr.evidence = json::array();
  std::vector<int> touched, direct;
  std::vector<int> host_side;  // links named by a host's own port evidence (not a switch's, not a peer's)
  if (ev.is_array()) {
    for (const auto& e : ev) {
      if (!e.is_object()) continue;
      Location loc;
      loc.node = e.value("node", "");
      if (auto l = e.find("location"); l != e.end() && l->is_object())
        for (const auto& [k, v] : l->items())
          if (v.is_string()) loc.fields[k] = v.get<std::string>();
      size_t before = direct.size(), before_touched = touched.size();
      topo.touched(loc, touched, &direct);
      if (loc.fields.count("switch_port")) {
        // A switch's own report (ibqueryerrors) lists every port over threshold, most of them on
        // other jobs' paths: only the ports this run crossed can have failed it.
        auto off_path = [&](int c) { return !std::binary_search(scratch_.begin(), scratch_.end(), c); };
        touched.erase(std::remove_if(touched.begin() + static_cast<std::ptrdiff_t>(before_touched), touched.end(), off_path),
                      touched.end());
        direct.erase(std::remove_if(direct.begin() + static_cast<std::ptrdiff_t>(before), direct.end(), off_path),
                     direct.end());
      }
      const bool own_port = (loc.fields.count("hca") || loc.fields.count("iface")) && !loc.fields.count("switch_port") &&
                            !loc.fields.count("peer") && !loc.fields.count("peer_gid") && !loc.fields.count("peer_lid");
      if (own_port)
        for (size_t i = before; i < direct.size(); ++i)
          if (topo.components()[static_cast<size_t>(direct[i])].kind == "link") host_side.push_back(direct[i]);
      if (fr.evidence.size() < kMaxEvidencePerRun) fr.evidence.push_back(e);
    }
  }
  // Several hosts' ports under one switch failing in the same run point at the switch, not at each
  // link: the switch becomes direct evidence and those links only lie on its path.
  std::sort(host_side.begin(), host_side.end());
  host_side.erase(std::unique(host_side.begin(), host_side.end()), host_side.end());
  std::map<int, std::vector<int>> by_switch;
  for (int c : host_side) {
    const Link& l = topo.topology().links[static_cast<size_t>(topo.components()[static_cast<size_t>(c)].link)];
    for (const LinkEnd* end : {&l.a, &l.b})
      if (end->is_switch())
        if (int s = topo.find("switch:" + end->sw); s >= 0) by_switch[s].push_back(c);
  }
  for (const auto& [sw, links] : by_switch) {
    if (links.size() < 2) continue;
    direct.push_back(sw);
    for (int c : links) direct.erase(std::remove(direct.begin(), direct.end(), c), direct.end());
  }
  // Only components the run crossed (or that its peers' paths reach) count; evidence naming a
  // host outside the topology touches nothing.
  std::sort(touched.begin(), touched.end());
  touched.erase(std::unique(touched.begin(), touched.end()), touched.end());
  std::sort(direct.begin(), direct.end());
  direct.erase(std::unique(direct.begin(), direct.end()), direct.end());
  if (touched.empty()) {
    ++unresolved_;
    return;
  }
  // A touched component is also crossed (a peer's link may lie outside the run's own hosts only
  // when the peer is another job's; count it as crossed by this run).
  for (int c : touched)
    if (!std::binary_search(scratch_.begin(), scratch_.end(), c)) ++crossing_[static_cast<size_t>(global[static_cast<size_t>(c)])];
  auto to_global = [&](std::vector<int>& v) {
    for (int& c : v) c = global[static_cast<size_t>(c)];
    std::sort(v.begin(), v.end());
    v.erase(std::unique(v.begin(), v.end()), v.end());
  };
  to_global(touched);
  to_global(direct);
  fr.touched = std::move(touched);
  fr.direct = std::move(direct);
  uint32_t idx = static_cast<uint32_t>(failed_runs_.size());
  for (int c : fr.touched) failures_[static_cast<size_t>(c)].push_back(idx);
  for (int c : fr.direct) direct_failures_[static_cast<size_t>(c)].push_back(idx);
  failed_runs_.push_back(std::move(fr));
}

json FleetAnalysis::finish() const {
  const auto& comps = comps_;
  double base = runs_ > 0 ? static_cast<double>(fabric_failed_) / static_cast<double>(runs_) : 0;
  // The null model: every component of a kind is touched by fabric failures at the same rate per
  // crossing run, the kind's fleet-wide rate (touches / crossings), once over all evidence and
  // once over direct evidence only (a port error on the port vs a peer's path through it).
  std::map<std::string, std::array<double, 3>> kind_sums;  // n, k_all, k_direct
  for (size_t c = 0; c < comps.size(); ++c) {
    auto& ks = kind_sums[comps[c].group];
    ks[0] += crossing_[c];
    ks[1] += static_cast<double>(failures_[c].size());
    ks[2] += static_cast<double>(direct_failures_[c].size());
  }
  // Leave-one-out: a component is compared with the rest of its kind (its own failures would
  // otherwise raise the rate it is tested against), with one pseudo-touch so a kind that only the
  // tested component touches still has a rate. A kind with one component uses the fleet's base.
  auto rate = [&](size_t c, int which) {
    const auto& ks = kind_sums[comps[c].group];
    double own_k = static_cast<double>(which == 1 ? failures_[c].size() : direct_failures_[c].size());
    double rest_n = ks[0] - crossing_[c];
    if (rest_n <= 0) return base;
    return std::min(1.0, (ks[static_cast<size_t>(which)] - own_k + 1) / (rest_n + 1));
  };
  auto p_of = [&](size_t c, uint64_t k_all, uint64_t k_direct) {
    double p_all = binomial_upper_tail(crossing_[c], k_all, rate(c, 1));
    double p_dir = binomial_upper_tail(crossing_[c], k_direct, rate(c, 2));
    return std::min(1.0, 2 * std::min(p_all, p_dir));  // Bonferroni over the two views
  };
  struct Test {
    int c;
    double p;
  };
  std::vector<Test> tests;
  size_t m = 0;
  for (size_t c = 0; c < comps.size(); ++c) {
    if (crossing_[c] == 0) continue;
    ++m;
    uint64_t k = failures_[c].size();
    if (k < static_cast<uint64_t>(opt_.min_failed_runs)) continue;
    tests.push_back({static_cast<int>(c), p_of(c, k, direct_failures_[c].size())});
  }
  std::sort(tests.begin(), tests.end(), [&](const Test& a, const Test& b) {
    return a.p != b.p ? a.p < b.p : comps[static_cast<size_t>(a.c)].id < comps[static_cast<size_t>(b.c)].id;
  });
  // Benjamini–Hochberg over all m tested components (untested ones have p = 1).
  std::vector<double> q(tests.size(), 1.0);
  double running = 1.0;
  for (size_t i = tests.size(); i-- > 0;) {
    running = std::min(running, tests[i].p * static_cast<double>(m) / static_cast<double>(i + 1));
    q[i] = running;
  }
  double cutoff = -1;  // the largest p with q ≤ q_max
  for (size_t i = 0; i < tests.size(); ++i)
    if (q[i] <= opt_.q_max) cutoff = std::max(cutoff, tests[i].p);

  std::vector<char> explained(failed_runs_.size(), 0);
  std::vector<char> done(comps.size(), 0);
  json findings = json::array();
  for (size_t i = 0; i < tests.size() && cutoff >= 0; ++i) {
    const Test& t = tests[i];
    size_t c = static_cast<size_t>(t.c);
    if (done[c] || tests[i].p > cutoff) continue;
    done[c] = 1;
    std::vector<uint32_t> mine;
    for (uint32_t r : failures_[c])
      if (!explained[r]) mine.push_back(r);
    if (mine.size() < static_cast<size_t>(opt_.min_failed_runs)) continue;
    uint64_t mine_direct = 0;
    for (uint32_t r : direct_failures_[c]) mine_direct += explained[r] ? 0 : 1;
    double p = p_of(c, mine.size(), mine_direct);
    if (p > cutoff) continue;
    double qv = std::min(1.0, p * static_cast<double>(m) / static_cast<double>(i + 1));
    qv = std::max(qv, q[i]);
    // Components with exactly the same failing runs (and crossing) cannot be told apart.
    json ambiguous = json::array();
    for (size_t j = i + 1; j < tests.size(); ++j) {
      size_t d = static_cast<size_t>(tests[j].c);
      if (done[d] || failures_[d] != failures_[c] || direct_failures_[d] != direct_failures_[c] ||
          comps[d].group != comps[c].group)
        continue;
      done[d] = 1;
      ambiguous.push_back(comps[d].id);
    }
    for (uint32_t r : mine) explained[r] = 1;
    std::set<std::string> hosts, users, jobs;
    int64_t first = INT64_MAX, last = INT64_MIN;
    json job_list = json::array(), evidence = json::array();
    std::vector<uint32_t> by_time = mine;
    std::sort(by_time.begin(), by_time.end(), [&](uint32_t a, uint32_t b) {
      return std::tie(failed_runs_[a].end_ns, failed_runs_[a].run_id) > std::tie(failed_runs_[b].end_ns, failed_runs_[b].run_id);
    });
    for (uint32_t r : by_time) {
      const FailedRun& fr = failed_runs_[r];
      users.insert(fr.user);
      jobs.insert(fr.job_id);
      first = std::min(first, fr.end_ns);
      last = std::max(last, fr.end_ns);
      if (job_list.size() < kMaxJobsListed)
        job_list.push_back({{"run_id", fr.run_id}, {"job_id", fr.job_id}, {"user", fr.user},
                            {"end", format_rfc3339(fr.end_ns)}, {"end_ns", fr.end_ns}, {"outcome", fr.outcome}});
      for (const auto& e : fr.evidence) {
        Location loc;
        loc.node = e.value("node", "");
        if (auto l = e.find("location"); l != e.end() && l->is_object())
          for (const auto& [k, v] : l->items())
            if (v.is_string()) loc.fields[k] = v.get<std::string>();
        std::vector<int> touched;
        epochs_[fr.epoch].index->touched(loc, touched);
        const int local = local_of_[fr.epoch][c];
        if (local < 0 || !std::binary_search(touched.begin(), touched.end(), local)) continue;
        if (!loc.node.empty()) hosts.insert(loc.node);
        if (evidence.size() < kMaxEvidenceListed) {
          json ej = e;
          ej["run_id"] = fr.run_id;
          evidence.push_back(std::move(ej));
        }
      }
    }
    json f;
    f["component"] = comps[c].id;
    f["kind"] = comps[c].kind;
    f["switch"] = nullptr;
    f["switch_port"] = nullptr;
    f["nvlink_domain"] = nullptr;
    json attached = json::array();
    if (comps[c].kind == "link") {
      const TopologyIndex& rep = *epochs_[comps[c].epoch].index;
      const Link& l = rep.topology().links[static_cast<size_t>(rep.components()[static_cast<size_t>(comps[c].local)].link)];
      for (const LinkEnd* e : {&l.a, &l.b}) {
        if (e->is_switch() && f["switch"].is_null()) {
          f["switch"] = e->sw;
          f["switch_port"] = e->id();
        }
        if (!e->is_switch()) attached.push_back(e->host);
      }
      f["link"] = {{"a", l.a.id()}, {"b", l.b.id()}, {"kind", l.kind}, {"width", l.width}, {"speed", l.speed}};
    } else if (comps[c].kind == "switch") {
      f["switch"] = comps[c].id.substr(7);
    } else {
      f["nvlink_domain"] = comps[c].id.substr(14);
    }
    f["hosts_attached"] = attached;
    f["ambiguous_with"] = ambiguous;
    f["window"] = {{"from", format_rfc3339(opt_.from_ns)}, {"to", format_rfc3339(opt_.to_ns)}};
    f["first_seen"] = format_rfc3339(first);
    f["last_seen"] = format_rfc3339(last);
    f["failed_runs"] = mine.size();
    f["direct_runs"] = mine_direct;
    f["crossing_runs"] = crossing_[c];
    f["ok_runs"] = crossing_[c] >= mine.size() ? crossing_[c] - mine.size() : 0;
    f["expected"] = static_cast<double>(crossing_[c]) * rate(c, 1);
    f["p_value"] = p;
    f["q_value"] = qv;
    f["confidence"] = 1.0 - qv;
    std::vector<std::string> host_list(hosts.begin(), hosts.end());
    if (host_list.size() > kMaxHostsListed) host_list.resize(kMaxHostsListed);
    f["hosts"] = host_list;
    f["hosts_total"] = hosts.size();
    f["users_total"] = users.size();
    f["jobs_total"] = jobs.size();
    f["jobs"] = job_list;
    f["evidence"] = evidence;
    findings.push_back(std::move(f));
  }
  json doc;
  doc["schema"] = "attribution.fabric_findings/v1";
  doc["window"] = {{"from", format_rfc3339(opt_.from_ns)}, {"to", format_rfc3339(opt_.to_ns)},
                   {"from_ns", opt_.from_ns}, {"to_ns", opt_.to_ns}};
  const Topology& topo = epochs_.back().index->topology();  // the version valid at the window's end
  doc["topology"] = {{"id", topo.id},
                     {"valid_from", topo.valid_from_ns == kNoValidFrom ? json(nullptr) : json(format_rfc3339(topo.valid_from_ns))},
                     {"digest", topo.digest}};
  if (epochs_.size() > 1) {
    json versions = json::array();
    for (const auto& e : epochs_) {
      const Topology& t = e.index->topology();
      versions.push_back({{"id", t.id}, {"valid_from", t.valid_from_ns == kNoValidFrom ? json(nullptr) : json(format_rfc3339(t.valid_from_ns))}});
    }
    doc["topology"]["versions"] = versions;  // each run resolved against the one valid at its end
  }
  doc["fleet"] = {{"runs", runs_},
                  {"failed", failed_},
                  {"fabric_failed", fabric_failed_},
                  {"fabric_unresolved", unresolved_},
                  {"base_rate", base},
                  {"components", comps.size()},
                  {"components_tested", m},
                  {"q_max", opt_.q_max}};
  doc["findings"] = findings;
  return doc;
}

std::vector<std::string> assign_ids(json& doc, const std::vector<std::pair<std::string, std::string>>& open_ids) {
  std::map<std::string, std::string> open(open_ids.begin(), open_ids.end());
  std::set<std::string> kept;
  std::string to = doc["window"].value("to", "");
  for (auto& f : doc["findings"]) {
    std::string comp = f.value("component", "");
    auto it = open.find(comp);
    if (it != open.end()) {
      f["id"] = it->second;
      kept.insert(comp);
    } else {
      f["id"] = fmt::format("fab-{:012x}", fnv1a64(comp + "@" + to) & 0xffffffffffffull);
    }
    f["status"] = "open";
  }
  std::vector<std::string> closed;
  for (const auto& [comp, id] : open)
    if (!kept.count(comp)) closed.push_back(id);
  return closed;
}

std::string findings_text(const json& doc) {
  const json& fl = doc["fleet"];
  std::string s = fmt::format("fabric: {} .. {}: {} runs, {} failed, {} fabric failures (base rate {:.4f}), {} components tested\n",
                              doc["window"].value("from", ""), doc["window"].value("to", ""), fl.value("runs", 0),
                              fl.value("failed", 0), fl.value("fabric_failed", 0), fl.value("base_rate", 0.0),
                              fl.value("components_tested", 0));
  if (doc["findings"].empty()) s += "no fabric component stands out\n";
  for (const auto& f : doc["findings"]) {
    s += fmt::format("{} {} {}: {} failed of {} crossing runs (expected {:.2f}), {} hosts, {} users, {} jobs, confidence {:.6f}{}\n",
                     f.value("id", "-"), f.value("kind", ""), f.value("component", ""), f.value("failed_runs", 0),
                     f.value("crossing_runs", 0), f.value("expected", 0.0), f.value("hosts_total", 0),
                     f.value("users_total", 0), f.value("jobs_total", 0), f.value("confidence", 0.0),
                     f["ambiguous_with"].empty() ? "" : fmt::format(" (or one of: {})", f["ambiguous_with"].dump()));
    for (size_t i = 0; i < f["evidence"].size() && i < 3; ++i) {
      const auto& e = f["evidence"][i];
      s += fmt::format("    run {} {} {}: {}\n", e.value("run_id", 0), e.value("node", ""), e.value("symptom", ""),
                       e.value("text", "").substr(0, 140));
    }
  }
  return s;
}

}  // namespace attribution::fabric
