// Unit tests of the service's parts: ingest decoding, binary batch codec, config precedence,
// metrics exposition, constant-time secret compare.
#include <gtest/gtest.h>

#include <cmath>

#include "attribution/codec.h"
#include "config.h"
#include "ingest.h"
#include "log.h"
#include "metrics.h"
#include "server.h"
#include "store.h"

namespace attribution::service {
namespace {

TEST(Ingest, JsonArrayPartialAcceptance) {
  IngestOptions opt;
  auto r = parse_observations(
      R"([{"kind":"syslog","node":"n1","text":"NVRM: Xid 79"},
          {"kind":"bogus","text":"x"},
          {"kind":"applog","rank":"three","text":"x"},
          {"kind":"applog"},
          42,
          {"kind":"node_metrics","node":"n2","metric":{"name":"DCGM_FI_DEV_XID_ERRORS","labels":{"gpu":"0"},"value":79}}])",
      opt);
  ASSERT_TRUE(r.fatal.empty());
  EXPECT_EQ(r.items, 6u);
  ASSERT_EQ(r.observations.size(), 2u);
  EXPECT_EQ(r.observations[0].kind, ObservationKind::kSyslog);
  EXPECT_EQ(r.observations[0].node, "n1");
  ASSERT_TRUE(r.observations[1].metric.has_value());
  EXPECT_EQ(r.observations[1].metric->labels.at("gpu"), "0");
  EXPECT_EQ(r.observations[1].metric->value, 79);
  ASSERT_EQ(r.rejected.size(), 4u);
  EXPECT_EQ(r.rejected[0].index, 1u);
  EXPECT_NE(r.rejected[0].reason.find("kind"), std::string::npos);
  EXPECT_EQ(r.rejected[1].index, 2u);
  EXPECT_NE(r.rejected[1].reason.find("rank"), std::string::npos);
  EXPECT_EQ(r.rejected[2].index, 3u);
  EXPECT_EQ(r.rejected[3].index, 4u);
}

TEST(Ingest, NdjsonLinesAreItems) {
  IngestOptions opt;
  std::string body =
      "{\"kind\":\"applog\",\"text\":\"a\",\"source\":{\"source\":\"f\",\"line\":7}}\n"
      "\n"
      "{not json}\n"
      "{\"kind\":\"applog\",\"text\":\"\xff\xfe\"}\n"
      "{\"kind\":\"applog\",\"text\":\"b\",\"observed_at\":\"2024-05-01T10:00:00Z\"}\r\n";
  auto r = parse_observations(body, opt);
  ASSERT_TRUE(r.fatal.empty());
  ASSERT_EQ(r.observations.size(), 2u);
  EXPECT_EQ(r.observations[0].source.source, "f");
  EXPECT_EQ(r.observations[0].source.line, 7u);
  EXPECT_EQ(r.observations[1].observed_at, parse_rfc3339("2024-05-01T10:00:00Z").value);
  ASSERT_EQ(r.rejected.size(), 2u);
  EXPECT_EQ(r.rejected[0].index, 1u);  // blank lines do not count
  EXPECT_EQ(r.rejected[1].index, 2u);
  EXPECT_NE(r.rejected[1].reason.find("UTF-8"), std::string::npos);
}

TEST(Ingest, MalformedArrayIsFatal) {
  IngestOptions opt;
  auto r = parse_observations("[{\"kind\":\"applog\",", opt);
  EXPECT_EQ(r.fatal_code, "malformed_json");
  auto u = parse_observations("[{\"kind\":\"applog\",\"text\":\"\xc3\x28\"}]", opt);
  EXPECT_EQ(u.fatal_code, "invalid_utf8");
}

TEST(Ingest, LongTextTruncatedOnUtf8Boundary) {
  IngestOptions opt;
  opt.max_line_bytes = 10;
  // "aaaaaaaaa" + "é" (2 bytes) = 11 bytes: the cut must not split "é".
  auto r = parse_observations("{\"kind\":\"applog\",\"text\":\"aaaaaaaaa\xc3\xa9zz\"}", opt);
  ASSERT_EQ(r.observations.size(), 1u);
  EXPECT_EQ(r.observations[0].text, "aaaaaaaaa");
  EXPECT_EQ(r.truncated, 1u);
}

TEST(Ingest, MatchesCoreCodecRoundTrip) {
  // What the blueprint sends (observation_to_json) must decode to the same Observation.
  std::vector<Observation> in(3);
  in[0].kind = ObservationKind::kSyslog;
  in[0].node = "gpu-b";
  in[0].rank = 5;
  in[0].gpu = "0000:9b:00";
  in[0].observed_at = parse_rfc3339("2026-03-14T08:02:11.125Z").value;
  in[0].source = {"kernel/dmesg.txt", 812};
  in[0].text = "NVRM: Xid (PCI:0000:9b:00): 79, pid=0, GPU has fallen off the bus. \"q\" \\ \t";
  in[1].kind = ObservationKind::kScheduler;
  in[1].text = "6053|FAILED|1:0";
  in[2].kind = ObservationKind::kNodeMetrics;
  in[2].node = "n1";
  in[2].observed_at = parse_rfc3339("2026-03-14T08:02:11Z").value;
  in[2].metric = MetricSample{"DCGM_FI_DEV_XID_ERRORS", {{"gpu", "3"}}, 79.5, in[2].observed_at};
  std::string ndjson;
  for (const auto& o : in) ndjson += observation_to_json(o) + "\n";
  auto r = parse_observations(ndjson, IngestOptions{});
  ASSERT_TRUE(r.rejected.empty()) << r.rejected[0].reason << "\n" << ndjson;
  ASSERT_EQ(r.observations.size(), in.size());
  for (size_t i = 0; i < in.size(); ++i) {
    const auto& a = in[i];
    const auto& b = r.observations[i];
    EXPECT_EQ(a.kind, b.kind) << i;
    EXPECT_EQ(a.node, b.node) << i;
    EXPECT_EQ(a.rank, b.rank) << i;
    EXPECT_EQ(a.gpu, b.gpu) << i;
    EXPECT_EQ(a.observed_at, b.observed_at) << i;
    EXPECT_EQ(a.source.source, b.source.source) << i;
    EXPECT_EQ(a.source.line, b.source.line) << i;
    EXPECT_EQ(a.text, b.text) << i;
    ASSERT_EQ(a.metric.has_value(), b.metric.has_value()) << i;
    if (a.metric) {
      EXPECT_EQ(a.metric->name, b.metric->name);
      EXPECT_EQ(a.metric->labels, b.metric->labels);
      EXPECT_EQ(a.metric->value, b.metric->value);
    }
    // And the core's own decoder agrees with ours.
    auto c = observation_from_json(observation_to_json(a));
    ASSERT_TRUE(c.ok()) << c.error;
    EXPECT_EQ(c.value.text, b.text);
    EXPECT_EQ(c.value.observed_at, b.observed_at);
  }
}

TEST(Ingest, LokiPush) {
  std::string body = R"({"streams":[
    {"stream":{"job":"node/syslog","host":"gpu-a01"},"values":[["1714557600000000000","NVRM: Xid 79"],["bad","x"]]},
    {"stream":{"instance":"gpu-a02:9100","rank":"3","filename":"/var/log/train.log"},"values":[["1714557601000000000","hello"]]},
    {"stream":{"kind":"scheduler"},"values":[["1714557602000000000","slurmstepd: error"]]},
    {"stream":"nope","values":[]}
  ]})";
  auto r = parse_loki(body, IngestOptions{}, "");
  ASSERT_TRUE(r.fatal.empty()) << r.fatal;
  ASSERT_EQ(r.observations.size(), 3u);
  EXPECT_EQ(r.observations[0].kind, ObservationKind::kSyslog);
  EXPECT_EQ(r.observations[0].node, "gpu-a01");
  EXPECT_EQ(r.observations[0].observed_at, 1714557600000000000LL);
  EXPECT_EQ(r.observations[0].source.line, 1u);
  EXPECT_EQ(r.observations[1].kind, ObservationKind::kAppLog);
  EXPECT_EQ(r.observations[1].node, "gpu-a02");
  EXPECT_EQ(r.observations[1].rank, 3);
  EXPECT_EQ(r.observations[1].source.source, "/var/log/train.log");
  EXPECT_EQ(r.observations[2].kind, ObservationKind::kScheduler);
  ASSERT_EQ(r.rejected.size(), 2u);
  EXPECT_EQ(r.rejected[0].index, 1u);
  EXPECT_EQ(r.rejected[1].index, 4u);
  auto forced = parse_loki(body, IngestOptions{}, "node_report");
  EXPECT_EQ(forced.observations[1].kind, ObservationKind::kNodeReport);
  EXPECT_EQ(forced.observations[2].kind, ObservationKind::kScheduler);  // label wins
  EXPECT_FALSE(parse_loki("{\"x\":1}", IngestOptions{}, "").fatal.empty());
}

TEST(Ingest, PrometheusMatrixAndVector) {
  std::string body = R"({"status":"success","data":{"resultType":"matrix","result":[
    {"metric":{"__name__":"DCGM_FI_DEV_XID_ERRORS","Hostname":"gpu-a03","gpu":"2","instance":"10.0.0.3:9400"},
     "values":[[1714557600.123,"79"],[1714557660,"NaN"],[1714557720,"x"]]},
    {"metric":{"Hostname":"gpu-a03"},"values":[[1,"1"]]}]}})";
  auto r = parse_prometheus(body, IngestOptions{});
  ASSERT_TRUE(r.fatal.empty());
  ASSERT_EQ(r.observations.size(), 2u);
  const auto& o = r.observations[0];
  EXPECT_EQ(o.kind, ObservationKind::kNodeMetrics);
  EXPECT_EQ(o.node, "gpu-a03");
  EXPECT_EQ(o.gpu, "2");
  EXPECT_EQ(o.observed_at, 1714557600123000000LL);
  ASSERT_TRUE(o.metric);
  EXPECT_EQ(o.metric->name, "DCGM_FI_DEV_XID_ERRORS");
  EXPECT_EQ(o.metric->labels.count("__name__"), 0u);
  EXPECT_EQ(o.metric->value, 79);
  EXPECT_TRUE(std::isnan(r.observations[1].metric->value));
  ASSERT_EQ(r.rejected.size(), 2u);
  EXPECT_EQ(r.rejected[0].index, 2u);
  EXPECT_NE(r.rejected[1].reason.find("__name__"), std::string::npos);
  auto v = parse_prometheus(
      R"({"status":"success","data":{"resultType":"vector","result":[{"metric":{"__name__":"up","instance":"n9:9100"},"value":[10,"1"]}]}})",
      IngestOptions{});
  ASSERT_EQ(v.observations.size(), 1u);
  EXPECT_EQ(v.observations[0].node, "n9");
  EXPECT_EQ(parse_prometheus(R"({"status":"error","error":"x"})", IngestOptions{}).fatal_code, "invalid_body");
}

TEST(Ingest, ConnectorReports) {
  auto r = parse_connector_reports(
      R"([{"connector":"loki/syslog","status":"ok","reason":"","observations":812,"bytes":90000},
          {"connector":"prom","status":"maybe"},{"status":"ok"}])");
  ASSERT_EQ(r.reports.size(), 1u);
  EXPECT_EQ(r.reports[0].observations, 812u);
  ASSERT_EQ(r.rejected.size(), 2u);
  EXPECT_EQ(r.rejected[0].index, 1u);
}

TEST(Ingest, OneShot) {
  auto r = parse_one_shot(
      R"({"context":{"id":"1","nodes":["a"]},"observations":[{"kind":"applog","text":"x"}],"connector_reports":[{"connector":"c"}]})",
      IngestOptions{});
  EXPECT_TRUE(r.ingest.fatal.empty());
  EXPECT_EQ(r.context_json, R"({"id":"1","nodes":["a"]})");
  EXPECT_EQ(r.ingest.observations.size(), 1u);
  EXPECT_EQ(r.reports.reports.size(), 1u);
  EXPECT_EQ(parse_one_shot(R"({"observations":[]})", IngestOptions{}).ingest.fatal_code, "invalid_context");
}

TEST(Store, BatchCodecRoundTrip) {
  std::vector<Observation> in(2);
  in[0].kind = ObservationKind::kK8sEvent;
  in[0].node = "n";
  in[0].rank = 12;
  in[0].text = std::string("bin\0ary", 7);
  in[0].source = {"s", 3};
  in[0].observed_at = kNoTime;
  in[1].kind = ObservationKind::kNodeMetrics;
  in[1].metric = MetricSample{"m", {{"a", "b"}, {"c", "d"}}, -0.5, 42};
  std::vector<Observation> out;
  ASSERT_TRUE(decode_observations(encode_observations(in), out));
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].text, in[0].text);
  EXPECT_EQ(out[0].rank, 12);
  EXPECT_EQ(out[0].observed_at, kNoTime);
  EXPECT_EQ(out[1].metric->labels, in[1].metric->labels);
  EXPECT_EQ(out[1].metric->value, -0.5);
  EXPECT_EQ(out[1].metric->t, 42);
  std::string blob = encode_observations(in);
  blob.pop_back();
  std::vector<Observation> bad;
  EXPECT_FALSE(decode_observations(blob, bad));
  std::vector<ConnectorReport> reps = {{"c", "error", "timeout", 3, 4}}, reps_out;
  ASSERT_TRUE(decode_reports(encode_reports(reps), reps_out));
  EXPECT_EQ(reps_out[0].reason, "timeout");
}

TEST(Config, PrecedenceFileEnvFlags) {
  Config c;
  std::string err;
  ASSERT_TRUE(config_apply_yaml(c, "listen: 127.0.0.1:9000\nmax-sessions: 5\nthreads: 4\n", "cfg.yaml", err)) << err;
  EXPECT_EQ(c.listen, "127.0.0.1:9000");
  EXPECT_EQ(c.max_sessions, 5u);
  std::string e1 = "ATTRIBUTION_MAX_SESSIONS=7", e2 = "ATTRIBUTION_LISTEN=127.0.0.1:9001", e3 = "OTHER=1";
  char* env[] = {e1.data(), e2.data(), e3.data(), nullptr};
  ASSERT_TRUE(config_apply_env(c, env, err)) << err;
  EXPECT_EQ(c.max_sessions, 7u);
  EXPECT_EQ(c.listen, "127.0.0.1:9001");
  ASSERT_TRUE(config_set(c, "max-sessions", "9", err));
  EXPECT_EQ(c.max_sessions, 9u);
  EXPECT_EQ(c.threads, 4);
  EXPECT_FALSE(config_set(c, "threads", "many", err));
  EXPECT_NE(err.find("threads"), std::string::npos);
  EXPECT_FALSE(config_apply_yaml(c, "nope: 1\n", "cfg.yaml", err));
  EXPECT_NE(err.find("cfg.yaml:1"), std::string::npos);
  c.auth_token = "s3cret";
  EXPECT_EQ(config_dump(c).find("s3cret"), std::string::npos);
}

TEST(Security, SecretEqual) {
  EXPECT_TRUE(secret_equal("abc", "abc"));
  EXPECT_FALSE(secret_equal("abc", "abd"));
  EXPECT_FALSE(secret_equal("abc", "abcd"));
  EXPECT_FALSE(secret_equal("", "a"));
}

TEST(Metrics, ExpositionNames) {
  Metrics m;
  m.observe_request("/v2/sessions", 201, 0.003);
  m.add_ingested("syslog", 5);
  m.add_attribution("gpu.fell_off_bus");
  m.set_rules("sha256:abc", 3, 10);
  std::string text = m.render("0.1.0");
  EXPECT_NE(text.find("attribution_http_requests_total{route=\"/v2/sessions\",code=\"201\"} 1"), std::string::npos);
  EXPECT_NE(text.find("attribution_http_request_duration_seconds_bucket{route=\"/v2/sessions\",le=\"0.005\"} 1"), std::string::npos);
  EXPECT_NE(text.find("attribution_observations_ingested_total{kind=\"syslog\"} 5"), std::string::npos);
  EXPECT_NE(text.find("attribution_analyses_total{outcome=\"gpu.fell_off_bus\"} 1"), std::string::npos);
  EXPECT_NE(text.find("attribution_rules_info{sha256=\"sha256:abc\""), std::string::npos);
}

TEST(Log, EscapesAndReplacesInvalidUtf8) {
  EXPECT_EQ(json_quote("a\"b\n\x01"), "\"a\\\"b\\n\\u0001\"");
  EXPECT_EQ(json_quote("\xff"), "\"\xEF\xBF\xBD\"");
}

TEST(OpenApi, ServedAsJson) {
  const std::string& j = openapi_json();
  EXPECT_EQ(j.rfind("{\"openapi\":\"3.1.0\"", 0), 0u) << j.substr(0, 200);
  EXPECT_NE(j.find("/v2/sessions/{id}/attribute"), std::string::npos);
}

}  // namespace
}  // namespace attribution::service
