// blueprint/src/fabric/fleet: the binomial tail, and the analysis on synthetic fleets over a
// small topology: a flapping host link is found (and not its leaf), background noise is not.
#include "fabric/fleet.h"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <sstream>

namespace attribution::fabric {
namespace {

using nlohmann::json;

std::string read(const std::string& name) {
  std::ifstream in(std::string(FABRIC_TEST_DATA) + "/" + name, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

Topology small() {
  TopologyBuilder b;
  std::vector<InputError> errors;
  EXPECT_TRUE(b.add_file("small.ibnd", read("small.ibnd"), errors));
  EXPECT_TRUE(b.add_file("small.yaml", read("small.yaml"), errors));
  Topology t;
  EXPECT_TRUE(b.build(t, errors));
  return t;
}

TEST(Binomial, UpperTailMatchesClosedForms) {
  // P(X >= 1) = 1 - (1-p)^n
  EXPECT_NEAR(binomial_upper_tail(10, 1, 0.01), 1 - std::pow(0.99, 10), 1e-6);
  EXPECT_NEAR(binomial_upper_tail(100, 3, 0.01), 1 - (std::pow(0.99, 100) + 100 * 0.01 * std::pow(0.99, 99) +
                                                      4950 * 1e-4 * std::pow(0.99, 98)),
              1e-9);
  EXPECT_NEAR(binomial_upper_tail(5, 5, 0.5), 1.0 / 32, 1e-12);
  EXPECT_EQ(binomial_upper_tail(5, 6, 0.5), 0.0);
  EXPECT_EQ(binomial_upper_tail(1000000, 0, 0.01), 1.0);
  double tiny = binomial_upper_tail(1000000, 500, 0.0001);
  EXPECT_GT(tiny, 0.0);
  EXPECT_LT(tiny, 1e-100);
}

struct Lcg {
  uint64_t s;
  uint32_t next() {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    return static_cast<uint32_t>(s >> 33);
  }
};

struct Fleet {
  std::vector<std::string> jobs, users, hosts, outcomes, evidence;
  std::vector<FabricRunRow> rows;
  void add(int64_t id, int64_t /*t*/, std::string h, bool failed, bool fabric, std::string ev, int user) {
    jobs.push_back(std::to_string(1000 + id));
    users.push_back("user" + std::to_string(user));
    hosts.push_back(std::move(h));
    outcomes.push_back(fabric ? "network.link_flap" : failed ? "application.exception" : "none.succeeded");
    evidence.push_back(std::move(ev));
  }
  void finish(int64_t t0) {
    for (size_t i = 0; i < jobs.size(); ++i)
      rows.push_back({static_cast<int64_t>(i + 1), t0 + static_cast<int64_t>(i) * 1'000'000'000, jobs[i], users[i],
                      hosts[i], outcomes[i] != "none.succeeded", outcomes[i] == "network.link_flap", outcomes[i],
                      evidence[i]});
  }
};

constexpr int64_t kT0 = 1762000000000000000;

json analyse(const TopologyIndex& idx, const Fleet& f) {
  FleetAnalysis a(idx, {kT0, kT0 + 10'000'000'000'000, 0.01, 2});
  for (const auto& r : f.rows) a.add(r);
  return a.finish();
}

Fleet background(int runs, uint64_t seed, int noise_per_mille) {
  const std::vector<std::string> all = {"gpu-a01", "gpu-a02", "gpu-b01", "gpu-b02"};
  Fleet f;
  Lcg rng{seed};
  for (int i = 0; i < runs; ++i) {
    size_t a = rng.next() % 4, b = rng.next() % 4;
    std::string hosts = a == b ? all[a] : all[std::min(a, b)] + " " + all[std::max(a, b)];
    bool noise = static_cast<int>(rng.next() % 1000) < noise_per_mille;
    std::string ev = "[]";
    if (noise) {
      // Background network failures: a completion error with a random peer.
      ev = json::array({{{"node", all[a]}, {"symptom", "ib.completion_error.12"},
                         {"location", {{"peer", "10.0." + std::to_string(1 + rng.next() % 2) + "." + std::to_string(1 + rng.next() % 2)}}}}})
               .dump();
    }
    f.add(i, 0, hosts, noise, noise, ev, static_cast<int>(rng.next() % 7));
  }
  return f;
}

TEST(FleetAnalysis, FindsAFlappingHostLinkNotItsLeaf) {
  TopologyIndex idx(small());
  Fleet f = background(2000, 7, 20);
  // Six failures over several days, users and partner hosts, all with port errors on gpu-a02's
  // mlx5_0 port 1.
  const char* partners[] = {"gpu-a01", "gpu-b01", "gpu-b02", "gpu-b01", "gpu-a01", "gpu-b02"};
  for (int i = 0; i < 6; ++i) {
    json ev = json::array({{{"node", "gpu-a02"}, {"symptom", "ib.port_error"}, {"location", {{"hca", "mlx5_0"}, {"hca_port", "1"}}},
                            {"text", "NCCL WARN NET/IB : mlx5_0:1 Got async event : port error"}}});
    f.add(5000 + i, 0, std::string(partners[i]) + " gpu-a02", true, true, ev.dump(), i);
  }
  f.finish(kT0);
  json doc = analyse(idx, f);
  ASSERT_GE(doc["findings"].size(), 1u) << doc.dump(1);
  const json& top = doc["findings"][0];
  EXPECT_EQ(top["component"], "link:gpu-a02/mlx5_0/1~leaf-01/2") << doc.dump(1);
  EXPECT_EQ(top["switch_port"], "leaf-01/2");
  EXPECT_GE(top["failed_runs"].get<int>(), 6);
  EXPECT_GE(top["users_total"].get<int>(), 5);
  EXPECT_GT(top["confidence"].get<double>(), 0.99);
  EXPECT_FALSE(top["evidence"].empty());
  for (const auto& finding : doc["findings"]) EXPECT_NE(finding["component"], "switch:leaf-01") << doc.dump(1);
  EXPECT_EQ(doc["fleet"]["runs"].get<int>(), 2006);

  std::vector<std::string> closed = assign_ids(doc, {{"link:gpu-a02/mlx5_0/1~leaf-01/2", "fab-000000000042"}, {"switch:x", "fab-1"}});
  EXPECT_EQ(doc["findings"][0]["id"], "fab-000000000042");
  EXPECT_EQ(closed, std::vector<std::string>{"fab-1"});
  EXPECT_NE(findings_text(doc).find("link:gpu-a02/mlx5_0/1~leaf-01/2"), std::string::npos);
}

TEST(FleetAnalysis, PortsOfSeveralHostsFailingTogetherNameTheirSwitch) {
  TopologyIndex idx(small());
  Fleet f = background(2000, 5, 20);
  // A failing leaf ASIC: in each failed run both hosts under leaf-01 see their own port go down at
  // once. No single link explains that; the switch does.
  for (int i = 0; i < 8; ++i) {
    json ev = json::array();
    for (const char* h : {"gpu-a01", "gpu-a02"})
      ev.push_back({{"node", h}, {"symptom", "net.link_down"}, {"location", {{"iface", "mlx5_0"}, {"hca_port", "1"}}},
                    {"text", "mlx5_core 0000:1a:00.0 mlx5_0: Port: 1 Link DOWN"}});
    f.add(6000 + i, 0, "gpu-a01 gpu-a02", true, true, ev.dump(), i);
  }
  f.finish(kT0);
  json doc = analyse(idx, f);
  ASSERT_FALSE(doc["findings"].empty()) << doc.dump(1);
  EXPECT_EQ(doc["findings"][0]["component"], "switch:leaf-01") << doc["findings"].dump(1);
  EXPECT_GE(doc["findings"][0]["direct_runs"].get<int>(), 8);
  for (const auto& finding : doc["findings"])
    EXPECT_EQ(finding["component"].get<std::string>().find("link:gpu-a0"), std::string::npos) << doc["findings"].dump(1);
}

TEST(FleetAnalysis, SwitchReportPortsOffTheRunsPathDoNotCount) {
  TopologyIndex idx(small());
  Fleet f = background(2000, 9, 20);
  // gpu-a02's link fails; each run's switch report (ibqueryerrors on leaf-01) also lists the
  // leaf's uplink, which a run on one leaf never crosses.
  for (int i = 0; i < 6; ++i) {
    json ev = json::array();
    ev.push_back({{"node", "gpu-a02"}, {"symptom", "ib.port_error"}, {"location", {{"hca", "mlx5_0"}, {"hca_port", "1"}}}});
    for (const char* port : {"2", "33"})
      ev.push_back({{"node", "gpu-a01"}, {"symptom", "net.ib.switch_port_errors"},
                    {"location", {{"switch_guid", "0x7cfe900300a10001"}, {"switch_port", port}, {"counter", "SymbolErrorCounter"}}}});
    f.add(6100 + i, 0, "gpu-a01 gpu-a02", true, true, ev.dump(), i);
  }
  f.finish(kT0);
  json doc = analyse(idx, f);
  ASSERT_FALSE(doc["findings"].empty()) << doc.dump(1);
  EXPECT_EQ(doc["findings"][0]["component"], "link:gpu-a02/mlx5_0/1~leaf-01/2") << doc["findings"].dump(1);
  EXPECT_TRUE(doc["findings"][0]["ambiguous_with"].empty()) << doc["findings"].dump(1);
  for (const auto& finding : doc["findings"]) EXPECT_NE(finding["component"], "link:leaf-01/33~spine-01/1");
}

TEST(FleetAnalysis, EachRunIsResolvedAgainstTheTopologyValidAtItsEnd) {
  // Version 2 re-cables: gpu-a02 and gpu-b01 swap places (a02 on leaf-02 port 1, b01 on leaf-01
  // port 2). It starts after every run below, inside the analysis window.
  std::string ibnd = read("small.ibnd");
  for (size_t p = 0; (p = ibnd.find("gpu-a02", p)) != std::string::npos; p += 7) ibnd.replace(p, 7, "gpu-@@@");
  for (size_t p = 0; (p = ibnd.find("gpu-b01", p)) != std::string::npos; p += 7) ibnd.replace(p, 7, "gpu-a02");
  for (size_t p = 0; (p = ibnd.find("gpu-@@@", p)) != std::string::npos; p += 7) ibnd.replace(p, 7, "gpu-b01");
  TopologyBuilder b;
  std::vector<InputError> errors;
  ASSERT_TRUE(b.add_file("v2.ibnd", ibnd, errors));
  ASSERT_TRUE(b.add_file("small.yaml", read("small.yaml"), errors));
  Topology v2;
  ASSERT_TRUE(b.build(v2, errors));
  TopologyIndex old_index(small()), new_index(std::move(v2));
  ASSERT_GE(new_index.find("link:gpu-a02/mlx5_0/1~leaf-02/1"), 0);

  Fleet f = background(2000, 7, 20);
  const char* partners[] = {"gpu-a01", "gpu-b01", "gpu-b02", "gpu-b01", "gpu-a01", "gpu-b02"};
  for (int i = 0; i < 6; ++i) {
    json ev = json::array({{{"node", "gpu-a02"}, {"symptom", "ib.port_error"}, {"location", {{"hca", "mlx5_0"}, {"hca_port", "1"}}}}});
    f.add(5000 + i, 0, std::string(partners[i]) + " gpu-a02", true, true, ev.dump(), i);
  }
  f.finish(kT0);
  const int64_t recabled = kT0 + 100'000'000'000'000;  // after the last run
  FleetAnalysis a({{recabled, &new_index}, {kNoValidFrom, &old_index}}, {kT0, kT0 + 200'000'000'000'000, 0.01, 2});
  for (const auto& r : f.rows) a.add(r);
  json doc = a.finish();
  ASSERT_FALSE(doc["findings"].empty()) << doc.dump(1);
  // The port failed while it was cabled to leaf-01 port 2: that link, not today's.
  EXPECT_EQ(doc["findings"][0]["component"], "link:gpu-a02/mlx5_0/1~leaf-01/2") << doc["findings"].dump(1);
  EXPECT_EQ(doc["findings"][0]["switch_port"], "leaf-01/2");
  EXPECT_FALSE(doc["findings"][0]["evidence"].empty());
  EXPECT_EQ(doc["topology"]["versions"].size(), 2u);
  for (const auto& finding : doc["findings"]) EXPECT_NE(finding["component"], "link:gpu-a02/mlx5_0/1~leaf-02/1");
}

TEST(FleetAnalysis, BackgroundNoiseAloneFindsNothing) {
  TopologyIndex idx(small());
  for (uint64_t seed : {1, 2, 3}) {
    Fleet f = background(3000, seed, 30);
    f.finish(kT0);
    json doc = analyse(idx, f);
    EXPECT_TRUE(doc["findings"].empty()) << "seed " << seed << ": " << doc["findings"].dump(1);
    EXPECT_GT(doc["fleet"]["fabric_failed"].get<int>(), 50);
  }
}

TEST(FleetAnalysis, NvlinkDomainFaultAndWindow) {
  TopologyIndex idx(small());
  Fleet f = background(1000, 11, 10);
  // Ten failures with SXid link errors on both hosts of domain nvl-b (two domains only: the
  // domain is compared with the other one, so it takes more than a handful).
  for (int i = 0; i < 10; ++i) {
    json ev = json::array({{{"node", i % 2 ? "gpu-b01" : "gpu-b02"}, {"symptom", "gpu.nvswitch.sxid_fatal"},
                            {"location", {{"nvswitch", "0"}, {"nvlink", std::to_string(30 + i)}}}}});
    f.add(7000 + i, 0, "gpu-b01 gpu-b02", true, true, ev.dump(), i);
  }
  f.finish(kT0);
  json doc = analyse(idx, f);
  ASSERT_FALSE(doc["findings"].empty()) << doc.dump(1);
  EXPECT_EQ(doc["findings"][0]["component"], "nvlink_domain:nvl-b");
  EXPECT_EQ(doc["findings"][0]["nvlink_domain"], "nvl-b");
  // A window that ends before the injected runs sees none of them.
  FleetAnalysis early(idx, {kT0, kT0 + 999'000'000'000, 0.01, 2});
  for (const auto& r : f.rows) early.add(r);
  json e = early.finish();
  EXPECT_EQ(e["fleet"]["runs"].get<int>(), 1000);
  for (const auto& finding : e["findings"]) EXPECT_NE(finding["component"], "nvlink_domain:nvl-b");
}

}  // namespace
}  // namespace attribution::fabric
