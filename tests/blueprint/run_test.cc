// Unit tests of the run pipeline: config layers and redaction, the SQLite store (upsert, run_nodes,
// cursors, migrations), the Slurm adapter's parsing (hostlists, arrays, het jobs, steps, requeues,
// output paths) against a fake sacct, and the rule that a failing collector never aborts a run.
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <stdexcept>

#include "connectors/connector.h"
#include "connectors/slurm/slurm_adapter.h"
#include "connectors/static/static_adapter.h"
#include "run/config.h"
#include "run/pipeline.h"
#include "run/run_cmd.h"
#include "stores/store.h"

namespace attribution::blueprint {
namespace {

namespace fs = std::filesystem;

struct TempDir {
  fs::path path;
  TempDir() {
    char tmpl[] = "/tmp/bp-test.XXXXXX";
    path = mkdtemp(tmpl);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  std::string file(const std::string& name, const std::string& text = "") const {
    std::ofstream(path / name) << text;
    return (path / name).string();
  }
};

std::string sample(const char* name) { return std::string(ATTRIBUTION_SOURCE_DIR) + "/samples/" + name; }

// ------------------------------------------------------------------ config

TEST(Config, FlagsOverrideEnvOverrideFile) {
  TempDir t;
  std::string file = t.file("c.yaml", "cluster: from-file\nstores:\n  sqlite:\n    path: /file.sqlite\nrules: /r\n");
  ConfigLayers layers;
  layers.file = file;
  layers.env = {{"ATTRIBUTION_CLUSTER", "from-env"}, {"ATTRIBUTION_STORES__SQLITE__PATH", "/env.sqlite"},
                {"ATTRIBUTION_SERVICE_URL", "http://ignored"}, {"HOME", "/root"}};
  layers.flags = {{"cluster", "from-flag"}};
  LoadedConfig c;
  std::vector<std::string> errors;
  ASSERT_TRUE(load_config(layers, c, errors)) << (errors.empty() ? "" : errors[0]);
  EXPECT_EQ(c.root["cluster"].as<std::string>(), "from-flag");
  EXPECT_EQ(c.root["stores"]["sqlite"]["path"].as<std::string>(), "/env.sqlite");
  EXPECT_EQ(c.root["rules"].as<std::string>(), "/r");
  EXPECT_FALSE(c.root["service_url"]);
}

TEST(Config, ErrorsNameTheFileAndKey) {
  TempDir t;
  std::string file = t.file("config.yaml", "stores:\n  postgres:\n    dsn: x\n  mongo: {}\nwatch:\n  interval: soon\n");
  ConfigLayers layers;
  layers.file = file;
  LoadedConfig c;
  std::vector<std::string> errors;
  EXPECT_FALSE(load_config(layers, c, errors));
  ASSERT_EQ(errors.size(), 2u);
  EXPECT_NE(errors[0].find("config.yaml: stores.mongo: unknown key"), std::string::npos) << errors[0];
  EXPECT_NE(errors[1].find("config.yaml: watch.interval: not a duration"), std::string::npos) << errors[1];
}

TEST(Config, YamlSyntaxErrorHasLine) {
  TempDir t;
  std::string file = t.file("bad.yaml", "cluster: a\nstores: [\n");
  ConfigLayers layers;
  layers.file = file;
  LoadedConfig c;
  std::vector<std::string> errors;
  EXPECT_FALSE(load_config(layers, c, errors));
  ASSERT_FALSE(errors.empty());
  EXPECT_NE(errors[0].find("bad.yaml:"), std::string::npos);
}

TEST(Config, PrintConfigRedactsSecrets) {
  YAML::Node root = YAML::Load(
      "stores:\n  postgres: {dsn: 'host=db password=hunter2'}\n  webhook: {url: 'https://u:pw@hook/x', token: abc}\n"
      "collectors:\n  - {type: loki, url: 'http://loki:3100', password: p2, headers: {Authorization: Bearer z}}\n");
  std::string out = redacted_config(root);
  for (const char* secret : {"hunter2", "pw@", "abc", "p2", "Bearer z"}) EXPECT_EQ(out.find(secret), std::string::npos) << secret;
  EXPECT_NE(out.find("https://u:<redacted>@hook/x"), std::string::npos) << out;
  EXPECT_NE(out.find("http://loki:3100"), std::string::npos);
}

TEST(Config, Durations) {
  int64_t ns = 0;
  EXPECT_TRUE(parse_duration_ns("90s", ns));
  EXPECT_EQ(ns, 90'000'000'000LL);
  EXPECT_TRUE(parse_duration_ns("2h", ns));
  EXPECT_EQ(ns, 7200'000'000'000LL);
  EXPECT_TRUE(parse_duration_ns("250ms", ns));
  EXPECT_EQ(ns, 250'000'000LL);
  EXPECT_FALSE(parse_duration_ns("soon", ns));
  EXPECT_FALSE(parse_duration_ns("5 parsecs", ns));
}

// ------------------------------------------------------------------ SQLite store

std::unique_ptr<VerdictStore> open_sqlite(const std::string& path) {
  YAML::Node b;
  b["path"] = path;
  std::string error;
  auto s = store_registry().at("sqlite")(b, "stores.sqlite", error);
  EXPECT_TRUE(s) << error;
  return s;
}

RunRecord record(const std::string& job, int attempt, const std::string& outcome, std::vector<std::string> affected) {
  RunRecord r;
  r.context.id = job;
  r.context.scheduler = "slurm";
  r.context.cluster = "c1";
  r.context.attempt = attempt;
  r.context.state = "FAILED";
  r.context.end = 1'700'000'000'000'000'000LL;
  r.verdict.outcome = outcome;
  r.verdict.domain = "gpu";
  r.verdict.quality = "definitive";
  r.verdict.root_node = affected.empty() ? "" : affected[0];
  r.verdict.affected_nodes = affected;
  r.verdict.json = R"({"root_cause":{"node":")" + r.verdict.root_node + R"(","gpu":"3"},"quality":{"candidates":[]}})";
  return r;
}

int64_t count(const std::string& db, const std::string& sql) {
  sqlite3* h = nullptr;
  sqlite3_open(db.c_str(), &h);
  sqlite3_stmt* s = nullptr;
  sqlite3_prepare_v2(h, sql.c_str(), -1, &s, nullptr);
  int64_t n = sqlite3_step(s) == SQLITE_ROW ? sqlite3_column_int64(s, 0) : -1;
  sqlite3_finalize(s);
  sqlite3_close(h);
  return n;
}

TEST(SqliteStore, ReRunningAnAttemptUpdatesItsRow) {
  TempDir t;
  std::string db = (t.path / "v.sqlite").string();
  auto s = open_sqlite(db);
  int64_t id1 = 0, id2 = 0, id3 = 0;
  std::string error;
  ASSERT_TRUE(s->put(record("42", 0, "gpu.xid", {"n1", "n2"}), id1, error)) << error;
  ASSERT_TRUE(s->put(record("42", 0, "gpu.driver", {"n3"}), id2, error)) << error;
  ASSERT_TRUE(s->put(record("42", 1, "gpu.xid", {"n1"}), id3, error)) << error;
  EXPECT_EQ(id1, id2);
  EXPECT_NE(id1, id3);
  EXPECT_EQ(count(db, "SELECT count(*) FROM runs"), 2);
  EXPECT_EQ(count(db, "SELECT count(*) FROM runs WHERE outcome='gpu.driver' AND attempt=0"), 1);
  // run_nodes replaced: n3 root_cause (gpu 3) + n3 affected; n1/n2 gone for that run
  EXPECT_EQ(count(db, "SELECT count(*) FROM run_nodes WHERE run_id=" + std::to_string(id1)), 2);
  EXPECT_EQ(count(db, "SELECT count(*) FROM run_nodes WHERE run_id=" + std::to_string(id1) +
                          " AND node='n3' AND gpu='3' AND role='root_cause'"),
            1);
  // Every migration the store defines (1: runs, 2: fabric tables) applied once, in order.
  EXPECT_EQ(count(db, "SELECT count(*) FROM schema_migrations"), 2);
  EXPECT_EQ(count(db, "SELECT group_concat(version) = '1,2' FROM (SELECT version FROM schema_migrations ORDER BY version)"), 1);
  bool found = false;
  ASSERT_TRUE(s->has_run("c1", "slurm", "42", 1, found, error));
  EXPECT_TRUE(found);
  ASSERT_TRUE(s->has_run("c1", "slurm", "42", 2, found, error));
  EXPECT_FALSE(found);
  s.reset();
  auto again = open_sqlite(db);  // reopening does not re-run migrations
  EXPECT_EQ(count(db, "SELECT count(*) FROM schema_migrations"), 2);
  EXPECT_EQ(count(db, "SELECT count(*) FROM runs"), 2);
}

TEST(SqliteStore, CursorsPersist) {
  TempDir t;
  std::string db = (t.path / "v.sqlite").string();
  std::string error;
  {
    auto s = open_sqlite(db);
    std::optional<std::string> v;
    ASSERT_TRUE(s->get_cursor("slurm:c1", v, error));
    EXPECT_FALSE(v);
    WatchCursor c;
    c.end = 123;
    c.floor = 100;
    c.done = {"7#0", "8#1"};
    ASSERT_TRUE(s->set_cursor("slurm:c1", encode_cursor(c), error)) << error;
  }
  auto s = open_sqlite(db);
  std::optional<std::string> v;
  ASSERT_TRUE(s->get_cursor("slurm:c1", v, error));
  ASSERT_TRUE(v);
  WatchCursor c;
  ASSERT_TRUE(decode_cursor(*v, c));
  EXPECT_EQ(c.end, 123);
  EXPECT_EQ(c.floor, 100);
  EXPECT_EQ(c.done, (std::vector<std::string>{"7#0", "8#1"}));
}

TEST(SqliteStore, WalMode) {
  TempDir t;
  std::string db = (t.path / "v.sqlite").string();
  auto s = open_sqlite(db);
  sqlite3* h = nullptr;
  sqlite3_open(db.c_str(), &h);
  sqlite3_stmt* st = nullptr;
  sqlite3_prepare_v2(h, "PRAGMA journal_mode", -1, &st, nullptr);
  ASSERT_EQ(sqlite3_step(st), SQLITE_ROW);
  EXPECT_STREQ(reinterpret_cast<const char*>(sqlite3_column_text(st, 0)), "wal");
  sqlite3_finalize(st);
  sqlite3_close(h);
}

// ------------------------------------------------------------------ Slurm parsing

TEST(Slurm, ExpandHostlist) {
  using V = std::vector<std::string>;
  EXPECT_EQ(slurm::expand_hostlist("gpu-[01-04,07]"), (V{"gpu-01", "gpu-02", "gpu-03", "gpu-04", "gpu-07"}));
  EXPECT_EQ(slurm::expand_hostlist("a1,b[2-3],c"), (V{"a1", "b2", "b3", "c"}));
  EXPECT_EQ(slurm::expand_hostlist("r[1-2]-n[1-2]"), (V{"r1-n1", "r1-n2", "r2-n1", "r2-n2"}));
  EXPECT_EQ(slurm::expand_hostlist("node[8-10]"), (V{"node8", "node9", "node10"}));
  EXPECT_EQ(slurm::expand_hostlist("None assigned"), V{});
  EXPECT_EQ(slurm::expand_hostlist("nid00[1-2]x"), (V{"nid001x", "nid002x"}));
}

const std::vector<std::string> kCols = {"JobID", "JobIDRaw", "JobName", "State", "ExitCode", "NodeList", "Start", "End", "Cluster", "SubmitLine"};

TEST(Slurm, AttemptsFromSacct) {
  std::string text =
      "100|100|train|REQUEUED|0:0|gpu-[01-02]|1700000000|1700000100||sbatch -o out-%j.log x.sh\n"
      "100.batch|100.batch|batch|CANCELLED|0:15|gpu-01|1700000000|1700000100||\n"
      "100|100|train|FAILED|1:0|gpu-[03-04]|1700000200|1700000300||sbatch -o out-%j.log x.sh\n"
      "100.batch|100.batch|batch|FAILED|1:0|gpu-03|1700000200|1700000300||\n"
      "100.extern|100.extern|extern|COMPLETED|0:0|gpu-[03-04]|1700000200|1700000300||\n"
      "100.0|100.0|torchrun|COMPLETED|0:0|gpu-[03-04]|1700000200|1700000290||\n"
      "100.1|100.1|torchrun|FAILED|1:0|gpu-[03-04]|1700000290|1700000300||\n"
      "200_3|203|arr|TIMEOUT|0:0|n1|1700000000|1700000400|c9|sbatch --array=1-3 a.sh\n"
      "200_[4-9]|200|arr|PENDING|0:0|None assigned|Unknown|Unknown|c9|\n"
      "300+0|300|het|FAILED|2:0|n1|1700000000|1700000050||\n"
      "300+1|301|het|CANCELLED by 1000|0:0|n2|1700000000|1700000050||\n"
      "300+1.0|301.0|het|CANCELLED|0:9|n2|1700000000|1700000050||a|b\n";
  auto rows = slurm::parse_sacct(text, kCols);
  ASSERT_EQ(rows.size(), 12u);
  EXPECT_EQ(rows[11]["SubmitLine"], "a|b");  // the last column keeps its '|'
  std::vector<std::vector<slurm::SacctRow>> per;
  auto a = slurm::attempts_from_sacct(rows, "c1", &per);
  ASSERT_EQ(a.size(), 5u);
  EXPECT_EQ(a[0].context.id, "100");
  EXPECT_EQ(a[0].context.attempt, 0);
  EXPECT_EQ(a[0].context.state, "REQUEUED");
  EXPECT_EQ(a[0].context.nodes, (std::vector<std::string>{"gpu-01", "gpu-02"}));
  EXPECT_EQ(a[1].context.attempt, 1);
  EXPECT_EQ(a[1].context.nodes, (std::vector<std::string>{"gpu-03", "gpu-04"}));
  EXPECT_EQ(a[1].context.step, "100.1");  // the failing numbered step
  EXPECT_EQ(a[1].context.start, 1700000200LL * 1'000'000'000LL);
  EXPECT_EQ(a[1].context.end, 1700000300LL * 1'000'000'000LL);
  EXPECT_EQ(a[1].context.exit_code, "1:0");
  EXPECT_EQ(a[1].context.cluster, "c1");
  EXPECT_EQ(per[1].size(), 5u);
  EXPECT_EQ(a[2].context.id, "200_3");
  EXPECT_EQ(a[2].context.cluster, "c9");
  EXPECT_EQ(a[2].context.labels["array_job_id"], "200");
  EXPECT_EQ(a[2].context.labels["array_task_id"], "3");
  EXPECT_EQ(a[3].context.id, "300+0");
  EXPECT_EQ(a[4].context.id, "300+1");
  EXPECT_EQ(a[4].context.state, "CANCELLED by 1000");
  EXPECT_EQ(a[4].context.labels["het_job_id"], "300");
  EXPECT_EQ(a[4].context.step, "300+1.0");
}

TEST(Slurm, OutputPaths) {
  ExecutionContext c;
  c.id = "200_3";
  c.name = "train";
  c.user = "ana";
  c.nodes = {"gpu-07"};
  c.labels = {{"array_job_id", "200"}, {"array_task_id", "3"}};
  EXPECT_EQ(slurm::expand_output_pattern("logs/%x-%A_%a.%N.out", c, "203", "/home/ana"), "/home/ana/logs/train-200_3.gpu-07.out");
  EXPECT_EQ(slurm::expand_output_pattern("/abs/%j_%4a_%%.log", c, "203", "/w"), "/abs/203_0003_%.log");
  std::string o, e;
  slurm::output_options_from_submit_line("sbatch -J x --output=/o/%j.out -e '/e dir/%j.err' run.sh --output=ignored?", o, e);
  EXPECT_EQ(e, "/e dir/%j.err");
  slurm::output_options_from_submit_line("sbatch -o/o/%j.out run.sh", o, e);
  EXPECT_EQ(o, "/o/%j.out");
  EXPECT_EQ(e, "");
}

// A fake sacct on PATH replays recorded rows; the adapter's by_job and ended_between use it.
TEST(Slurm, AdapterAgainstFakeSacct) {
  TempDir t;
  std::string out_file = t.file("job-55.out", "Traceback (most recent call last):\nValueError: bad\n");
  std::string rows =
      "55|55|train|gpu|acct|ana|8|FAILED|1:0|0:0|NonZeroExitCode|gpu-[1-2]|2|1700000000|1700000000|1700000300|00:05:00|"
      "01:00:00|c1|" + t.path.string() + "||sbatch -o job-%j.out t.sh\n"
      "55.batch|55.batch|batch||acct||4|FAILED|1:0|||gpu-1|1|1700000000|1700000000|1700000300|00:05:00||c1||||\n"
      "56|56|other|gpu|acct|ana|8|RUNNING|0:0|0:0|None|gpu-3|1|1700000000|1700000000|Unknown|00:05:00|01:00:00|c1|/w||\n";
  std::string sacct = t.file("sacct", "#!/bin/sh\necho \"$@\" >> " + (t.path / "args").string() + "\ncat <<'EOF'\n" + rows + "EOF\n");
  std::string scontrol = t.file("scontrol", "#!/bin/sh\nexit 1\n");
  fs::permissions(sacct, fs::perms::owner_all);
  fs::permissions(scontrol, fs::perms::owner_all);
  YAML::Node cfg;
  cfg["sacct"] = sacct;
  cfg["scontrol"] = scontrol;
  cfg["scratch_dir"] = t.path.string();
  std::string error;
  auto adapter = adapter_registry().at("slurm")(cfg, error);
  ASSERT_TRUE(adapter) << error;
  std::vector<WorkloadAttempt> attempts;
  ASSERT_TRUE(adapter->by_job("55", attempts, error)) << error;
  ASSERT_EQ(attempts.size(), 1u);  // 56 is still running
  const auto& c = attempts[0].context;
  EXPECT_EQ(c.nodes, (std::vector<std::string>{"gpu-1", "gpu-2"}));
  EXPECT_EQ(c.user, "ana");
  EXPECT_EQ(c.queue, "gpu");
  EXPECT_EQ(c.reason, "NonZeroExitCode");
  ASSERT_EQ(attempts[0].evidence_files.size(), 2u);
  EXPECT_EQ(attempts[0].evidence_files[0].second.kind, ObservationKind::kScheduler);
  EXPECT_EQ(attempts[0].evidence_files[1].first, out_file);
  std::ifstream sacct_rows(attempts[0].evidence_files[0].first);
  std::string header, job_line;
  std::getline(sacct_rows, header);
  std::getline(sacct_rows, job_line);
  EXPECT_EQ(job_line, "55|train|gpu|acct|8|FAILED|1:0|2023-11-14T22:13:20|2023-11-14T22:18:20|00:05:00|gpu-[1-2]");

  attempts.clear();
  ASSERT_TRUE(adapter->ended_between(1700000299LL * 1'000'000'000LL, 1700000400LL * 1'000'000'000LL, attempts, error));
  EXPECT_EQ(attempts.size(), 1u);
  attempts.clear();
  ASSERT_TRUE(adapter->ended_between(1700000301LL * 1'000'000'000LL, 1700000400LL * 1'000'000'000LL, attempts, error));
  EXPECT_EQ(attempts.size(), 0u);
  EXPECT_FALSE(adapter->by_job("55; rm -rf /", attempts, error));
}

TEST(Slurm, SacctFailureIsAnError) {
  TempDir t;
  std::string sacct = t.file("sacct", "#!/bin/sh\necho 'sacct: error: Problem talking to the database' >&2\nexit 1\n");
  fs::permissions(sacct, fs::perms::owner_all);
  YAML::Node cfg;
  cfg["sacct"] = sacct;
  std::string error;
  auto adapter = adapter_registry().at("slurm")(cfg, error);
  ASSERT_TRUE(adapter);
  std::vector<WorkloadAttempt> attempts;
  EXPECT_FALSE(adapter->by_job("1", attempts, error));
  EXPECT_NE(error.find("Problem talking to the database"), std::string::npos) << error;
  YAML::Node bad;
  bad["sacc"] = "x";
  EXPECT_FALSE(adapter_registry().at("slurm")(bad, error));
  EXPECT_NE(error.find("adapters.slurm.sacc: unknown key"), std::string::npos);
}

// ------------------------------------------------------------------ pipeline: failing collectors

class ThrowingCollector : public Collector {
 public:
  std::string name() const override { return "test/throws"; }
  ConnectorReport collect(const WorkloadAttempt&, EvidenceSink&) override { throw std::runtime_error("connection refused"); }
};
class DownCollector : public Collector {
 public:
  std::string name() const override { return "test/loki-down"; }
  ConnectorReport collect(const WorkloadAttempt&, EvidenceSink&) override {
    return {"test/loki-down", "error", "GET http://127.0.0.1:1/loki/api/v1/query_range: connection refused", 0, 0};
  }
};
class LineCollector : public Collector {
 public:
  std::string name() const override { return "test/lines"; }
  ConnectorReport collect(const WorkloadAttempt& a, EvidenceSink& sink) override {
    TextSource s;
    s.name = "test/lines";
    s.kind = ObservationKind::kSyslog;
    s.node = a.context.nodes.empty() ? "" : a.context.nodes[0];
    sink.text(s, "hello\nworld\n", 1);
    return {"test/lines", "ok", "", 2, 12};
  }
};
CollectorRegistrar throws_registrar("test_throws", [](const YAML::Node&, std::string&) -> std::unique_ptr<Collector> {
  return std::make_unique<ThrowingCollector>();
});
CollectorRegistrar down_registrar("test_down", [](const YAML::Node&, std::string&) -> std::unique_ptr<Collector> {
  return std::make_unique<DownCollector>();
});
CollectorRegistrar lines_registrar("test_lines", [](const YAML::Node&, std::string&) -> std::unique_ptr<Collector> {
  return std::make_unique<LineCollector>();
});

AttemptOutcome run_bundle(const std::string& collectors_yaml, const std::string& db) {
  PipelineSetup setup;
  setup.config = YAML::Load("stores: {sqlite: {path: '" + db + "'}}\nrules: '" + std::string(ATTRIBUTION_SOURCE_DIR) +
                            "/rules'\n" + collectors_yaml);
  std::vector<std::string> errors;
  auto p = Pipeline::create(setup, false, errors);
  EXPECT_TRUE(p) << (errors.empty() ? "" : errors[0]);
  if (!p) return {};
  std::vector<WorkloadAttempt> attempts;
  std::string error;
  EXPECT_TRUE(p->adapter().by_job(sample("cuinit-999-one-node"), attempts, error)) << error;
  return p->process(attempts.at(0));
}

TEST(Pipeline, FailingCollectorsNeverAbortAndLowerQuality) {
  TempDir t;
  auto good = run_bundle("collectors: [{type: test_lines}]", (t.path / "a.sqlite").string());
  auto bad = run_bundle("collectors: [{type: test_lines}, {type: test_down}, {type: test_throws}]",
                        (t.path / "b.sqlite").string());
  EXPECT_EQ(good.verdict.quality, "definitive");
  EXPECT_FALSE(good.connector_failed());
  EXPECT_TRUE(bad.connector_failed());
  EXPECT_EQ(bad.verdict.outcome, good.verdict.outcome);  // the verdict is still produced
  EXPECT_NE(bad.verdict.quality, "definitive");          // …with lower quality
  ASSERT_EQ(bad.stored.size(), 1u);                       // …and stored
  EXPECT_TRUE(bad.store_errors.empty());
  // every collector's report is in the verdict
  for (const char* name : {"\"test/lines\"", "\"test/loki-down\"", "\"test/throws\"", "connection refused"})
    EXPECT_NE(bad.verdict.json.find(name), std::string::npos) << name;
  EXPECT_NE(bad.verdict.json.find("collector threw: connection refused"), std::string::npos);
}

TEST(Pipeline, UnknownCollectorNamesTheKey) {
  PipelineSetup setup;
  setup.config = YAML::Load("collectors: [{type: test_lines}, {type: nosuch}]");
  std::vector<std::string> errors;
  EXPECT_FALSE(Pipeline::create(setup, false, errors));
  ASSERT_FALSE(errors.empty());
  EXPECT_NE(errors[0].find("collectors[1].type: unknown collector \"nosuch\""), std::string::npos) << errors[0];
}

TEST(Pipeline, StaticBundleVerdictEqualsAnalyze) {
  TempDir t;
  std::string db = (t.path / "s.sqlite").string();
  auto o = run_bundle("", db);
  EXPECT_EQ(o.verdict.outcome, "gpu.driver");
  EXPECT_EQ(o.verdict.root_node, "gpu-s03");
  EXPECT_EQ(count(db, "SELECT count(*) FROM runs WHERE job_id='748002' AND cluster='c3' AND root_node='gpu-s03'"), 1);
  EXPECT_EQ(count(db, "SELECT count(*) FROM run_nodes WHERE node='gpu-s03' AND role='root_cause'"), 1);
}

}  // namespace
}  // namespace attribution::blueprint
