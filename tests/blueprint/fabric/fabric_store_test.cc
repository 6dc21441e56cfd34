// The fabric tables through the product's writers (docs/fabric.md §4): runs stored by the
// verdict store's put() get their run_fabric row; a topology imported; the fleet analysis over
// the store finds the injected link, keeps the finding's id on a re-run, closes it when it is no
// longer found, and hands the fleet context to a job on that host.
// SQLite always; PostgreSQL when ATTRIBUTION_TEST_POSTGRES_DSN names a database (fabric_postgres.sh
// starts a real server and sets it).
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "fabric/store_fabric.h"

namespace attribution::blueprint {
namespace {

using nlohmann::json;

std::string read(const std::string& name) {
  std::ifstream in(std::string(FABRIC_TEST_DATA) + "/" + name, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

constexpr int64_t kT0 = 1793491200000000000;  // 2026-11-01T00:00:00Z
constexpr int64_t kHour = 3600'000'000'000;

RunRecord record(int id, const std::vector<std::string>& nodes, const std::string& domain, const json& evidence) {
  RunRecord r;
  r.context.id = std::to_string(id);
  r.context.scheduler = "slurm";
  r.context.cluster = "c1";
  r.context.user = "user" + std::to_string(id % 5);
  r.context.nodes = nodes;
  r.context.start = kT0 + id * kHour / 4 - kHour / 8;
  r.context.end = kT0 + id * kHour / 4;
  r.context.state = domain == "none" ? "COMPLETED" : "FAILED";
  r.verdict.domain = domain;
  r.verdict.outcome = domain == "none" ? "none.succeeded" : domain == "network" ? "network.link_flap" : "application.exception";
  r.verdict.quality = "probable";
  json v = {{"schema", "attribution.verdict/v1"},
            {"workload", {{"id", r.context.id}, {"nodes", nodes}}},
            {"outcome", r.verdict.outcome},
            {"domain", domain}};
  if (!evidence.empty()) v["fabric"] = {{"evidence", evidence}, {"candidates", json::array()}};
  r.verdict.json = v.dump();
  return r;
}

json port_error(const std::string& node) {
  return json::array({{{"symptom", "ib.port_error"}, {"node", node}, {"role", "root_cause"},
                       {"location", {{"hca", "mlx5_0"}, {"hca_port", "1"}}},
                       {"source", "logs/rank0.log"}, {"line", 7},
                       {"text", "NCCL WARN NET/IB : mlx5_0:1 Got async event : port error"}}});
}

void exercise(const std::string& db, const std::string& pg) {
  // The product's writer (the sqlite / postgres VerdictStore) stores the runs.
  YAML::Node cfg;
  if (pg.empty()) cfg["path"] = db;
  else cfg["dsn"] = pg;
  std::string error;
  auto writer = store_registry().at(pg.empty() ? "sqlite" : "postgres")(cfg, "store", error);
  ASSERT_TRUE(writer) << error;
  const std::vector<std::vector<std::string>> pairs = {{"gpu-a01", "gpu-b01"}, {"gpu-a01", "gpu-a02"}, {"gpu-b01", "gpu-b02"},
                                                       {"gpu-a02", "gpu-b02"}, {"gpu-a01", "gpu-b02"}, {"gpu-a02", "gpu-b01"}};
  int id = 0;
  for (int i = 0; i < 300; ++i, ++id) {
    int64_t run_id = 0;
    ASSERT_TRUE(writer->put(record(id, pairs[i % pairs.size()], i % 37 == 0 ? "application" : "none", json::array()), run_id, error))
        << error;
  }
  // Eight failures with port errors on gpu-b02's mlx5_0/1, with partners all over the fleet.
  for (int i = 0; i < 8; ++i, ++id) {
    int64_t run_id = 0;
    std::vector<std::string> nodes = {i % 2 ? "gpu-a01" : "gpu-a02", "gpu-b02"};
    ASSERT_TRUE(writer->put(record(id, nodes, "network", port_error("gpu-b02")), run_id, error)) << error;
  }
  writer.reset();

  auto store = open_fabric_store(db, pg);
  // Before any topology: a clear error, not a crash.
  json doc;
  EXPECT_FALSE(run_fleet_fabric(*store, 30 * 24 * kHour, std::nullopt, false, doc, error));
  EXPECT_NE(error.find("no topology stored"), std::string::npos) << error;

  fabric::TopologyBuilder b;
  std::vector<fabric::InputError> errors;
  ASSERT_TRUE(b.add_file("small.ibnd", read("small.ibnd"), errors));
  ASSERT_TRUE(b.add_file("small.yaml", read("small.yaml"), errors));
  fabric::Topology t;
  ASSERT_TRUE(b.build(t, errors));
  t.valid_from_ns = b.yaml_valid_from();
  t.imported_at = "2026-11-01T00:00:00.000Z";
  ASSERT_TRUE(store->put_topology(t, error)) << error;
  EXPECT_GT(t.id, 0);
  auto back = store->topology_at(kT0 + kHour, error);
  ASSERT_TRUE(back) << error;
  EXPECT_EQ(back->digest, t.digest);
  EXPECT_EQ(back->links.size(), 6u);

  ASSERT_TRUE(run_fleet_fabric(*store, 30 * 24 * kHour, std::nullopt, false, doc, error)) << error;
  EXPECT_EQ(doc["fleet"]["runs"].get<int>(), 308);
  ASSERT_FALSE(doc["findings"].empty()) << doc.dump(1);
  const json& f = doc["findings"][0];
  EXPECT_EQ(f["component"], "link:gpu-b02/mlx5_0/1~leaf-02/2") << doc.dump(1);
  EXPECT_EQ(f["failed_runs"].get<int>(), 8);
  std::string id1 = f["id"];
  EXPECT_EQ(id1.rfind("fab-", 0), 0u);

  json listed;
  ASSERT_TRUE(store->list_findings("open", listed, error)) << error;
  ASSERT_EQ(listed.size(), doc["findings"].size());
  EXPECT_EQ(listed[0]["id"], id1);
  EXPECT_EQ(listed[0]["status"], "open");

  // The same analysis again keeps the id.
  json again;
  ASSERT_TRUE(run_fleet_fabric(*store, 30 * 24 * kHour, std::nullopt, false, again, error)) << error;
  EXPECT_EQ(again["findings"][0]["id"], id1);

  // Fleet context for a new job on gpu-b02 (and none for one on gpu-a01 alone).
  auto lines = fleet_context(*store, {"gpu-b02", "gpu-a02"}, kT0 + 400 * kHour, error);
  ASSERT_EQ(lines.size(), 1u) << error;
  EXPECT_EQ(lines[0].host, "gpu-b02");
  EXPECT_EQ(lines[0].text.rfind("attribution fleet: open fabric finding " + id1 + " on link:gpu-b02/mlx5_0/1~leaf-02/2 confidence ", 0), 0u)
      << lines[0].text;
  EXPECT_TRUE(fleet_context(*store, {"gpu-a01"}, kT0 + 400 * kHour, error).empty());

  // The component's runs: the eight failures, newest first, with their evidence.
  json runs;
  ASSERT_TRUE(component_runs(*store, "link:gpu-b02/mlx5_0/1~leaf-02/2", INT64_MIN, INT64_MAX, 100, runs, error)) << error;
  ASSERT_EQ(runs["runs"].size(), 8u);
  EXPECT_GT(runs["runs"][0]["end_ns"].get<int64_t>(), runs["runs"][7]["end_ns"].get<int64_t>());
  EXPECT_EQ(runs["runs"][0]["evidence"][0]["symptom"], "ib.port_error");

  // A window after the failures: nothing stands out, the finding is closed.
  json later;
  ASSERT_TRUE(run_fleet_fabric(*store, kHour, kT0 + 10 * kHour, false, later, error)) << error;
  EXPECT_TRUE(later["findings"].empty()) << later.dump(1);
  EXPECT_EQ(later["closed"], json::array({id1}));
  json all;
  ASSERT_TRUE(store->list_findings("", all, error)) << error;
  bool closed = false;
  for (const auto& x : all)
    if (x["id"] == id1) closed = x["status"] == "closed";
  EXPECT_TRUE(closed) << all.dump(1);

  // A second version (re-cabled: gpu-b02 now on leaf-01) valid from after the failures: a window
  // over both resolves the failures against the version of their time, so the old link is named.
  std::string ibnd = read("small.ibnd");
  for (size_t p = 0; (p = ibnd.find("gpu-b02", p)) != std::string::npos; p += 7) ibnd.replace(p, 7, "gpu-@@@");
  for (size_t p = 0; (p = ibnd.find("gpu-a01", p)) != std::string::npos; p += 7) ibnd.replace(p, 7, "gpu-b02");
  for (size_t p = 0; (p = ibnd.find("gpu-@@@", p)) != std::string::npos; p += 7) ibnd.replace(p, 7, "gpu-a01");
  fabric::TopologyBuilder b2;
  ASSERT_TRUE(b2.add_file("v2.ibnd", ibnd, errors));
  ASSERT_TRUE(b2.add_file("small.yaml", read("small.yaml"), errors));
  fabric::Topology t2;
  ASSERT_TRUE(b2.build(t2, errors));
  t2.valid_from_ns = kT0 + 500 * kHour;
  t2.imported_at = "2026-11-20T00:00:00.000Z";
  ASSERT_TRUE(store->put_topology(t2, error)) << error;
  std::vector<int64_t> starts;
  ASSERT_TRUE(store->topology_starts(kT0, kT0 + 600 * kHour, starts, error)) << error;
  EXPECT_EQ(starts, std::vector<int64_t>{kT0 + 500 * kHour});
  json both;
  ASSERT_TRUE(run_fleet_fabric(*store, 30 * 24 * kHour, kT0 + 600 * kHour, true, both, error)) << error;
  EXPECT_EQ(both["topology"]["versions"].size(), 2u) << both["topology"].dump();
  ASSERT_FALSE(both["findings"].empty()) << both.dump(1);
  EXPECT_EQ(both["findings"][0]["component"], "link:gpu-b02/mlx5_0/1~leaf-02/2") << both["findings"].dump(1);
  json runs2;
  ASSERT_TRUE(component_runs(*store, "link:gpu-b02/mlx5_0/1~leaf-02/2", INT64_MIN, kT0 + 600 * kHour, 100, runs2, error)) << error;
  EXPECT_EQ(runs2["runs"].size(), 8u);
}

TEST(FabricStore, Sqlite) {
  auto dir = std::filesystem::temp_directory_path() / ("fabric-store-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  exercise((dir / "store.sqlite").string(), "");
  std::filesystem::remove_all(dir);
}

TEST(FabricStore, Postgres) {
  const char* dsn = std::getenv("ATTRIBUTION_TEST_POSTGRES_DSN");
  if (dsn == nullptr || *dsn == 0) GTEST_SKIP() << "ATTRIBUTION_TEST_POSTGRES_DSN not set (fabric_postgres.sh sets it)";
  exercise("", dsn);
}

}  // namespace
}  // namespace attribution::blueprint
