// Prometheus collector without a Prometheus: response parsing, node from the `instance` label,
// changes-only sampling, PromQL template quoting, error bodies. A loopback cpp-httplib server
// answers /api/v1/query_range with the documented shape. The real-server test is
// prometheus_live_test (tests/integration/prometheus.sh).
#include <gtest/gtest.h>
#include <httplib.h>

#include <thread>

#include "connector_test_util.h"
#include "connectors/prometheus/prometheus_collector.h"

namespace attribution::testing {
namespace {

struct FakeProm {
  httplib::Server server;
  std::thread thread;
  int port = -1;
  std::vector<std::string> queries;
  std::string start, end, step;
  explicit FakeProm(std::string body, int status = 200) {
    server.Post("/api/v1/query_range", [this, body, status](const httplib::Request& req, httplib::Response& res) {
      queries.push_back(req.get_param_value("query"));
      start = req.get_param_value("start");
      end = req.get_param_value("end");
      step = req.get_param_value("step");
      res.status = status;
      res.set_content(body, "application/json");
    });
    port = server.bind_to_any_port("127.0.0.1");
    thread = std::thread([this] { server.listen_after_bind(); });
    for (int i = 0; i < 200 && !server.is_running(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ~FakeProm() {
    server.stop();
    thread.join();
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port); }
};

ExecutionContext context() {
  ExecutionContext c;
  c.id = "9";
  c.nodes = {"gpu-c03", "gpu.x"};
  c.start = rfc3339("2026-10-13T16:00:00Z");
  c.end = rfc3339("2026-10-13T18:37:53Z");
  return c;
}

TEST(PrometheusCollector, SamplesBecomeNodeMetricsWithTheNodeLabel) {
  const std::string body = R"({"status":"success","data":{"resultType":"matrix","result":[
    {"metric":{"__name__":"DCGM_FI_DEV_XID_ERRORS","gpu":"2","pci_bus_id":"00000000:81:00.0","instance":"gpu-c03:9400"},
     "values":[[1791915914,"0"],[1791915944,"0"],[1791916064.5,"79"],[1791916094,"79"]]}]}})";
  FakeProm prom(body);
  ASSERT_GT(prom.port, 0);
  blueprint::PrometheusCollectorConfig c;
  std::string err;
  ASSERT_TRUE(blueprint::parse_prometheus_config(
      YAML::Load("url: " + prom.url() + "\nnode_label: instance\nstep_s: 15\nmargin_s: 60\n"
                 "query: 'DCGM_FI_DEV_XID_ERRORS{instance=~\"({nodes_regex}):.*\"}'\n"), c, err)) << err;
  blueprint::PrometheusCollector col(c);
  ExecutionContext ctx = context();
  Session session(source_rules(), ctx);
  SessionSink sink(session);
  ConnectorReport r = col.collect({ctx, {}}, sink);
  EXPECT_EQ(r.status, "ok") << r.reason;
  ASSERT_EQ(prom.queries.size(), 1u);
  EXPECT_EQ(prom.queries[0], "DCGM_FI_DEV_XID_ERRORS{instance=~\"(gpu-c03|gpu\\\\.x):.*\"}");
  EXPECT_EQ(prom.start, "1791907140.000");  // start - 60 s, seconds with ms
  EXPECT_EQ(prom.step, "15");
  ASSERT_EQ(sink.kept.size(), 2u);  // changes only: 0, then 79
  EXPECT_EQ(sink.kept[0].metric->value, 0);
  EXPECT_EQ(sink.kept[1].metric->value, 79);
  EXPECT_EQ(sink.kept[1].metric->t, 1791916064500000000LL);
  EXPECT_EQ(sink.kept[1].node, "gpu-c03");  // instance without the port
  EXPECT_EQ(sink.kept[1].metric->name, "DCGM_FI_DEV_XID_ERRORS");
  EXPECT_EQ(sink.kept[1].metric->labels.count("__name__"), 0u);
  Verdict v = session.attribute();
  EXPECT_NE(v.json.find("gpu.xid.79"), std::string::npos) << v.summary;
}

TEST(PrometheusCollector, ErrorsAndEmptyResults) {
  FakeProm bad(R"({"status":"error","errorType":"bad_data","error":"invalid parameter \"query\": 1:7: parse error"})", 400);
  blueprint::PrometheusCollectorConfig c;
  std::string err;
  ASSERT_TRUE(blueprint::parse_prometheus_config(YAML::Load("url: " + bad.url() + "\nquery: 'rate(('\n"), c, err));
  ExecutionContext ctx = context();
  Session session(source_rules(), ctx);
  SessionSink sink(session);
  ConnectorReport r = blueprint::PrometheusCollector(c).collect({ctx, {}}, sink);
  EXPECT_EQ(r.status, "error");
  EXPECT_NE(r.reason.find("HTTP 400"), std::string::npos) << r.reason;
  EXPECT_NE(r.reason.find("bad_data: invalid parameter"), std::string::npos) << r.reason;

  FakeProm empty(R"({"status":"success","data":{"resultType":"matrix","result":[]}})");
  blueprint::PrometheusCollectorConfig d;
  ASSERT_TRUE(blueprint::parse_prometheus_config(YAML::Load("url: " + empty.url()), d, err));
  EXPECT_EQ(d.queries.size(), 4u);  // the default DCGM queries
  r = blueprint::PrometheusCollector(d).collect({ctx, {}}, sink);
  EXPECT_EQ(r.status, "empty") << r.reason;
  EXPECT_EQ(empty.queries.at(0), "DCGM_FI_DEV_XID_ERRORS{Hostname=~\"gpu-c03|gpu\\\\.x\"}");

  blueprint::PrometheusCollectorConfig bad_cfg;
  EXPECT_FALSE(blueprint::parse_prometheus_config(YAML::Load("query: up"), bad_cfg, err));
  EXPECT_EQ(err, "prometheus.url: missing");
}

}  // namespace
}  // namespace attribution::testing
