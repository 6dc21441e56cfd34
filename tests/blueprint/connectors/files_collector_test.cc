// Files collector: path templates over the context ({job} {node} {rank} {day} {start:...}),
// glob expansion, plain and gzip files, statuses.
#include <gtest/gtest.h>
#include <zlib.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "attribution/codec.h"
#include "connector_test_util.h"
#include "connectors/files/files_collector.h"
#include "connectors/files/template.h"

namespace attribution::testing {
namespace {

namespace fs = std::filesystem;
using blueprint::expand_template;
using blueprint::template_bindings;
using blueprint::TemplateEscape;

std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

ExecutionContext sample_context(const std::string& name) {
  auto m = parse_bundle_manifest(read_all(std::string(ATTRIBUTION_TEST_SAMPLES_DIR) + "/" + name + "/workload.yaml"), name);
  EXPECT_TRUE(m.ok()) << m.error;
  return m.value.context;
}

void write_gzip(const std::string& path, const std::string& content) {
  gzFile f = gzopen(path.c_str(), "wb");
  ASSERT_NE(f, nullptr);
  ASSERT_EQ(gzwrite(f, content.data(), static_cast<unsigned>(content.size())), static_cast<int>(content.size()));
  gzclose(f);
}

std::unique_ptr<blueprint::Collector> make(const std::string& yaml, std::string& error) {
  return blueprint::collector_registry().at("files")(YAML::Load(yaml), error);
}

TEST(Template, ExpandsContextVariables) {
  ExecutionContext c;
  c.id = "418207";
  c.nodes = {"gpu-a01", "gpu.b"};
  c.ranks = {{0, "gpu-a01"}, {1, "gpu.b"}};
  c.start = rfc3339("2026-03-14T23:02:11Z");
  c.end = rfc3339("2026-03-16T01:00:00Z");
  c.labels["namespace"] = "llm";
  std::string err;
  auto b = template_bindings("/x/{node}/{job}.log", c);
  ASSERT_EQ(b.size(), 2u);
  EXPECT_EQ(*expand_template("/x/{node}/{job}.log", c, b[1], TemplateEscape::kNone, err), "/x/gpu.b/418207.log");
  auto r = template_bindings("rank{rank}-{node}", c);
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(*expand_template("rank{rank}-{node}", c, r[1], TemplateEscape::kNone, err), "rank1-gpu.b");
  auto d = template_bindings("/var/log/{day}/x", c);
  ASSERT_EQ(d.size(), 3u);  // 14th, 15th, 16th
  EXPECT_EQ(d[2].day, "2026-03-16");
  blueprint::TemplateBinding none;
  EXPECT_EQ(*expand_template("{start:%Y%m%d}-{start_s}-{namespace}", c, none, TemplateEscape::kNone, err),
            "20260314-1773529331-llm");
  // LogQL/PromQL: selector braces stay, values are quoted, nodes_regex is RE2-escaped.
  EXPECT_EQ(*expand_template("{Hostname=~\"{nodes_regex}\"}", c, none, TemplateEscape::kQuotedString, err),
            "{Hostname=~\"gpu-a01|gpu\\\\.b\"}");
  EXPECT_FALSE(expand_template("{bogus}", c, none, TemplateEscape::kNone, err, /*strict=*/true));
  EXPECT_EQ(err, "unknown template variable {bogus}");
  c.nodes.clear();
  EXPECT_TRUE(template_bindings("/x/{node}", c).empty());
}

TEST(FilesCollector, ConfigErrorsNameTheKey) {
  std::string err;
  EXPECT_EQ(make("sources: [{kind: applog}]", err), nullptr);
  EXPECT_EQ(err, "files.sources[0].path: missing");
  EXPECT_EQ(make("sources: [{path: /x, kind: metrics}]", err), nullptr);
  EXPECT_NE(err.find("files.sources[0].kind: unknown text kind 'metrics'"), std::string::npos);
}

// The xid79 cascade sample read through templates instead of its manifest: per-node app logs
// ({job}-{node}), per-node kernel logs (one of them gzip-compressed), sacct. The verdict must be
// the sample's expected one.
TEST(FilesCollector, TemplatesGlobsAndGzipGiveTheSampleVerdict) {
  const std::string sample = std::string(ATTRIBUTION_TEST_SAMPLES_DIR) + "/xid79-nccl-watchdog-cascade";
  ExecutionContext ctx = sample_context("xid79-nccl-watchdog-cascade");
  std::string dir = temp_dir("files");
  for (const auto& node : ctx.nodes) {
    write_file(dir + "/jobs/" + ctx.id + "/" + node + "/app.out", read_all(sample + "/logs/418207-" + node + ".out"));
    std::string kern = read_all(sample + "/kernel/dmesg-" + node + ".txt");
    fs::create_directories(dir + "/nodes/" + node);
    if (node == "gpu-a03") {
      write_gzip(dir + "/nodes/" + node + "/kern.log.1.gz", kern);
    } else {
      write_file(dir + "/nodes/" + node + "/kern.log", kern);
    }
  }
  write_file(dir + "/sacct/" + ctx.id + ".txt", read_all(sample + "/sacct.txt"));
  write_file(dir + "/sacct/unrelated.txt", "not for this job\n");

  std::string err;
  auto c = make("name: files/test\nsources:\n"
                "  - {path: '" + dir + "/jobs/{job}/{node}/*.out', kind: applog}\n"
                "  - {path: '" + dir + "/nodes/{node}/kern.log*', kind: syslog}\n"
                "  - {path: '" + dir + "/sacct/{job}.txt', kind: scheduler}\n"
                "  - {path: '" + dir + "/missing/{job}.log', kind: applog}\n", err);
  ASSERT_NE(c, nullptr) << err;
  Session session(source_rules(), ctx);
  SessionSink sink(session);
  blueprint::WorkloadAttempt attempt{ctx, {}};
  ConnectorReport r = c->collect(attempt, sink);
  EXPECT_EQ(r.connector, "files/test");
  EXPECT_EQ(r.status, "ok") << r.reason;
  EXPECT_EQ(r.reason.rfind("9 files", 0), 0u) << r.reason;
  EXPECT_GT(r.observations, 400u);
  EXPECT_EQ(r.bytes, sink.text_bytes);
  bool saw_gz = false;
  for (const auto& s : sink.sources) saw_gz |= s.ends_with("kern.log.1.gz");
  EXPECT_TRUE(saw_gz);
  Verdict v = session.attribute();
  EXPECT_EQ(v.outcome, "gpu.fell_off_bus") << v.summary;
  EXPECT_EQ(v.root_node, "gpu-a03") << v.summary;
  fs::remove_all(dir);
}

TEST(FilesCollector, EmptyAndErrorStatuses) {
  std::string dir = temp_dir("files2");
  ExecutionContext ctx;
  ctx.id = "7";
  ctx.nodes = {"n1"};
  std::string err;
  auto c = make("sources: [{path: '" + dir + "/{job}/{node}.log'}]", err);
  ASSERT_NE(c, nullptr) << err;
  Session session(source_rules(), ctx);
  SessionSink sink(session);
  ConnectorReport r = c->collect({ctx, {}}, sink);
  EXPECT_EQ(r.status, "empty");
  EXPECT_NE(r.reason.find("no file matched"), std::string::npos) << r.reason;

  // An unreadable match (a directory): error naming it, no throw; other files still read.
  write_file(dir + "/7/n1.log", "hello\n");
  fs::create_directories(dir + "/7/n1.log.gz");
  auto c2 = make("sources: [{path: '" + dir + "/{job}/{node}.log*'}]", err);
  ConnectorReport r2 = c2->collect({ctx, {}}, sink);
  EXPECT_EQ(r2.status, "error");
  EXPECT_NE(r2.reason.find("n1.log.gz"), std::string::npos) << r2.reason;
  EXPECT_EQ(r2.observations, 1u);

  // Adapter evidence files are read only when asked.
  auto c3 = make("include_adapter_files: true", err);
  ASSERT_NE(c3, nullptr) << err;
  TextSource ts;
  ts.kind = ObservationKind::kAppLog;
  ConnectorReport r3 = c3->collect({ctx, {{dir + "/7/n1.log", ts}}}, sink);
  EXPECT_EQ(r3.status, "ok") << r3.reason;
  EXPECT_EQ(r3.observations, 1u);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace attribution::testing
