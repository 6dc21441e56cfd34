// Loki collector against tests/fakes/fake_loki (a loopback stand-in that implements Loki's
// documented query_range API; Grafana Loki itself is not installable from Debian 12).
#include <gtest/gtest.h>
#include <fmt/format.h>
#include <re2/re2.h>

#include <fstream>
#include <iostream>
#include <set>
#include <sstream>

#include "attribution/codec.h"
#include "connector_test_util.h"
#include "connectors/loki/loki_collector.h"
#include "connectors/loki/pushdown.h"
#include "fake_loki.h"
#include "attribution/edge/rules_dir.h"

namespace attribution::testing {
namespace {

using blueprint::build_pushdown;
using blueprint::catalog_patterns;
using blueprint::CatalogPattern;

const std::string kSample = std::string(ATTRIBUTION_TEST_SAMPLES_DIR) + "/xid79-nccl-watchdog-cascade";

std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  std::string l;
  while (std::getline(in, l)) out.push_back(l);
  return out;
}

std::vector<CatalogPattern> catalogue() {
  std::vector<RuleText> files;
  std::string err;
  EXPECT_TRUE(edge::read_rule_files(ATTRIBUTION_SOURCE_RULES_DIR, files, err)) << err;
  auto p = catalog_patterns(files, err);
  EXPECT_TRUE(err.empty()) << err;
  return p;
}

// Positive fixture lines of every extractor, by kind mask.
std::vector<std::pair<unsigned, std::string>> positive_fixtures() {
  std::vector<RuleText> files;
  std::string err;
  edge::read_rule_files(ATTRIBUTION_SOURCE_RULES_DIR, files, err);
  std::vector<std::pair<unsigned, std::string>> out;
  for (const auto& f : files) {
    YAML::Node doc = YAML::Load(f.text);
    if (!doc["extractors"]) continue;
    for (const auto& x : doc["extractors"]) {
      unsigned mask = 0;
      if (x["kinds"])
        for (const auto& k : x["kinds"]) mask |= 1u << static_cast<int>(*parse_observation_kind(k.as<std::string>()));
      for (const auto& fx : x["fixtures"]) {
        if (!fx["line"]) continue;
        if (fx["expect"].IsScalar() && fx["expect"].as<std::string>() == "none") continue;
        // A multi-line fixture is a block an extractor's `context:` reads: its last line is the one
        // matched (the context rows are checked by FilterKeepsTheRowsAContextReads).
        std::string text = fx["line"].as<std::string>();
        size_t nl = text.rfind('\n');
        out.emplace_back(mask, nl == std::string::npos ? text : text.substr(nl + 1));
      }
    }
  }
  return out;
}

TEST(LokiPushdown, GoRe2Conversion) {
  EXPECT_EQ(blueprint::to_go_re2(R"(Xid \(PCI:(?P<pci>[0-9a-f]{4})\): (?P<xid>\d+))"), R"(Xid \(PCI:(?:[0-9a-f]{4})\): (?:\d+))");
  EXPECT_EQ(blueprint::to_go_re2(R"(a\(?P<b>)"), R"(a\(?P<b>)");  // an escaped paren is not a group
  EXPECT_EQ(blueprint::logql_regex_filter("a|b"), "|~ `a|b`");
  EXPECT_EQ(blueprint::logql_regex_filter("a`\"b"), "|~ \"a`\\\"b\"");
  blueprint::Pushdown pd;
  EXPECT_EQ(blueprint::logql_line_filters(pd), "");
  pd.regex = "(?:x+y)";
  EXPECT_EQ(blueprint::logql_line_filters(pd), "|~ `(?:x+y)`");
  pd.prefilter = "(?i)x";
  EXPECT_EQ(blueprint::logql_line_filters(pd), "|~ `(?i)x` |~ `(?:x+y)`");  // the cheap stage first
}

// The lines an extractor reads above its own (`context:` rows and the required line) reach the engine
// through the filter too, or a block read from Loki would lose its rank and host.
TEST(LokiPushdown, FilterKeepsTheRowsAContextReads) {
  auto cat = catalogue();
  const std::vector<std::string> rows = {"Root Cause (first observed failure):", "  rank      : 12 (local_rank: 4)",
                                         "  host      : gpu-a07", "  traceback : Signal 9 (SIGKILL) received by PID 14750"};
  for (const char* mode : {"literals", "patterns"}) {
    auto pd = build_pushdown(cat, ObservationKind::kAppLog, mode);
    ASSERT_EQ(pd.mode, mode) << pd.note;
    RE2 re(pd.regex);
    ASSERT_TRUE(re.ok()) << re.error();
    for (const auto& line : rows) EXPECT_TRUE(RE2::PartialMatch(line, re)) << mode << " drops context row: " << line;
    EXPECT_FALSE(RE2::PartialMatch("  time      : 2025-05-21_15:43:03", re)) << mode;
  }
}

// A pattern whose blanks match runs of blanks keeps its words together in the literal filter
// ("pod +lost +due ..."), so a common word in it ("kubelet") does not let every line with that word
// through; lines with widened blanks still pass.
TEST(LokiPushdown, LiteralsKeepTheWordsOfATolerantPatternTogether) {
  std::vector<RuleText> files = {{"paper.yaml",
                                  "extractors:\n  - id: x.node-lost\n    pattern: 'Pod lost due to node lost, maybe its "
                                  "kubelet is down'\n"}};
  std::string err;
  auto cat = catalog_patterns(files, err);
  ASSERT_TRUE(err.empty()) << err;
  ASSERT_EQ(cat.size(), 1u);
  auto pd = build_pushdown(cat, ObservationKind::kSyslog, "literals");
  ASSERT_EQ(pd.mode, "literals") << pd.note;
  EXPECT_EQ(pd.atoms, 1u);
  EXPECT_NE(pd.regex.find(" +"), std::string::npos) << pd.regex;
  RE2 re(pd.regex);
  ASSERT_TRUE(re.ok()) << re.error();
  EXPECT_TRUE(RE2::PartialMatch("Exit Reason: Pod lost due to node lost, maybe its kubelet is down for a long time", re));
  EXPECT_TRUE(RE2::PartialMatch("Exit Reason: Pod  lost   due to node lost,  maybe its kubelet is down", re));
  EXPECT_FALSE(RE2::PartialMatch("kubelet[2211]: I0314 reconciler.go:224] VerifyControllerAttachedVolume started", re));
}

// The filter must never drop a line an extractor matches: every positive fixture of every
// extractor of the kind passes it, in both modes. And it must drop ordinary noise.
TEST(LokiPushdown, FilterKeepsEveryFixtureAndDropsNoise) {
  auto cat = catalogue();
  ASSERT_GT(cat.size(), 100u);
  auto fixtures = positive_fixtures();
  ASSERT_GT(fixtures.size(), 150u);
  const std::vector<std::string> noise = {
      "systemd[1]: Started Session 4242 of User root.",
      "CRON[88123]: (root) CMD (   cd / && run-parts --report /etc/cron.hourly)",
      "sshd[1201]: Accepted publickey for ops from 10.1.2.3 port 51514 ssh2: ED25519 SHA256:abc",
      "[rank3] step 1200 loss 2.3141 lr 3.0e-04 tokens/s 41234 grad_norm 0.91",
  };
  for (ObservationKind kind : {ObservationKind::kSyslog, ObservationKind::kAppLog, ObservationKind::kK8sEvent}) {
    for (const char* mode : {"literals", "patterns"}) {
      auto pd = build_pushdown(cat, kind, mode);
      ASSERT_EQ(pd.mode, mode) << pd.note;
      RE2::Options o;
      o.set_log_errors(false);
      RE2 re(pd.regex, o);
      ASSERT_TRUE(re.ok()) << re.error();
      unsigned bit = 1u << static_cast<int>(kind);
      size_t checked = 0;
      for (const auto& [mask, line] : fixtures) {
        if (mask && !(mask & bit)) continue;
        ++checked;
        EXPECT_TRUE(RE2::PartialMatch(line, re)) << mode << " drops fixture: " << line;
      }
      EXPECT_GT(checked, 10u);
      for (const auto& n : noise) EXPECT_FALSE(RE2::PartialMatch(n, re)) << mode << " keeps noise: " << n;
      if (std::string(mode) == "literals") {
        EXPECT_EQ(pd.regex.rfind("(?i)", 0), 0u);
        EXPECT_GT(pd.atoms, 5u);
      } else {
        // The exact patterns run behind the literal filter, which is the literals mode's own.
        EXPECT_EQ(pd.prefilter, build_pushdown(cat, kind, "literals").regex);
      }
      std::cout << "[pushdown] kind=" << to_string(kind) << " mode=" << mode << " patterns=" << pd.patterns
                << " atoms=" << pd.atoms << " filter_chars=" << pd.regex.size() << "\n";
    }
  }
}

// Builds Loki streams from the xid79 sample: kernel lines at boot_time + their dmesg seconds,
// app lines at their glog time (or the previous line's), each node with syslog-like noise.
struct LokiData {
  ExecutionContext ctx;
  std::vector<FakeLokiStream> streams;
  std::string sacct, batch_out;
  size_t noise = 0;
};

LokiData sample_streams(size_t noise_per_node) {
  LokiData d;
  auto m = parse_bundle_manifest(read_all(kSample + "/workload.yaml"), "xid79");
  EXPECT_TRUE(m.ok()) << m.error;
  d.ctx = m.value.context;
  RE2 dmesg(R"(^\[\s*(\d+)\.(\d+)\])");
  RE2 glog(R"([IWEF](\d\d)(\d\d) (\d\d):(\d\d):(\d\d)\.(\d{6}))");
  for (const auto& src : m.value.sources) {
    const std::string node = src.defaults.node;
    if (src.defaults.kind == ObservationKind::kSyslog) {
      FakeLokiStream s;
      s.labels = {{"job", "varlogs"}, {"host", node}, {"filename", "/var/log/kern.log"}};
      for (const auto& l : lines_of(read_all(kSample + "/" + src.path))) {
        int64_t sec = 0;
        std::string frac;
        if (!RE2::PartialMatch(l, dmesg, &sec, &frac)) continue;
        frac.resize(6, '0');
        s.entries.emplace_back(src.defaults.boot_time + sec * 1000000000LL + std::stoll(frac) * 1000, l);
      }
      for (size_t i = 0; i < noise_per_node; ++i) {
        int64_t t = d.ctx.start + static_cast<int64_t>(i) * 1000000000LL;
        const char* kinds[] = {"systemd[1]: Started Session %zu of User root.",
                               "CRON[%zu]: (root) CMD (   cd / && run-parts --report /etc/cron.hourly)",
                               "sshd[%zu]: Accepted publickey for ops from 10.1.2.3 port 51514 ssh2",
                               "kubelet[2211]: I0314 %zu reconciler.go:224] VerifyControllerAttachedVolume started"};
        char buf[200];
        std::snprintf(buf, sizeof buf, kinds[i % 4], i);
        s.entries.emplace_back(t, buf);
        ++d.noise;
      }
      d.streams.push_back(std::move(s));
    } else if (src.defaults.kind == ObservationKind::kAppLog && src.path.starts_with("logs/")) {
      FakeLokiStream s;
      s.labels = {{"job", "train"}, {"host", node}, {"filename", src.path}};
      int64_t last = d.ctx.start;
      for (const auto& l : lines_of(read_all(kSample + "/" + src.path))) {
        int mo, da, h, mi, se, us;
        if (RE2::PartialMatch(l, glog, &mo, &da, &h, &mi, &se, &us)) {
          auto t = parse_rfc3339(fmt::format("2026-{:02}-{:02}T{:02}:{:02}:{:02}.{:06}Z", mo, da, h, mi, se, us));
          if (t.ok()) last = std::max(last, t.value);
        }
        s.entries.emplace_back(last, l);
      }
      for (size_t i = 0; i < noise_per_node; ++i) {
        char buf[200];
        std::snprintf(buf, sizeof buf, "[rank%zu] step %zu loss 2.3141 lr 3.0e-04 tokens/s 41234", i % 16, i);
        s.entries.emplace_back(d.ctx.start + static_cast<int64_t>(i) * 1000000000LL, buf);
        ++d.noise;
      }
      d.streams.push_back(std::move(s));
    } else if (src.path == "sacct.txt") {
      d.sacct = read_all(kSample + "/" + src.path);
    } else {
      d.batch_out = read_all(kSample + "/" + src.path);
    }
  }
  return d;
}

struct LokiRun {
  Verdict verdict;
  ConnectorReport syslog, app;
  blueprint::LokiStats syslog_stats, app_stats;
  uint64_t server_bytes = 0;
};

LokiRun run_loki(FakeLoki& loki, const LokiData& d, const std::string& pushdown, int limit) {
  LokiRun r;
  Session session(source_rules(), d.ctx);
  TextSource sacct;
  sacct.name = "sacct.txt";
  sacct.kind = ObservationKind::kScheduler;
  session.ingest_text(sacct, d.sacct);
  TextSource out;
  out.name = "slurm-418207.out";
  out.node = "gpu-a01";
  session.ingest_text(out, d.batch_out);
  SessionSink sink(session);
  loki.reset_counters();
  std::string err;
  auto make = [&](const std::string& yaml) {
    blueprint::LokiCollectorConfig c;
    EXPECT_TRUE(blueprint::parse_loki_config(YAML::Load(yaml), c, err)) << err;
    return blueprint::LokiCollector(c);
  };
  auto sys = make("name: loki/syslog\nurl: " + loki.url() + "\ntenant: ops\nkind: syslog\nlimit: " +
                  std::to_string(limit) + "\npushdown: " + pushdown + "\nrules: " + ATTRIBUTION_SOURCE_RULES_DIR +
                  "\nquery: '{job=\"varlogs\", host=\"{node}\"}'\nbackoff_ms: 5\n");
  r.syslog = sys.collect({d.ctx, {}}, sink);
  r.syslog_stats = sys.stats();
  auto app = make("name: loki/app\nurl: " + loki.url() + "\ntenant: ops\nkind: applog\nlimit: " +
                  std::to_string(limit) + "\npushdown: " + pushdown + "\nrules: " + ATTRIBUTION_SOURCE_RULES_DIR +
                  "\nquery: '{job=\"train\", host=~\"{nodes_regex}\"}'\nnode_label: host\nbackoff_ms: 5\n");
  r.app = app.collect({d.ctx, {}}, sink);
  r.app_stats = app.stats();
  session.add_connector_report(r.syslog);
  session.add_connector_report(r.app);
  r.verdict = session.attribute();
  r.server_bytes = loki.bytes_sent();
  return r;
}

TEST(LokiCollector, PagedQueriesWithPushdownGiveTheSampleVerdictAndFetchLess) {
  LokiData d = sample_streams(3000);
  FakeLoki loki({.tenant = "ops", .max_entries_limit = 5000});
  for (auto s : d.streams) loki.add_stream(std::move(s));
  ASSERT_GT(loki.start(), 0);

  LokiRun off = run_loki(loki, d, "off", 500);
  LokiRun lit = run_loki(loki, d, "literals", 500);
  LokiRun pat = run_loki(loki, d, "patterns", 500);
  for (const LokiRun* r : {&off, &lit, &pat}) {
    EXPECT_EQ(r->syslog.status, "ok") << r->syslog.reason;
    EXPECT_EQ(r->app.status, "ok") << r->app.reason;
    EXPECT_EQ(r->verdict.outcome, "gpu.fell_off_bus") << r->verdict.summary;
    EXPECT_EQ(r->verdict.root_node, "gpu-a03") << r->verdict.summary;
    EXPECT_EQ(r->verdict.quality, "definitive") << r->verdict.summary;
  }
  // Without pushdown every entry of the window comes back, over many pages.
  EXPECT_GT(off.syslog.observations + off.app.observations, d.noise);
  EXPECT_GT(off.syslog_stats.pages, 20u);
  EXPECT_TRUE(off.syslog_stats.filter.empty());
  EXPECT_NE(lit.syslog_stats.filter.find("|~ `(?i)"), std::string::npos);
  EXPECT_NE(lit.syslog_stats.queries.at(0).find("{job=\"varlogs\", host=\"gpu-a01\"} |~ `(?i)"), std::string::npos);
  // Patterns mode: the literal stage first, then the exact patterns, so the long regex only sees candidates.
  EXPECT_EQ(pat.app_stats.filter.rfind(lit.app_stats.filter + " |~ ", 0), 0u);
  // Same symptoms, a fraction of the bytes.
  EXPECT_LT(lit.syslog.bytes + lit.app.bytes, (off.syslog.bytes + off.app.bytes) / 5);
  EXPECT_LE(pat.syslog.observations + pat.app.observations, lit.syslog.observations + lit.app.observations);
  EXPECT_EQ(off.verdict.json.size() > 0, true);
  EXPECT_NE(lit.syslog.reason.find("pushdown literals"), std::string::npos) << lit.syslog.reason;
  std::cout << "[loki-bytes] off=" << off.syslog.bytes + off.app.bytes << " (" << off.syslog.observations + off.app.observations
            << " entries, " << off.syslog_stats.pages + off.app_stats.pages << " pages)"
            << " literals=" << lit.syslog.bytes + lit.app.bytes << " (" << lit.syslog.observations + lit.app.observations
            << " entries) patterns=" << pat.syslog.bytes + pat.app.bytes << " ("
            << pat.syslog.observations + pat.app.observations << " entries)\n";
}

TEST(LokiCollector, EqualTimestampsAcrossPagesAreDeliveredOnce) {
  ExecutionContext ctx;
  ctx.id = "1";
  ctx.nodes = {"n1"};
  ctx.start = rfc3339("2026-03-14T08:00:00Z");
  ctx.end = rfc3339("2026-03-14T09:00:00Z");
  FakeLoki loki;
  FakeLokiStream a{{{"host", "n1"}, {"stream", "a"}}, {}}, b{{{"host", "n1"}, {"stream", "b"}}, {}};
  const int64_t t = ctx.start + 60'000'000'000LL;
  for (int i = 0; i < 3; ++i) a.entries.emplace_back(t - 10 + i, "before " + std::to_string(i));
  for (int i = 0; i < 7; ++i) a.entries.emplace_back(t, "same-ns a" + std::to_string(i));
  for (int i = 0; i < 6; ++i) b.entries.emplace_back(t, "same-ns b" + std::to_string(i));
  for (int i = 0; i < 5; ++i) b.entries.emplace_back(t + 1 + i, "after " + std::to_string(i));
  loki.add_stream(a);
  loki.add_stream(b);
  ASSERT_GT(loki.start(), 0);
  blueprint::LokiCollectorConfig c;
  std::string err;
  ASSERT_TRUE(blueprint::parse_loki_config(
      YAML::Load("url: " + loki.url() + "\nquery: '{host=\"{node}\"}'\nlimit: 4\nmax_limit: 16\npushdown: off\n"), c, err))
      << err;
  blueprint::LokiCollector col(c);
  Session session(source_rules(), ctx);
  SessionSink sink(session);
  ConnectorReport r = col.collect({ctx, {}}, sink);
  EXPECT_EQ(r.status, "ok") << r.reason;
  std::multiset<std::string> got;
  for (const auto& o : sink.kept) got.insert(o.text);
  EXPECT_EQ(got.size(), 21u);
  EXPECT_EQ(std::set<std::string>(got.begin(), got.end()).size(), 21u) << "an entry was delivered twice";
  EXPECT_GT(col.stats().duplicates, 0u);
  for (const auto& o : sink.kept) {
    EXPECT_EQ(o.node, "n1");
    EXPECT_NE(o.observed_at, kNoTime);
  }
  // Observations keep Loki's timestamps, in order.
  EXPECT_EQ(sink.kept.front().observed_at, t - 10);
  EXPECT_EQ(sink.kept.back().observed_at, t + 5);
}

TEST(LokiCollector, RetriesOn429And5xxThenSucceeds) {
  ExecutionContext ctx;
  ctx.id = "1";
  ctx.nodes = {"n1"};
  ctx.start = rfc3339("2026-03-14T08:00:00Z");
  ctx.end = rfc3339("2026-03-14T09:00:00Z");
  for (int status : {429, 503}) {
    FakeLoki loki({.fail_first = 2, .fail_status = status});
    loki.add_stream({{{"host", "n1"}}, {{ctx.start + 5, "NVRM: Xid (PCI:0000:09:00): 79, pid=0, GPU has fallen off the bus."}}});
    ASSERT_GT(loki.start(), 0);
    blueprint::LokiCollectorConfig c;
    std::string err;
    ASSERT_TRUE(blueprint::parse_loki_config(YAML::Load("url: " + loki.url() + "\nquery: '{host=\"{node}\"}'\nkind: syslog\n"
                                                        "backoff_ms: 5\nretries: 3\npushdown: off\n"), c, err));
    blueprint::LokiCollector col(c);
    Session session(source_rules(), ctx);
    SessionSink sink(session);
    ConnectorReport r = col.collect({ctx, {}}, sink);
    EXPECT_EQ(r.status, "ok") << r.reason;
    EXPECT_EQ(r.observations, 1u);
    EXPECT_EQ(col.stats().requests, 3u);
    EXPECT_EQ(session.attribute().outcome, "gpu.fell_off_bus");
  }
  // Failing more often than the retry budget: error, bounded tries.
  FakeLoki loki({.fail_first = 100, .fail_status = 503});
  ASSERT_GT(loki.start(), 0);
  blueprint::LokiCollectorConfig c;
  std::string err;
  ASSERT_TRUE(blueprint::parse_loki_config(
      YAML::Load("url: " + loki.url() + "\nquery: '{host=\"{node}\"}'\nbackoff_ms: 5\nretries: 3\npushdown: off\n"), c, err));
  blueprint::LokiCollector col(c);
  Session session(source_rules(), ctx);
  SessionSink sink(session);
  ConnectorReport r = col.collect({ctx, {}}, sink);
  EXPECT_EQ(r.status, "error");
  EXPECT_NE(r.reason.find("HTTP 503 (after 3 tries)"), std::string::npos) << r.reason;
  EXPECT_EQ(loki.requests(), 3u);
}

TEST(LokiCollector, ErrorsAreReportedNotThrown) {
  ExecutionContext ctx;
  ctx.id = "1";
  ctx.nodes = {"n1"};
  ctx.start = rfc3339("2026-03-14T08:00:00Z");
  ctx.end = rfc3339("2026-03-14T09:00:00Z");
  std::string err;
  // Tenant required, none sent.
  FakeLoki loki({.tenant = "ops"});
  ASSERT_GT(loki.start(), 0);
  blueprint::LokiCollectorConfig c;
  ASSERT_TRUE(blueprint::parse_loki_config(YAML::Load("url: " + loki.url() + "\nquery: '{host=\"{node}\"}'\npushdown: off\n"), c, err));
  Session session(source_rules(), ctx);
  SessionSink sink(session);
  ConnectorReport r = blueprint::LokiCollector(c).collect({ctx, {}}, sink);
  EXPECT_EQ(r.status, "error");
  EXPECT_NE(r.reason.find("HTTP 401"), std::string::npos) << r.reason;
  EXPECT_NE(r.reason.find("no org id"), std::string::npos) << r.reason;
  // Page size over the server's limit: Loki's 400 message is passed on.
  c.tenant = "ops";
  c.limit = 6000;
  c.max_limit = 6000;
  r = blueprint::LokiCollector(c).collect({ctx, {}}, sink);
  EXPECT_EQ(r.status, "error");
  EXPECT_NE(r.reason.find("max entries limit per query exceeded"), std::string::npos) << r.reason;
  // Nothing listening: connection refused, bounded retries.
  c.url = "http://127.0.0.1:1";
  c.retry = {2, 5, 10};
  r = blueprint::LokiCollector(c).collect({ctx, {}}, sink);
  EXPECT_EQ(r.status, "error");
  EXPECT_NE(r.reason.find("after 2 tries"), std::string::npos) << r.reason;
  // Empty window.
  c.url = loki.url();
  c.limit = 100;
  r = blueprint::LokiCollector(c).collect({ctx, {}}, sink);
  EXPECT_EQ(r.status, "empty") << r.reason;
  // No time window.
  ExecutionContext no_time = ctx;
  no_time.start = kNoTime;
  r = blueprint::LokiCollector(c).collect({no_time, {}}, sink);
  EXPECT_EQ(r.status, "error");
  // Config errors name the key.
  blueprint::LokiCollectorConfig bad;
  EXPECT_FALSE(blueprint::parse_loki_config(YAML::Load("query: x"), bad, err));
  EXPECT_EQ(err, "loki.url: missing");
  EXPECT_FALSE(blueprint::parse_loki_config(YAML::Load("url: http://x\nquery: x\npushdown: maybe"), bad, err));
  EXPECT_EQ(err, "loki.pushdown: literals | patterns | off");
}

// The digit-count rule of FORMATS §9, as the fake implements it: a 13-digit millisecond start is
// read as nanoseconds (1970) and an entry of today is outside [start, end) → empty, with success.
TEST(FakeLoki, MillisecondsAreReadAsNanoseconds) {
  FakeLoki loki;
  const int64_t t = rfc3339("2026-03-14T08:00:00Z");
  loki.add_stream({{{"host", "n1"}}, {{t, "x"}}});
  std::string body;
  const std::string q = "{host=\"n1\"}";
  ASSERT_EQ(loki.query_range({{"query", q}, {"start", std::to_string(t / 1000000 - 1000)}, {"end", std::to_string(t / 1000000 + 1000)}}, "", body), 200);
  EXPECT_NE(body.find("\"result\":[]"), std::string::npos) << body;
  ASSERT_EQ(loki.query_range({{"query", q}, {"start", std::to_string(t - 1)}, {"end", std::to_string(t + 1)}}, "", body), 200);
  EXPECT_NE(body.find("\"x\""), std::string::npos) << body;
  ASSERT_EQ(loki.query_range({{"query", q}, {"start", std::to_string(t / 1000000000 - 1)}, {"end", std::to_string(t / 1000000000 + 1)}}, "", body), 200);
  EXPECT_NE(body.find("\"x\""), std::string::npos) << "10 digits are seconds: " << body;
}

}  // namespace
}  // namespace attribution::testing
