// The Prometheus collector against a REAL Prometheus (Debian's 2.42), started on loopback by
// tests/integration/prometheus.sh with the dcgm-metrics-only-xid79 sample's DCGM series
// backfilled by `promtool tsdb create-blocks-from openmetrics`. PROM_URL names it; PROM_DOWN_URL
// names a port where nothing listens.
//
// The sample: ranks on gpu-c01/c02 time out in the NCCL watchdog; gpu-c03's kernel log is missing;
// only its DCGM Xid gauge (0 → 79 on GPU 2) says why. With the metrics the verdict must move to
// gpu.fell_off_bus on gpu-c03 (probable: the Xid comes from a gauge, not a kernel line).
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>

#include "attribution/codec.h"
#include "connector_test_util.h"
#include "connectors/prometheus/prometheus_collector.h"

namespace attribution::testing {
namespace {

const std::string kSample = std::string(ATTRIBUTION_TEST_SAMPLES_DIR) + "/dcgm-metrics-only-xid79";

std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

// The sample's evidence except its metrics file (that is what Prometheus serves).
Session session_without_metrics(ExecutionContext& ctx) {
  auto m = parse_bundle_manifest(read_all(kSample + "/workload.yaml"), "dcgm");
  EXPECT_TRUE(m.ok()) << m.error;
  ctx = m.value.context;
  Session s(source_rules(), ctx);
  for (const auto& src : m.value.sources) {
    if (src.defaults.kind == ObservationKind::kNodeMetrics) continue;
    TextSource ts = src.defaults;
    ts.name = src.path;
    s.ingest_text(ts, read_all(kSample + "/" + src.path));
  }
  return s;
}

blueprint::PrometheusCollector collector(const std::string& url) {
  blueprint::PrometheusCollectorConfig c;
  std::string err;
  EXPECT_TRUE(blueprint::parse_prometheus_config(
      YAML::Load("name: prometheus/dcgm\nurl: " + url + "\nnode_label: Hostname\nstep_s: 30\nretries: 2\nbackoff_ms: 50\n"
                 "queries:\n"
                 "  - 'DCGM_FI_DEV_XID_ERRORS{Hostname=~\"{nodes_regex}\"}'\n"
                 "  - 'DCGM_FI_DEV_ECC_DBE_VOL_TOTAL{Hostname=~\"{nodes_regex}\"}'\n"
                 "  - 'node_infiniband_port_receive_errors_total{instance=~\"({nodes_regex}):.*\"}'\n"),
      c, err))
      << err;
  return blueprint::PrometheusCollector(c);
}

TEST(PrometheusLive, XidOnlyInMetricsChangesTheVerdict) {
  const std::string url = env("PROM_URL");
  ASSERT_FALSE(url.empty()) << "PROM_URL not set: run tests/integration/prometheus.sh";
  ExecutionContext ctx;
  Session before = session_without_metrics(ctx);
  Verdict v0 = before.attribute();
  std::cout << "[before] " << v0.outcome << " " << v0.quality << " root_node=" << v0.root_node << "\n";
  EXPECT_NE(v0.outcome, "gpu.fell_off_bus");

  Session with = session_without_metrics(ctx);
  SessionSink sink(with);
  auto col = collector(url);
  ConnectorReport r = col.collect({ctx, {}}, sink);
  std::cout << "[prometheus] " << r.status << ": " << r.reason << " bytes=" << r.bytes << "\n";
  EXPECT_EQ(r.status, "ok") << r.reason;
  EXPECT_GT(r.observations, 0u);
  EXPECT_GT(r.bytes, 0u);
  bool saw79 = false;
  for (const auto& o : sink.kept) {
    ASSERT_TRUE(o.metric.has_value());
    EXPECT_EQ(o.kind, ObservationKind::kNodeMetrics);
    EXPECT_EQ(o.node, "gpu-c03");
    if (o.metric->name == "DCGM_FI_DEV_XID_ERRORS" && o.metric->value == 79 && o.metric->labels.at("gpu") == "2") saw79 = true;
  }
  EXPECT_TRUE(saw79);
  with.add_connector_report(r);
  Verdict v1 = with.attribute();
  std::cout << "[after] " << v1.outcome << " " << v1.quality << " root_node=" << v1.root_node << "\n";
  EXPECT_EQ(v1.outcome, "gpu.fell_off_bus") << v1.summary;
  EXPECT_EQ(v1.root_node, "gpu-c03") << v1.summary;
  EXPECT_EQ(v1.quality, "probable") << v1.summary;
}

TEST(PrometheusLive, PrometheusDownIsAnErrorAndLowersQuality) {
  const std::string down = env("PROM_DOWN_URL");
  ASSERT_FALSE(down.empty()) << "PROM_DOWN_URL not set: run tests/integration/prometheus.sh";
  ExecutionContext ctx;
  Session healthy = session_without_metrics(ctx);
  Verdict base = healthy.attribute();
  Session s = session_without_metrics(ctx);
  SessionSink sink(s);
  auto col = collector(down);
  ConnectorReport r = col.collect({ctx, {}}, sink);
  std::cout << "[down] " << r.status << ": " << r.reason << "\n";
  EXPECT_EQ(r.status, "error");
  EXPECT_NE(r.reason.find("after 2 tries"), std::string::npos) << r.reason;
  EXPECT_NE(r.reason.find(down), std::string::npos) << r.reason;
  EXPECT_EQ(r.observations, 0u);
  s.add_connector_report(r);
  Verdict v = s.attribute();
  std::cout << "[down verdict] " << v.outcome << " " << v.quality << " (healthy: " << base.quality << ")\n";
  EXPECT_NE(v.quality, "definitive");
  EXPECT_NE(v.json.find("connector prometheus/dcgm failed"), std::string::npos) << v.json;

  // On a workload whose evidence is otherwise definitive (the xid79 cascade sample, all files),
  // the failed metrics connector lowers the quality.
  const std::string xid = std::string(ATTRIBUTION_TEST_SAMPLES_DIR) + "/xid79-nccl-watchdog-cascade";
  auto m = parse_bundle_manifest(read_all(xid + "/workload.yaml"), "xid79");
  ASSERT_TRUE(m.ok()) << m.error;
  auto full = [&] {
    Session x(source_rules(), m.value.context);
    for (const auto& src : m.value.sources) {
      TextSource ts = src.defaults;
      ts.name = src.path;
      x.ingest_text(ts, read_all(xid + "/" + src.path));
    }
    return x;
  };
  Session ok_session = full();
  Verdict good = ok_session.attribute();
  ASSERT_EQ(good.quality, "definitive") << good.summary;
  Session degraded = full();
  SessionSink sink2(degraded);
  ConnectorReport r2 = col.collect({m.value.context, {}}, sink2);
  EXPECT_EQ(r2.status, "error");
  degraded.add_connector_report(r2);
  Verdict lowered = degraded.attribute();
  std::cout << "[down verdict, xid79 sample] " << lowered.outcome << " " << lowered.quality << " (healthy: "
            << good.quality << ")\n";
  EXPECT_EQ(lowered.outcome, good.outcome);
  const std::vector<std::string> order = {"definitive", "probable", "ambiguous", "insufficient"};
  auto rank = [&](const std::string& q) { return std::find(order.begin(), order.end(), q) - order.begin(); };
  EXPECT_GT(rank(lowered.quality), rank(good.quality)) << lowered.summary;
}

TEST(PrometheusLive, BadQueryIsReported) {
  const std::string url = env("PROM_URL");
  ASSERT_FALSE(url.empty());
  blueprint::PrometheusCollectorConfig c;
  std::string err;
  ASSERT_TRUE(blueprint::parse_prometheus_config(YAML::Load("url: " + url + "\nquery: 'rate(('\n"), c, err));
  ExecutionContext ctx;
  Session s = session_without_metrics(ctx);
  SessionSink sink(s);
  ConnectorReport r = blueprint::PrometheusCollector(c).collect({ctx, {}}, sink);
  EXPECT_EQ(r.status, "error");
  EXPECT_NE(r.reason.find("HTTP 400"), std::string::npos) << r.reason;
  EXPECT_NE(r.reason.find("bad_data"), std::string::npos) << r.reason;
}

}  // namespace
}  // namespace attribution::testing
