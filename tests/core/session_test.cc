#include <gtest/gtest.h>

#include <algorithm>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "attribution/codec.h"
#include "attribution/engine.h"
#include "test_rules.h"

namespace attribution {
namespace {

using nlohmann::json;

ExecutionContext job(int ranks_per_node = 2, int nodes = 4) {
  ExecutionContext c;
  c.id = "6053";
  c.scheduler = "slurm";
  c.state = "FAILED";
  c.exit_code = "1:0";
  c.start = parse_rfc3339("2026-05-01T10:00:00Z").value;
  c.end = parse_rfc3339("2026-05-01T11:00:00Z").value;
  for (int n = 0; n < nodes; ++n) {
    c.nodes.push_back("gpu-" + std::string(1, static_cast<char>('a' + n)));
    for (int r = 0; r < ranks_per_node; ++r) c.ranks[n * ranks_per_node + r] = c.nodes.back();
  }
  return c;
}

std::string timeout_line(int rank, int seq, const char* numel = nullptr) {
  return "2026-05-01T10:31:00Z [E ProcessGroupNCCL.cpp:737] [Rank " + std::to_string(rank) +
         "] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=" + std::to_string(seq) +
         ", OpType=ALLREDUCE" + (numel ? std::string(", NumelIn=") + numel : "") + ", Timeout(ms)=1800000) ran\n";
}

struct Cascade {
  std::vector<std::pair<TextSource, std::string>> sources;
};

Cascade xid79_cascade() {
  Cascade c;
  TextSource dmesg;
  dmesg.name = "dmesg-gpu-b.txt";
  dmesg.kind = ObservationKind::kSyslog;
  dmesg.node = "gpu-b";
  c.sources.push_back({dmesg, "2026-05-01T10:30:00Z NVRM: Xid (PCI:0000:9b:00): 79, pid=0, GPU has fallen off the bus.\n"});
  for (int r = 0; r < 8; ++r) {
    if (r == 2 || r == 3) continue;  // the ranks on gpu-b died with the GPU
    TextSource s;
    s.name = "rank" + std::to_string(r) + ".log";
    s.rank = r;
    c.sources.push_back({s, "2026-05-01T10:00:01Z step 1\n" + timeout_line(r, 100)});
  }
  return c;
}

Verdict run(const Cascade& c, ExecutionContext ctx = job()) {
  Session s(testing::load_or_die(testing::kMiniRules), std::move(ctx));
  for (const auto& [src, text] : c.sources) s.ingest_text(src, text);
  return s.attribute();
}

TEST(Session, CascadeNamesTheGpuAndExplainsTheTimeouts) {
  Verdict v = run(xid79_cascade());
  EXPECT_EQ(v.outcome, "gpu.fell_off_bus");
  EXPECT_EQ(v.domain, "gpu");
  EXPECT_EQ(v.quality, "definitive");
  EXPECT_EQ(v.root_node, "gpu-b");
  EXPECT_EQ(v.affected_nodes, std::vector<std::string>{"gpu-b"});
  json j = json::parse(v.json);
  EXPECT_EQ(j["schema"], "attribution.verdict/v1");
  EXPECT_EQ(j["root_cause"]["symptom"], "gpu.xid.79");
  EXPECT_EQ(j["root_cause"]["gpu"], "0000:9b:00");
  EXPECT_EQ(j["root_cause"]["recommended_action"], "RESTART_BM");
  ASSERT_EQ(j["explained"].size(), 1u);
  EXPECT_EQ(j["explained"][0]["id"], "nccl.watchdog_timeout");
  EXPECT_EQ(j["explained"][0]["count"], 6);
  EXPECT_EQ(j["explained"][0]["rule"], "refine.collective-after-gpu-loss");
  EXPECT_EQ(j["explained"][0]["ranks"], "0-1,4-7");
  EXPECT_FALSE(j["evidence"].empty());
  EXPECT_EQ(j["evidence"][0]["observation"]["source"], "dmesg-gpu-b.txt");
}

// The verdict of a job whose only observation is one text source of `kind` on `node`.
json verdict_of(const std::shared_ptr<const RuleSet>& rules, const ExecutionContext& c, const std::string& name,
                ObservationKind kind, const std::string& node, const std::string& text) {
  Session s(rules, c);
  TextSource src;
  src.name = name;
  src.kind = kind;
  src.node = node;
  s.ingest_text(src, text);
  return json::parse(s.attribute().json);
}

// An app-class Xid (31) on one GPU in two processes reads as the GPU only when the node has another GPU
// that did not fault; on a node where nothing names a second GPU (one rank there, no other GPU in any
// line) the Xid keeps its own reading.
TEST(Session, RepeatGpuFaultNeedsAnotherGpuOnTheNode) {
  auto rules = testing::load_catalogue();
  auto verdict = [&](const std::string& text) {
    return verdict_of(rules, job(/*ranks_per_node=*/1), "dmesg-gpu-a.txt", ObservationKind::kSyslog, "gpu-a", text);
  };
  const std::string two_runs =
      "2026-05-01T10:10:00Z NVRM: Xid (PCI:0000:01:00): 31, pid=14292, name=python, Ch 00000030, intr 00000000. "
      "MMU Fault: ENGINE HOST0 HUBCLIENT_ESC faulted @ 0x10_00200000. Fault is of type FAULT_PDE ACCESS_TYPE_VIRT_READ\n"
      "2026-05-01T10:20:00Z NVRM: Xid (PCI:0000:01:00): 31, pid=14566, name=python, Ch 00000030, intr 00000000. "
      "MMU Fault: ENGINE HOST0 HUBCLIENT_ESC faulted @ 0x10_00200000. Fault is of type FAULT_PDE ACCESS_TYPE_VIRT_READ\n";
  json alone = verdict(two_runs);
  EXPECT_NE(alone["root_cause"]["symptom"], "gpu.repeat_fault") << alone.dump();
  EXPECT_NE(alone["outcome"], "gpu.hardware") << alone.dump();

  // The node's other GPU is named (a channel reset on it, a victim) and did not fault.
  json compared = verdict(two_runs + "2026-05-01T10:25:00Z NVRM: Xid (PCI:0000:02:00): 43, pid=14600, Ch 00000008\n");
  EXPECT_EQ(compared["root_cause"]["symptom"], "gpu.repeat_fault") << compared.dump();
  EXPECT_EQ(compared["outcome"], "gpu.hardware");
}

// A hung task says a task waited, not why: alone it is a probable host-kernel reading; with its stack
// inside the GPU driver's module the stall is the driver's (a kernel stall can be explained by a
// driver cause; only hardware ranks deeper).
TEST(Session, HungTaskWithGpuDriverStackIsTheDriver) {
  auto rules = testing::load_catalogue();
  auto verdict = [&](const std::string& text) {
    return verdict_of(rules, job(/*ranks_per_node=*/1), "dmesg.txt", ObservationKind::kSyslog, "gpu-a", text);
  };
  const std::string hung =
      "[ 7510.129324] INFO: task gdscheck:509579 blocked for more than 120 seconds.\n"
      "[ 7510.131227] Call Trace:\n"
      "[ 7510.131280]  down_read+0x43/0xa0\n";
  json alone = verdict(hung);
  EXPECT_EQ(alone["root_cause"]["symptom"], "kernel.hung_task") << alone.dump();
  EXPECT_EQ(alone["outcome"], "node.kernel");
  EXPECT_NE(alone["quality"]["level"], "definitive");

  json in_driver = verdict(hung + "[ 7510.131288]  os_acquire_rwlock_read+0x35/0x50 [nvidia]\n");
  EXPECT_EQ(in_driver["root_cause"]["symptom"], "kernel.stack_in_gpu_driver") << in_driver.dump();
  EXPECT_EQ(in_driver["outcome"], "gpu.driver");
}

// Ranks that never announce themselves while others do are a launch that does not match the world; a
// restart (every rank announced again), a completed job and one other rank's lone announcement are not.
TEST(Session, RankCensusNamesRanksThatNeverStarted) {
  auto rules = testing::load_catalogue();
  auto verdict = [&](const std::string& text, const char* state) {
    ExecutionContext c = job(/*ranks_per_node=*/4, /*nodes=*/2);
    c.state = state;
    return verdict_of(rules, c, "slurm-1234.out", ObservationKind::kAppLog, "", text);
  };
  std::string half;
  for (int r = 0; r < 4; ++r)
    for (int twice = 0; twice < 2; ++twice)
      half += fmt::format("initializing ddp: GLOBAL_RANK: {}, MEMBER: {}/8\n", r, r + 1);
  json missing = verdict(half, "FAILED");
  EXPECT_EQ(missing["root_cause"]["symptom"], "launcher.rank_census_mismatch") << missing.dump();
  EXPECT_EQ(missing["outcome"], "application.exception");
  EXPECT_NE(missing["quality"]["level"], "definitive");

  std::string restarted;
  for (int twice = 0; twice < 2; ++twice)
    for (int r = 0; r < 8; ++r) restarted += fmt::format("Initializing distributed: GLOBAL_RANK: {}, MEMBER: {}/8\n", r, r + 1);
  json all = verdict(restarted, "FAILED");
  EXPECT_NE(all["root_cause"]["symptom"], "launcher.rank_census_mismatch") << all.dump();

  json completed = verdict(half, "COMPLETED");
  EXPECT_NE(completed["root_cause"]["symptom"], "launcher.rank_census_mismatch") << completed.dump();

  // One rank other than 0 announcing once is an excerpt of one rank's output, not a census; rank 0 alone
  // (the other ranks never started) still is.
  json excerpt = verdict("Initializing distributed: GLOBAL_RANK: 5, MEMBER: 6/8\n", "FAILED");
  EXPECT_NE(excerpt["root_cause"]["symptom"], "launcher.rank_census_mismatch") << excerpt.dump();
  json rank0_alone = verdict("Initializing distributed: GLOBAL_RANK: 0, MEMBER: 1/8\n", "FAILED");
  EXPECT_EQ(rank0_alone["root_cause"]["symptom"], "launcher.rank_census_mismatch") << rank0_alone.dump();
}

// One node loading another NCCL build than the rest of the job is the suspect; a tie names no one,
// and a job the scheduler recorded as COMPLETED is left alone.
TEST(Session, VersionOutlierNamesTheOddNode) {
  auto rules = testing::load_catalogue();
  auto verdict = [&](const std::vector<std::pair<std::string, std::string>>& banners, const char* state) {
    ExecutionContext c = job(/*ranks_per_node=*/1, /*nodes=*/static_cast<int>(banners.size()));
    c.state = state;
    Session s(rules, c);
    for (const auto& [node, version] : banners) {
      TextSource log;
      log.name = "logs/" + node + ".txt";
      log.kind = ObservationKind::kAppLog;
      log.node = node;
      s.ingest_text(log, node + ":100:100 [0] NCCL INFO NCCL version " + version + "\n");
    }
    return json::parse(s.attribute().json);
  };
  json odd = verdict({{"gpu-a", "2.14.3+cuda11.7"}, {"gpu-b", "2.19.3+cuda12.3"}, {"gpu-c", "2.19.3+cuda12.3"}},
                     "FAILED");
  EXPECT_EQ(odd["root_cause"]["symptom"], "node.library_version_outlier") << odd.dump();
  EXPECT_EQ(odd["root_cause"]["node"], "gpu-a") << odd.dump();
  EXPECT_EQ(odd["outcome"], "node.platform_config");
  EXPECT_NE(odd["quality"]["level"], "definitive");

  json tie = verdict({{"gpu-a", "2.14.3+cuda11.7"}, {"gpu-b", "2.19.3+cuda12.3"}}, "FAILED");
  EXPECT_NE(tie["root_cause"]["symptom"], "node.library_version_outlier") << tie.dump();

  json completed = verdict({{"gpu-a", "2.14.3+cuda11.7"}, {"gpu-b", "2.19.3+cuda12.3"}, {"gpu-c", "2.19.3+cuda12.3"}},
                           "COMPLETED");
  EXPECT_NE(completed["root_cause"]["symptom"], "node.library_version_outlier") << completed.dump();
}

// A line that names a job node by its qualified name ("gpu-b.cluster.example.org") is about that node:
// it counts, under the job's spelling. A host outside the job stays filtered, and so does an address.
TEST(Session, QualifiedHostNameIsTheJobNode) {
  auto root_of = [](const std::string& syslog_node, const std::string& line) {
    Cascade c = xid79_cascade();
    c.sources[0].first.node = syslog_node;
    c.sources[0].second = line;
    return json::parse(run(c).json);
  };
  const std::string xid = "2026-05-01T10:30:00Z NVRM: Xid (PCI:0000:9b:00): 79, pid=0, GPU has fallen off the bus.\n";
  json fqdn = root_of("gpu-b.cluster.example.org", xid);
  EXPECT_EQ(fqdn["root_cause"]["symptom"], "gpu.xid.79") << fqdn.dump();
  EXPECT_EQ(fqdn["root_cause"]["node"], "gpu-b");
  json other = root_of("gpu-z.cluster.example.org", xid);
  EXPECT_NE(other["root_cause"]["symptom"], "gpu.xid.79") << other.dump();
  json address = root_of("10.1.2.3", xid);
  EXPECT_NE(address["root_cause"]["symptom"], "gpu.xid.79") << address.dump();
}

TEST(Session, SplitIngestEqualsOneShotInAnyOrder) {
  Cascade c = xid79_cascade();
  std::string one_shot = run(c).json;
  auto rules = testing::load_or_die(testing::kMiniRules);
  Session s(rules, job());
  for (size_t i = c.sources.size(); i-- > 0;) {
    s.ingest_text(c.sources[i].first, c.sources[i].second);
    if (i == c.sources.size() / 2) (void)s.attribute();  // attribute half-way
  }
  EXPECT_EQ(s.attribute().json, one_shot);
  // Parallel extraction merged in another order gives the same bytes.
  Session p(rules, job());
  std::vector<Extraction> parts;
  for (const auto& [src, text] : c.sources) {
    parts.push_back(p.new_extraction());
    Scanner(rules).scan(src, text, 0, 1, parts.back());
  }
  for (size_t i = parts.size(); i-- > 0;) p.merge(parts[i]);
  TextSource none;
  (void)none;
  EXPECT_EQ(p.attribute().json, one_shot);
}

TEST(Session, StragglerIsTheRankThatNeverReachedTheSeqNum) {
  Cascade c;
  for (int r = 0; r < 8; ++r) {
    TextSource s;
    s.name = "rank" + std::to_string(r) + ".log";
    s.rank = r;
    c.sources.push_back({s, r == 5 ? "2026-05-01T10:00:01Z step 1\n" + timeout_line(5, 99) : timeout_line(r, 100)});
  }
  Verdict v = run(c);
  EXPECT_EQ(v.outcome, "application.stuck_rank");
  EXPECT_EQ(v.quality, "probable");
  EXPECT_EQ(v.root_node, "gpu-c");  // rank 5 lives on the third node
  json j = json::parse(v.json);
  EXPECT_EQ(j["root_cause"]["rank"], 5);
  EXPECT_TRUE(j["affected_nodes"].empty());
}

// One merged log with no job rank map (rank prefixes on the lines, no source of its own per rank): a
// rank whose own timeout is at a lower SeqNum than the others' is behind them. A rank that printed
// nothing is not inferred from one merged log.
TEST(Session, RankTimedOutBehindTheOthersInOneMergedLog) {
  auto merged = [](int rank0_seq) {
    Cascade c;
    TextSource s;
    s.name = "train.log";
    std::string text;
    for (int r = 0; r < 4; ++r) {
      if (r == 3) continue;  // rank 3's lines were not kept
      text += timeout_line(r, r == 0 ? rank0_seq : 963);
    }
    c.sources.push_back({s, text});
    return c;
  };
  ExecutionContext no_rank_map = job(1, 4);
  no_rank_map.ranks.clear();
  Verdict behind = run(merged(959), no_rank_map);
  EXPECT_EQ(behind.outcome, "application.stuck_rank") << behind.json;
  EXPECT_EQ(behind.quality, "probable");
  EXPECT_EQ(json::parse(behind.json)["root_cause"]["rank"], 0);
  Verdict level = run(merged(963), no_rank_map);
  EXPECT_NE(level.outcome, "application.stuck_rank") << level.json;
}

TEST(Session, BarrierTimeoutSaysBusyElsewhere) {
  Cascade c;
  for (int r = 0; r < 4; ++r) {
    if (r == 2) continue;
    TextSource s;
    s.name = "rank" + std::to_string(r) + ".log";
    s.rank = r;
    c.sources.push_back({s, timeout_line(r, 3, "1")});
  }
  Verdict v = run(c, job(1, 4));
  EXPECT_EQ(v.outcome, "application.stuck_rank");
  EXPECT_NE(json::parse(v.json)["root_cause"]["label"].get<std::string>().find("busy elsewhere"), std::string::npos);
}

// Every rank times out on a 1-element ALLREDUCE: a barrier some rank never joined — unless it is the
// group's first collective (SeqNum 1), which also sets up the NCCL communicator: no inference then.
TEST(Session, BarrierOnTheFirstCollectiveNamesNoStuckRank) {
  auto all_ranks_at = [](int seq) {
    Cascade c;
    for (int r = 0; r < 4; ++r) {
      TextSource s;
      s.name = "rank" + std::to_string(r) + ".log";
      s.rank = r;
      c.sources.push_back({s, timeout_line(r, seq, "1")});
    }
    return c;
  };
  EXPECT_EQ(run(all_ranks_at(7), job(1, 4)).outcome, "application.stuck_rank");
  Verdict first = run(all_ranks_at(1), job(1, 4));
  EXPECT_NE(first.outcome, "application.stuck_rank") << first.json;
  EXPECT_EQ(first.quality, "insufficient") << first.json;
}

TEST(Session, TimeoutsAloneAreInsufficientAndNameMissingSources) {
  Cascade c;
  for (int r = 0; r < 8; ++r) {
    TextSource s;
    s.name = "rank" + std::to_string(r) + ".log";
    s.rank = r;
    c.sources.push_back({s, timeout_line(r, 100)});
  }
  Verdict v = run(c);
  EXPECT_EQ(v.outcome, "unknown.collective_hang");
  EXPECT_EQ(v.quality, "insufficient");
  json j = json::parse(v.json);
  EXPECT_TRUE(j["root_cause"].is_null());
  bool names_kernel_log = false;
  for (const auto& m : j["quality"]["missing"]) names_kernel_log |= m.get<std::string>().find("kernel log") != std::string::npos;
  EXPECT_TRUE(names_kernel_log);
}

TEST(Session, PeerCrashExplainsRemoteErrors) {
  Cascade c;
  TextSource b;
  b.name = "rank2.log";
  b.rank = 2;
  c.sources.push_back({b, "2026-05-01T10:00:00Z gpu-b:1:2 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB ; OOB ib0:10.0.0.3<0>\n"});
  TextSource k;
  k.name = "dmesg-b";
  k.kind = ObservationKind::kSyslog;
  k.node = "gpu-b";
  c.sources.push_back({k, "2026-05-01T10:20:00Z Out of memory: Killed process 77 (python) total-vm:1kB\n"});
  for (int r : {0, 4, 6}) {
    TextSource s;
    s.name = "rank" + std::to_string(r) + ".log";
    s.rank = r;
    c.sources.push_back({s, "2026-05-01T10:20:05Z misc/socket.cc:518 NCCL WARN Net : Call to recv from 10.0.0.3<58355> failed : Broken pipe\n"});
  }
  Verdict v = run(c);
  EXPECT_EQ(v.outcome, "node.host_oom");
  EXPECT_EQ(v.root_node, "gpu-b");
  json j = json::parse(v.json);
  ASSERT_FALSE(j["explained"].empty());
  EXPECT_EQ(j["explained"][0]["rule"], "refine.peer");
}

TEST(Session, SuccessAndSchedulerState) {
  ExecutionContext ok = job();
  ok.state = "COMPLETED";
  ok.exit_code = "0:0";
  Verdict v = run(Cascade{}, ok);
  EXPECT_EQ(v.outcome, "none.succeeded");
  EXPECT_EQ(v.quality, "definitive");
  // The same state without an exit code is an incomplete record: success leads, at probable.
  ExecutionContext bare = job();
  bare.state = "COMPLETED";
  bare.exit_code.clear();
  v = run(Cascade{}, bare);
  EXPECT_EQ(v.outcome, "none.succeeded");
  EXPECT_EQ(v.quality, "probable");
  EXPECT_NE(v.json.find("with no exit code"), std::string::npos) << v.json;
  ExecutionContext timeout = job();
  timeout.state = "TIMEOUT";
  v = run(Cascade{}, timeout);
  EXPECT_EQ(v.outcome, "scheduler.time_limit");
  EXPECT_EQ(v.quality, "probable");  // scheduler state alone is indirect
  EXPECT_EQ(v.root_node, "");
}

// sacct says COMPLETED 0:0 (the batch script's last command succeeded) while a task failed: the
// logs decide, and the verdict says the record was contradicted.
TEST(Session, CompletedRecordContradictedByFailedTask) {
  ExecutionContext ok = job();
  ok.state = "COMPLETED";
  ok.exit_code = "0:0";
  Cascade c;
  TextSource s;
  s.name = "rank5.log";
  s.rank = 5;
  c.sources.push_back({s, "2026-05-01T10:40:00Z step 9000\nKeyError: 'input_ids'\nChildFailedError: \n"});
  Verdict v = run(c, ok);
  EXPECT_EQ(v.outcome, "application.exception") << v.json;
  EXPECT_EQ(v.quality, "probable");
  EXPECT_EQ(v.root_node, "gpu-c");
  EXPECT_NE(v.json.find("contradicts the logs"), std::string::npos);
  // Without the failed task, the same exception line does not overturn the record.
  Cascade handled;
  handled.sources.push_back({s, "2026-05-01T10:40:00Z step 9000\nKeyError: 'input_ids'\n"});
  EXPECT_EQ(run(handled, ok).outcome, "none.succeeded");
}

TEST(Session, ConnectorErrorLowersQuality) {
  Session s(testing::load_or_die(testing::kMiniRules), job());
  for (const auto& [src, text] : xid79_cascade().sources) s.ingest_text(src, text);
  s.add_connector_report({"loki/syslog", "error", "connection refused", 0, 0});
  Verdict v = s.attribute();
  EXPECT_EQ(v.outcome, "gpu.fell_off_bus");
  EXPECT_EQ(v.quality, "probable");
  EXPECT_NE(v.json.find("connection refused"), std::string::npos);
}

// A node the scheduler drains (slurmstepd could not kill the step) is affected whatever the cause:
// here the verdict is the user's exception on gpu-c, and gpu-b is still to be looked at.
TEST(Session, DrainedNodeIsAffectedWhateverTheCause) {
  auto slurm_rules = [](bool drains) {
    return std::string(R"YAML(
version: 1
symptoms:
  - {id: slurm.kill_task_failed, label: "kill task failed", domain: node, outcome: node.kernel, role: context, priority: 0, drains_node: )YAML") +
           (drains ? "true" : "false") + R"YAML(}
extractors:
  - id: extract.slurm.stepd-unkillable
    description: unkillable step
    pattern: 'STEPD TERMINATED ON (?P<host>[\w.-]+) AT \S+ DUE TO JOB NOT ENDING WITH SIGNALS'
    symptom: slurm.kill_task_failed
    node: "{host}"
    fixtures:
      - line: "*** STEP 1.0 STEPD TERMINATED ON gpu-b AT 2026-05-01T10:45:00 DUE TO JOB NOT ENDING WITH SIGNALS ***"
        expect: {symptom: slurm.kill_task_failed, node: gpu-b}
)YAML";
  };
  for (bool drains : {true, false}) {
    LoadResult loaded = load_rules({{"mini.yaml", testing::kMiniRules}, {"slurm.yaml", slurm_rules(drains)}});
    ASSERT_TRUE(loaded.errors.empty()) << loaded.errors.front().to_string();
    Session s(loaded.rules, job());
    TextSource rank5;
    rank5.name = "rank5.log";
    rank5.rank = 5;
    s.ingest_text(rank5, "2026-05-01T10:40:00Z step 9000\nKeyError: 'input_ids'\n");
    TextSource slurmd;
    slurmd.name = "slurmd-gpu-b.log";
    slurmd.kind = ObservationKind::kSyslog;
    slurmd.node = "gpu-b";
    s.ingest_text(slurmd, "[2026-05-01T10:45:00.000] error: *** STEP 6053.0 STEPD TERMINATED ON gpu-b AT 2026-05-01T10:45:00 "
                          "DUE TO JOB NOT ENDING WITH SIGNALS ***\n");
    Verdict v = s.attribute();
    EXPECT_EQ(v.outcome, "application.exception") << v.json;
    json j = json::parse(v.json);
    std::vector<std::string> affected = j["affected_nodes"].get<std::vector<std::string>>();
    EXPECT_EQ(std::count(affected.begin(), affected.end(), "gpu-b"), drains ? 1 : 0) << v.json;
  }
}

// A GPU fault that names neither the GPU nor the node is probable at most: nothing says which device
// to reset. The same line from a named node's kernel log stays definitive.
TEST(Session, GpuFaultWithoutGpuOrNodeIsProbable) {
  const std::string reset_rules = R"YAML(
version: 1
symptoms:
  - {id: gpu.reset_required, label: "GPU reset required", domain: gpu, outcome: gpu.driver, role: cause, priority: 85}
extractors:
  - id: extract.gpu.reset-required
    description: reset required
    pattern: 'Reset required \[NV_ERR_RESET_REQUIRED\]'
    symptom: gpu.reset_required
    fixtures:
      - line: "NVRM: nvAssertOkFailedNoLog: Assertion failed: Reset required [NV_ERR_RESET_REQUIRED] (0x00000062)"
        expect: {symptom: gpu.reset_required}
)YAML";
  LoadResult loaded = load_rules({{"mini.yaml", testing::kMiniRules}, {"reset.yaml", reset_rules}});
  ASSERT_TRUE(loaded.errors.empty()) << loaded.errors.front().to_string();
  auto verdict = [&](const std::string& node) {
    ExecutionContext ctx = job();
    if (node.empty()) {
      ctx.nodes.clear();
      ctx.ranks.clear();
    }
    Session s(loaded.rules, ctx);
    TextSource dmesg;
    dmesg.name = "dmesg.txt";
    dmesg.kind = ObservationKind::kSyslog;
    dmesg.node = node;
    s.ingest_text(dmesg, "2026-05-01T10:30:00Z NVRM: nvAssertOkFailedNoLog: Assertion failed: Reset required "
                         "[NV_ERR_RESET_REQUIRED] (0x00000062) returned from status @ kernel_channel.c:2827\n");
    TextSource rank0;
    rank0.name = "rank0.log";
    rank0.rank = 0;
    s.ingest_text(rank0, "2026-05-01T10:00:01Z step 1\n");
    return s.attribute();
  };
  Verdict unnamed = verdict("");
  EXPECT_EQ(unnamed.outcome, "gpu.driver") << unnamed.json;
  EXPECT_EQ(unnamed.quality, "probable") << unnamed.json;
  EXPECT_NE(unnamed.json.find("names no GPU and no node"), std::string::npos);
  Verdict named = verdict("gpu-b");
  EXPECT_EQ(named.outcome, "gpu.driver") << named.json;
  EXPECT_EQ(named.quality, "definitive") << named.json;
}

TEST(Session, SpecificCauseOutranksCatchAllOfHigherPriority) {
  // A catch-all reading (evidence: generic) of priority 50 against specific readings of 40 and 20:
  // the specific one of weight (>= 40) is the root whatever the catch-all's priority; a lighter one
  // (20) is not, and the catch-all stays the root.
  const std::string rules = R"YAML(
version: 1
symptoms:
  - {id: "python.exception.*", label: "Python {exc}", domain: application, outcome: application.exception, role: cause, priority: 50, evidence: generic}
  - {id: alloc.failed, label: "device allocation failed", domain: application, outcome: application.cuda_oom, role: cause, priority: 40, evidence: indirect}
  - {id: kernel.fault, label: "kernel fault", domain: application, outcome: application.gpu_fault, role: cause, priority: 20, evidence: indirect}
extractors:
  - id: extract.python.exception
    description: catch-all
    pattern: '^(?P<exc>(?:[A-Z]\w*)?(?:Error|Exception)): '
    precedence: 0
    symptom: "python.exception.{exc}"
    fixtures:
      - line: "Exception: Failed to create simulation view backend"
        expect: {symptom: python.exception.Exception}
  - id: extract.alloc.failed
    description: allocator
    pattern: 'fail to allocate memory \d+ bytes'
    symptom: alloc.failed
    fixtures:
      - line: "PxgCudaDeviceMemoryAllocator fail to allocate memory 71303168 bytes!! Result = 2"
        expect: {symptom: alloc.failed}
  - id: extract.kernel.fault
    description: fault
    pattern: 'kernel faulted'
    symptom: kernel.fault
    fixtures:
      - line: "kernel faulted"
        expect: {symptom: kernel.fault}
)YAML";
  LoadResult loaded = load_rules({{"catchall.yaml", rules}});
  ASSERT_TRUE(loaded.errors.empty()) << loaded.errors.front().to_string();
  auto verdict = [&](const std::string& text) {
    Session s(loaded.rules, job());
    TextSource rank0;
    rank0.name = "rank0.log";
    rank0.rank = 0;
    s.ingest_text(rank0, text);
    return s.attribute();
  };
  Verdict with_alloc = verdict(
      "PxgCudaDeviceMemoryAllocator fail to allocate memory 71303168 bytes!! Result = 2\n"
      "Exception: Failed to create simulation view backend\n");
  EXPECT_EQ(with_alloc.outcome, "application.cuda_oom") << with_alloc.json;
  Verdict with_fault = verdict("kernel faulted\nException: Failed to create simulation view backend\n");
  EXPECT_EQ(with_fault.outcome, "application.exception") << with_fault.json;
}

TEST(Session, TwoNodesFailingTogetherIsAmbiguous) {
  Cascade c;
  for (const char* n : {"gpu-a", "gpu-d"}) {
    TextSource k;
    k.name = std::string("dmesg-") + n;
    k.kind = ObservationKind::kSyslog;
    k.node = n;
    c.sources.push_back({k, std::string("2026-05-01T10:30:0") + (n[4] == 'a' ? "0" : "2") +
                                "Z NVRM: Xid (PCI:0000:9b:00): 79, pid=0, GPU has fallen off the bus.\n"});
  }
  Verdict v = run(c);
  EXPECT_EQ(v.quality, "ambiguous");
  EXPECT_EQ(v.root_node, "");
  EXPECT_EQ(v.affected_nodes, (std::vector<std::string>{"gpu-a", "gpu-d"}));
  EXPECT_EQ(json::parse(v.json)["quality"]["candidates"].size(), 2u);
}

// Two direct GPU faults of the same weight on one node in the same second, naming different outcomes (a
// contained ECC error on one GPU, an NVLink error on another): the node is clear, the outcome is not, so the
// verdict is probable. The same contained error alone is definitive.
TEST(Session, DifferentFaultsInTheSameMomentAreProbable) {
  auto rules = testing::load_catalogue();
  auto verdict = [&](const std::string& text) {
    return verdict_of(rules, job(/*ranks_per_node=*/1), "dmesg-gpu-a.txt", ObservationKind::kSyslog, "gpu-a", text);
  };
  const std::string contained = "2026-05-01T10:30:00Z NVRM: Xid (PCI:0000:cb:00): 94, pid=538578, name=python, channel 0x0000000b\n";
  json alone = verdict(contained);
  EXPECT_EQ(alone["outcome"], "gpu.memory_ecc") << alone.dump();
  EXPECT_EQ(alone["quality"]["level"], "definitive") << alone.dump();
  json both = verdict(contained + "2026-05-01T10:30:00Z NVRM: Xid (PCI:0000:4c:00): 137, TLC RX interrupt hit on link 4 on GPU0: PRIV Error\n");
  EXPECT_EQ(both["domain"], "gpu") << both.dump();
  EXPECT_EQ(both["quality"]["level"], "probable") << both.dump();
  EXPECT_NE(both.dump().find("which of the two faults came first is not clear"), std::string::npos) << both.dump();
}

// A CUDA OOM whose own figures leave much of the GPU held outside the process (a co-tenant on a shared GPU)
// stays an OOM but is probable; one where the process holds nearly all of the GPU is definitive.
TEST(Session, OomWithMemoryHeldElsewhereIsProbable) {
  auto rules = testing::load_catalogue();
  auto verdict = [&](const std::string& text) {
    return verdict_of(rules, job(/*ranks_per_node=*/1), "rank0.log", ObservationKind::kAppLog, "gpu-a", text);
  };
  json own = verdict("2026-05-01T10:30:00Z RuntimeError: CUDA out of memory. Tried to allocate 20.00 MiB (GPU 0; "
                     "15.78 GiB total capacity; 14.56 GiB already allocated; 3.75 MiB free; 14.60 GiB reserved in "
                     "total by PyTorch)\n");
  EXPECT_EQ(own["outcome"], "application.cuda_oom") << own.dump();
  EXPECT_EQ(own["quality"]["level"], "definitive") << own.dump();
  json shared = verdict("2026-05-01T10:30:00Z RuntimeError: CUDA out of memory. Tried to allocate 20.00 MiB (GPU 0; "
                        "14.76 GiB total capacity; 4.37 GiB already allocated; 14.75 MiB free; 4.43 GiB reserved in "
                        "total by PyTorch)\n");
  EXPECT_EQ(shared["outcome"], "application.cuda_oom") << shared.dump();
  EXPECT_EQ(shared["quality"]["level"], "probable") << shared.dump();
  EXPECT_EQ(shared["root_cause"]["symptom"], "inferred.oom_memory_held_elsewhere") << shared.dump();
  EXPECT_NE(shared.dump().find("is held outside it"), std::string::npos) << shared.dump();
  // The report says far more was free than was asked for: the figures do not show what filled the GPU.
  json odd = verdict("2026-05-01T10:30:00Z torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.00 GiB. "
                     "GPU 2 has a total capacity of 24.00 GiB of which 22.54 GiB is free.\n");
  EXPECT_EQ(odd["outcome"], "application.cuda_oom") << odd.dump();
  EXPECT_EQ(odd["quality"]["level"], "probable") << odd.dump();
  EXPECT_EQ(odd["root_cause"]["symptom"], "inferred.oom_free_exceeds_request") << odd.dump();
  json tight = verdict("2026-05-01T10:30:00Z torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.00 GiB. "
                       "GPU 2 has a total capacity of 24.00 GiB of which 412.00 MiB is free.\n");
  EXPECT_EQ(tight["quality"]["level"], "definitive") << tight.dump();
  // The report names one process and not this one, and 4 GiB is held by processes it does not name: shared.
  json named = verdict("2026-05-01T10:30:00Z torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 260.00 MiB. "
                       "GPU 0 has a total capacity of 23.64 GiB of which 77.12 MiB is free. Process 250179 has 19.19 "
                       "GiB memory in use.\n");
  EXPECT_EQ(named["outcome"], "application.cuda_oom") << named.dump();
  EXPECT_EQ(named["quality"]["level"], "probable") << named.dump();
  EXPECT_EQ(named["root_cause"]["symptom"], "inferred.oom_held_by_named_process") << named.dump();
  // One process named holding all the GPU's used memory (this process under its host PID in a container, alone
  // on the GPU): definitive.
  json alone_named = verdict("2026-05-01T10:30:00Z torch.OutOfMemoryError: CUDA out of memory. Tried to allocate "
                             "1.00 GiB. GPU 0 has a total capacity of 79.10 GiB of which 98.00 MiB is free. Process "
                             "387746 has 78.89 GiB memory in use.\n");
  EXPECT_EQ(alone_named["quality"]["level"], "definitive") << alone_named.dump();
  // Listed, but this process is named too: the held-elsewhere arithmetic decides (here: it holds the GPU).
  json self = verdict("2026-05-01T10:30:00Z torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 260.00 MiB. "
                      "GPU 0 has a total capacity of 23.64 GiB of which 77.12 MiB is free. Process 4242 has 300.00 MiB "
                      "memory in use. Including non-PyTorch memory, this process has 23.20 GiB memory in use.\n");
  EXPECT_EQ(self["quality"]["level"], "definitive") << self.dump();
}

TEST(Session, FloodOf16kRanksStaysCompact) {
  auto rules = testing::load_or_die(testing::kMiniRules);
  ExecutionContext c = job(8, 2048);
  Session s(rules, c);
  std::string text;
  for (int r = 0; r < 16384; ++r) text += timeout_line(r, 100);
  TextSource src;
  src.name = "all.log";
  s.ingest_text(src, text);
  Verdict v = s.attribute();
  EXPECT_EQ(v.outcome, "unknown.collective_hang");
  EXPECT_LT(v.json.size(), 400000u);
}

// A root cause read by a catch-all rule (`evidence: generic`) is probable at most: the line says what
// was raised, not whose fault it is. The same line under a direct symptom stays definitive.
TEST(Session, GenericEvidenceIsProbableAtMost) {
  constexpr const char* kRules = R"YAML(
version: 1
symptoms:
  - {id: "python.exception.*", label: "Python {exc}", domain: application, outcome: application.exception, role: cause, priority: 50, evidence: generic}
  - {id: "python.exception.KeyError", label: "KeyError", domain: application, outcome: application.exception, role: cause, priority: 50}
extractors:
  - id: extract.python.exception
    description: generic exception
    kinds: [applog]
    pattern: '(?P<exc>[A-Z][A-Za-z]*Error): (?P<msg>.+)'
    symptom: "python.exception.{exc}"
    fixtures:
      - line: "ValueError: x"
        expect: {symptom: python.exception.ValueError}
)YAML";
  auto verdict = [&](const std::string& line) {
    Session s(testing::load_or_die(kRules), job());
    TextSource src;
    src.name = "rank0.log";
    src.rank = 0;
    s.ingest_text(src, "2026-05-01T10:31:00Z " + line + "\n");
    return s.attribute();
  };
  Verdict generic = verdict("RuntimeError: Gloo connectFullMesh failed");
  EXPECT_EQ(generic.outcome, "application.exception");
  EXPECT_EQ(generic.quality, "probable");
  EXPECT_NE(generic.json.find("catch-all rule"), std::string::npos);
  Verdict direct = verdict("KeyError: 'labels'");
  EXPECT_EQ(direct.outcome, "application.exception");
  EXPECT_EQ(direct.quality, "definitive");
}

// `outranks: true` lets a refiner's cause explain an effect of higher priority (a crashed rank explains the
// time limit the others waited into); without it the higher-priority effect stays the root cause.
TEST(Session, OutranksExplainsAHigherPriorityEffect) {
  auto rules = [](bool outranks) {
    return std::string(R"YAML(
version: 1
symptoms:
  - {id: "crash", label: "crash", domain: application, outcome: application.exception, role: cause, priority: 45}
  - {id: "limit", label: "limit", domain: scheduler, outcome: scheduler.time_limit, role: cause, priority: 60}
extractors:
  - id: extract.crash
    description: crash
    kinds: [applog]
    pattern: 'Floating point exception!'
    symptom: crash
    fixtures:
      - line: "Floating point exception!"
        expect: {symptom: crash}
  - id: extract.limit
    description: limit
    kinds: [applog]
    pattern: 'DUE TO TIME LIMIT'
    symptom: limit
    fixtures:
      - line: "CANCELLED DUE TO TIME LIMIT"
        expect: {symptom: limit}
refiners:
  - id: refine.crash-explains-limit
    phase: DEFAULT
    description: test
    cause: ["crash"]
    explains: ["limit"]
    within: 720h
    before: 0s
)YAML") + (outranks ? "    outranks: true\n" : "");
  };
  auto root = [&](bool outranks, const std::string& text) {
    Session s(testing::load_or_die(rules(outranks)), job());
    TextSource src;
    src.name = "job.out";
    s.ingest_text(src, text);
    return s.attribute().root_symptom;
  };
  const std::string crash_then_limit = "Floating point exception!\nslurmstepd: error: *** JOB 1 CANCELLED DUE TO TIME LIMIT ***\n";
  EXPECT_EQ(root(true, crash_then_limit), "crash");
  EXPECT_EQ(root(false, crash_then_limit), "limit");
  // Without times, the window is one-sided by line order: a crash after the limit explains nothing.
  EXPECT_EQ(root(true, "slurmstepd: error: *** JOB 1 CANCELLED DUE TO TIME LIMIT ***\nFloating point exception!\n"), "limit");
}


// `same_event: true` lets a refiner's cause explain lines of its own event whatever their priority or
// domain (a cgroup's OOM kill explains the kernel's "invoked oom-killer" header, a node-domain symptom
// of higher priority); without it the header stays the root cause.
TEST(Session, SameEventExplainsAnotherDomainsHigherPriorityEffect) {
  // The kill and the header of one OOM report; the refiner's last line is the flag under test.
  const std::string oom_report_rules = R"YAML(
version: 1
symptoms:
  - {id: "kill", label: "kill", domain: application, outcome: application.memory_limit, role: cause, priority: 60}
  - {id: "header", label: "header", domain: node, outcome: node.host_oom, role: cause, priority: 70, evidence: indirect}
extractors:
  - id: extract.kill
    description: kill
    kinds: [applog]
    pattern: 'Memory cgroup out of memory: Killed process'
    symptom: kill
    fixtures:
      - line: "Memory cgroup out of memory: Killed process 1 (python3)"
        expect: {symptom: kill}
  - id: extract.header
    description: header
    kinds: [applog]
    pattern: 'invoked oom-killer'
    symptom: header
    fixtures:
      - line: "python3 invoked oom-killer: gfp_mask=0xcc0(GFP_KERNEL), order=0, oom_score_adj=0"
        expect: {symptom: header}
refiners:
  - id: refine.kill-explains-header
    phase: EARLY
    description: test
    cause: ["kill"]
    explains: ["header"]
    within: 1m
    before: 1m
)YAML";
  const std::string dmesg =
      "python3 invoked oom-killer: gfp_mask=0xcc0(GFP_KERNEL), order=0, oom_score_adj=0\n"
      "Memory cgroup out of memory: Killed process 1 (python3) total-vm:1kB\n";
  auto root_with = [&](const std::string& flag_line) {
    Session s(testing::load_or_die(oom_report_rules + flag_line), job());
    TextSource src;
    src.name = "dmesg";
    s.ingest_text(src, dmesg);
    return s.attribute().root_symptom;
  };
  EXPECT_EQ(root_with("    same_event: true\n"), "kill");
  EXPECT_EQ(root_with(""), "header");
}

}  // namespace
}  // namespace attribution
