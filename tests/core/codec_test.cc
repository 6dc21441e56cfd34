#include <gtest/gtest.h>

#include "attribution/codec.h"

namespace attribution {
namespace {

TEST(Codec, ContextRoundTrip) {
  ExecutionContext c;
  c.id = "42";
  c.scheduler = "slurm";
  c.nodes = {"a", "b"};
  c.ranks = {{0, "a"}, {1, "b"}};
  c.start = parse_rfc3339("2026-01-01T00:00:00Z").value;
  c.labels = {{"team", "llm"}};
  auto back = context_from_json(context_to_json(c));
  ASSERT_TRUE(back.ok()) << back.error;
  EXPECT_EQ(back.value.id, "42");
  EXPECT_EQ(back.value.ranks.at(1), "b");
  EXPECT_EQ(back.value.start, c.start);
  EXPECT_EQ(back.value.labels.at("team"), "llm");
}

TEST(Codec, ContextErrorsNameTheField) {
  EXPECT_EQ(context_from_json("{").error, "context: malformed JSON");
  EXPECT_NE(context_from_json(R"({"id":"1","start":"soon"})").error.find("start"), std::string::npos);
  EXPECT_NE(context_from_json(R"({"id":"1","nodes":"a"})").error.find("nodes"), std::string::npos);
  EXPECT_NE(context_from_json(R"({"id":"1","ranks":{"x":"a"}})").error.find("ranks.x"), std::string::npos);
  EXPECT_NE(context_from_json(R"({"scheduler":"slurm"})").error.find("id"), std::string::npos);
}

TEST(Codec, ObservationRoundTripAndErrors) {
  Observation o;
  o.kind = ObservationKind::kSyslog;
  o.node = "n1";
  o.rank = 3;
  o.observed_at = parse_rfc3339("2026-01-01T00:00:00.123456789Z").value;
  o.source = {"dmesg", 12};
  o.text = "NVRM: Xid";
  auto back = observation_from_json(observation_to_json(o));
  ASSERT_TRUE(back.ok()) << back.error;
  EXPECT_EQ(back.value.observed_at, o.observed_at);
  EXPECT_EQ(back.value.source.line, 12u);
  EXPECT_NE(observation_from_json(R"({"kind":"tweet","text":"x"})").error.find("kind"), std::string::npos);
  EXPECT_NE(observation_from_json(R"({"kind":"applog"})").error.find("text"), std::string::npos);
  EXPECT_NE(observation_from_json(R"({"kind":"applog","text":"x","rank":-2})").error.find("rank"), std::string::npos);
  EXPECT_NE(observation_from_json(R"({"kind":"node_metrics","metric":{"name":"m","value":"x"}})").error.find("metric.value"),
            std::string::npos);
}

TEST(Codec, BundleManifestErrorsHavePositions) {
  auto bad_kind = parse_bundle_manifest("workload:\n  id: '1'\nsources:\n  - path: a.log\n    kind: tweets\n", "b/workload.yaml");
  EXPECT_EQ(bad_kind.error.rfind("b/workload.yaml:5:11:", 0), 0u) << bad_kind.error;
  auto bad_time = parse_bundle_manifest("workload:\n  id: 1\n  start: yesterday\n", "w.yaml");
  EXPECT_NE(bad_time.error.find("w.yaml:3"), std::string::npos) << bad_time.error;
  EXPECT_NE(bad_time.error.find("start"), std::string::npos);
  auto no_workload = parse_bundle_manifest("sources: []\n", "w.yaml");
  EXPECT_NE(no_workload.error.find("workload"), std::string::npos);
  auto unknown = parse_bundle_manifest("workload:\n  id: 1\n  colour: red\n", "w.yaml");
  EXPECT_NE(unknown.error.find("w.yaml:3:3: unknown key 'workload.colour'"), std::string::npos) << unknown.error;
  auto yaml = parse_bundle_manifest("workload: [\n", "w.yaml");
  EXPECT_EQ(yaml.error.rfind("w.yaml:", 0), 0u);
}

TEST(Codec, BundleManifestFull) {
  auto m = parse_bundle_manifest(R"(workload:
  id: 6053
  scheduler: slurm
  start: 2024-05-01T10:00:00Z
  end: 2024-05-01T10:31:02Z
  nodes: [gpu-a, gpu-b]
  ranks: {0: gpu-a, 1: gpu-b}
  exit_code: "1:0"
sources:
  - path: logs/rank*.log
    kind: applog
  - path: dmesg-gpu-b.txt
    kind: syslog
    node: gpu-b
    boot_time: 2024-04-20T08:00:00Z
    timezone: Europe/Paris
)", "w.yaml");
  ASSERT_TRUE(m.ok()) << m.error;
  EXPECT_EQ(m.value.context.id, "6053");
  EXPECT_EQ(m.value.context.ranks.at(1), "gpu-b");
  ASSERT_EQ(m.value.sources.size(), 2u);
  EXPECT_EQ(m.value.sources[1].defaults.kind, ObservationKind::kSyslog);
  EXPECT_EQ(m.value.sources[1].timezone, "Europe/Paris");
  EXPECT_NE(m.value.sources[1].defaults.boot_time, kNoTime);
}

TEST(Codec, MetricsTextAndQueryJson) {
  auto t = parse_metrics_text(
      "# HELP x\nDCGM_FI_DEV_XID_ERRORS{gpu=\"0\",Hostname=\"gpu-c\"} 79 1700000000000\nbad{ 1\nup 1\n");
  ASSERT_EQ(t.samples.size(), 2u);
  EXPECT_EQ(t.samples[0].labels.at("Hostname"), "gpu-c");
  EXPECT_EQ(t.samples[0].t, 1700000000000LL * 1000000LL);
  ASSERT_EQ(t.errors.size(), 1u);
  EXPECT_EQ(t.errors[0].rfind("line 3:", 0), 0u);
  auto j = parse_metrics_text(
      R"({"status":"success","data":{"resultType":"matrix","result":[{"metric":{"__name__":"DCGM_FI_DEV_XID_ERRORS","instance":"n1"},"values":[[1700000000,"79"],[1700000015.5,"0"]]}]}})");
  ASSERT_EQ(j.samples.size(), 2u);
  EXPECT_EQ(j.samples[0].name, "DCGM_FI_DEV_XID_ERRORS");
  EXPECT_EQ(j.samples[1].t, 1700000015500LL * 1000000LL);
  EXPECT_FALSE(parse_metrics_text(R"({"status":"error","error":"bad"})").errors.empty());
}

}  // namespace
}  // namespace attribution
