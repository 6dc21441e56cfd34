// Kueue adapter and k8s pod-logs collector through tests/fakes/kubectl, a kubectl stand-in that
// answers with recorded, real-shaped JSON (tests/fakes/kubectl-fixtures/): no Kubernetes API
// server is installable here. The pod logs are the kueue samples' logs with kubectl's
// --timestamps prefix.
#include <gtest/gtest.h>
#include <fmt/format.h>
#include <re2/re2.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "attribution/codec.h"
#include "connector_test_util.h"
#include "connectors/k8s/k8s_logs_collector.h"
#include "connectors/k8s/process.h"
#include "connectors/kueue/kueue_adapter.h"

namespace attribution::testing {
namespace {

namespace fs = std::filesystem;
const std::string kShim = std::string(ATTRIBUTION_TEST_FAKES_DIR) + "/kubectl";

std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// kubectl logs --timestamps shape: "<RFC3339Nano> <line>"; times from the glog prefix when a line
// has one, else the previous line's.
std::string with_timestamps(const std::string& text, int year, TimeNs start) {
  RE2 glog(R"([IWEF](\d\d)(\d\d) (\d\d):(\d\d):(\d\d)\.(\d{6}))");
  std::istringstream in(text);
  std::string line, out;
  TimeNs last = start;
  while (std::getline(in, line)) {
    int mo, da, h, mi, se, us;
    if (RE2::PartialMatch(line, glog, &mo, &da, &h, &mi, &se, &us)) {
      auto t = parse_rfc3339(fmt::format("{}-{:02}-{:02}T{:02}:{:02}:{:02}.{:06}Z", year, mo, da, h, mi, se, us));
      if (t.ok()) last = std::max(last, t.value);
    }
    out += format_rfc3339_ns(last) + " " + line + "\n";
  }
  return out;
}

class KubectlShim : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = temp_dir("kubectl");
    fs::copy(std::string(ATTRIBUTION_TEST_FAKES_DIR) + "/kubectl-fixtures", dir_, fs::copy_options::recursive);
    const std::string s = ATTRIBUTION_TEST_SAMPLES_DIR;
    TimeNs t0 = rfc3339("2026-06-24T10:00:00Z");
    write_file(dir_ + "/logs/sft-gemma-worker-0_pytorch.log",
               with_timestamps(read_all(s + "/kueue-pod-oomkilled/logs/sft-gemma-worker-0.log"), 2026, t0));
    write_file(dir_ + "/logs/sft-gemma-worker-1_pytorch.previous.log",
               with_timestamps(read_all(s + "/kueue-pod-oomkilled/logs/sft-gemma-worker-1.log"), 2026, t0));
    write_file(dir_ + "/logs/sft-gemma-worker-1_pytorch.log",
               "2026-06-24T11:34:30.000000000Z [restart 1] loading checkpoint shard 1/8\n");
    TimeNs t1 = rfc3339("2026-07-30T08:10:00Z");
    for (const char* w : {"eval-harness-worker-0", "eval-harness-worker-1"})
      write_file(dir_ + "/logs/" + w + "_pytorch.log",
                 with_timestamps(read_all(s + "/kueue-evicted-preempted/logs/" + std::string(w) + ".log"), 2026, t1));
    setenv("KUBECTL_FIXTURES", dir_.c_str(), 1);
    setenv("KUBECTL_SHIM_LOG", (dir_ + "/calls.log").c_str(), 1);
    unsetenv("KUBECTL_SHIM_DOWN");
  }
  void TearDown() override {
    unsetenv("KUBECTL_SHIM_DOWN");
    fs::remove_all(dir_);
  }
  std::unique_ptr<blueprint::Adapter> adapter() {
    std::string err;
    auto a = blueprint::adapter_registry().at("kueue")(
        YAML::Load("kubectl: " + kShim + "\ncluster: gke-a3\nevidence_dir: " + dir_ + "/evidence\n"), err);
    EXPECT_NE(a, nullptr) << err;
    return a;
  }
  std::unique_ptr<blueprint::Collector> logs(const std::string& extra = "") {
    std::string err;
    auto c = blueprint::collector_registry().at("k8s_logs")(YAML::Load("name: k8s/pods\nkubectl: " + kShim + "\n" + extra), err);
    EXPECT_NE(c, nullptr) << err;
    return c;
  }
  Verdict verdict_for(const blueprint::WorkloadAttempt& a, std::vector<ConnectorReport>& reports) {
    Session session(source_rules(), a.context);
    SessionSink sink(session);
    std::string err;
    auto files = blueprint::collector_registry().at("files")(YAML::Load("name: kueue-evidence\ninclude_adapter_files: true"), err);
    reports.push_back(files->collect(a, sink));
    reports.push_back(logs()->collect(a, sink));
    for (const auto& r : reports) session.add_connector_report(r);
    return session.attribute();
  }
  std::string dir_;
};

TEST_F(KubectlShim, KueueWorkloadWithOomKilledPod) {
  auto a = adapter();
  std::vector<blueprint::WorkloadAttempt> attempts;
  std::string err;
  ASSERT_TRUE(a->by_job("sft-gemma", attempts, err)) << err;  // the owner job's name finds it
  ASSERT_EQ(attempts.size(), 1u);
  const ExecutionContext& c = attempts[0].context;
  EXPECT_EQ(c.id, "pytorchjob-sft-gemma-5b1c2");
  EXPECT_EQ(c.scheduler, "kueue");
  EXPECT_EQ(c.cluster, "gke-a3");
  EXPECT_EQ(c.name, "sft-gemma");
  EXPECT_EQ(c.queue, "a3-lq");
  EXPECT_EQ(c.nodes, (std::vector<std::string>{"gke-a3-pool-7c1e", "gke-a3-pool-9f02"}));
  EXPECT_EQ(c.start, rfc3339("2026-06-24T10:00:00Z"));
  EXPECT_EQ(c.end, rfc3339("2026-06-24T11:34:20Z"));
  EXPECT_EQ(c.state, "Failed");
  EXPECT_EQ(c.exit_code, "137");
  EXPECT_EQ(c.reason, "OOMKilled");
  EXPECT_EQ(c.labels.at("namespace"), "llm-train");
  EXPECT_EQ(c.labels.at("pods"), "sft-gemma-worker-0,sft-gemma-worker-1");  // not the notebook
  EXPECT_EQ(c.labels.at("cluster_queue"), "a3-cq");
  ASSERT_EQ(attempts[0].evidence_files.size(), 3u);
  std::string events = read_all(attempts[0].evidence_files[2].first);
  EXPECT_NE(events.find("2026-06-24T11:34:12.000Z Warning OOMKilling node/gke-a3-pool-9f02 Memory cgroup out of memory"),
            std::string::npos) << events;
  EXPECT_NE(events.find("BackOff (x2) pod/sft-gemma-worker-1"), std::string::npos) << events;
  EXPECT_EQ(events.find("unrelated-notebook"), std::string::npos);

  std::vector<ConnectorReport> reports;
  Verdict v = verdict_for(attempts[0], reports);
  EXPECT_EQ(reports[0].status, "ok") << reports[0].reason;
  EXPECT_EQ(reports[1].connector, "k8s/pods");
  EXPECT_EQ(reports[1].status, "ok") << reports[1].reason;
  EXPECT_NE(reports[1].reason.find("2 pods, 3 container logs (1 previous)"), std::string::npos) << reports[1].reason;
  std::string calls = read_all(dir_ + "/calls.log");
  EXPECT_NE(calls.find("logs -n llm-train sft-gemma-worker-1 -c pytorch --timestamps --previous"), std::string::npos) << calls;
  EXPECT_EQ(v.outcome, "application.memory_limit") << v.summary;
  EXPECT_EQ(v.root_node, "gke-a3-pool-9f02") << v.summary;
}

TEST_F(KubectlShim, KueuePreemptedWorkload) {
  auto a = adapter();
  std::vector<blueprint::WorkloadAttempt> attempts;
  std::string err;
  ASSERT_TRUE(a->by_job("pytorchjob-eval-harness-0c9e1", attempts, err)) << err;
  ASSERT_EQ(attempts.size(), 1u);
  const ExecutionContext& c = attempts[0].context;
  EXPECT_EQ(c.state, "Evicted");
  EXPECT_EQ(c.reason, "Preempted");
  EXPECT_EQ(c.attempt, 1);
  EXPECT_EQ(c.exit_code, "143");
  EXPECT_EQ(c.end, rfc3339("2026-07-30T09:55:31Z"));
  EXPECT_EQ(c.start, rfc3339("2026-07-30T08:10:00Z"));  // not admitted any more: the pods' start
  std::vector<ConnectorReport> reports;
  Verdict v = verdict_for(attempts[0], reports);
  EXPECT_EQ(v.outcome, "scheduler.preempted") << v.summary;
  EXPECT_EQ(v.quality, "definitive") << v.summary;
}

TEST_F(KubectlShim, EndedBetweenSelectsByFinishOrEviction) {
  auto a = adapter();
  std::vector<blueprint::WorkloadAttempt> attempts;
  std::string err;
  ASSERT_TRUE(a->ended_between(rfc3339("2026-06-24T00:00:00Z"), rfc3339("2026-06-25T00:00:00Z"), attempts, err)) << err;
  ASSERT_EQ(attempts.size(), 1u);
  EXPECT_EQ(attempts[0].context.id, "pytorchjob-sft-gemma-5b1c2");
  attempts.clear();
  ASSERT_TRUE(a->ended_between(rfc3339("2026-01-01T00:00:00Z"), rfc3339("2026-12-31T00:00:00Z"), attempts, err));
  EXPECT_EQ(attempts.size(), 2u);
  attempts.clear();
  EXPECT_FALSE(a->by_job("no-such-job", attempts, err));
  EXPECT_NE(err.find("no Workload named no-such-job"), std::string::npos) << err;
}

TEST_F(KubectlShim, ApiServerDownAndMissingBinaryAreErrors) {
  setenv("KUBECTL_SHIM_DOWN", "1", 1);
  auto a = adapter();
  std::vector<blueprint::WorkloadAttempt> attempts;
  std::string err;
  EXPECT_FALSE(a->by_job("sft-gemma", attempts, err));
  EXPECT_NE(err.find("The connection to the server localhost:8080 was refused"), std::string::npos) << err;
  ExecutionContext ctx;
  ctx.id = "x";
  ctx.labels = {{"namespace", "llm-train"}, {"pods", "sft-gemma-worker-0"}};
  Session session(source_rules(), ctx);
  SessionSink sink(session);
  ConnectorReport r = logs()->collect({ctx, {}}, sink);
  EXPECT_EQ(r.status, "error");
  EXPECT_NE(r.reason.find("exit 1: The connection to the server"), std::string::npos) << r.reason;
  unsetenv("KUBECTL_SHIM_DOWN");
  std::string e2;
  auto missing = blueprint::collector_registry().at("k8s_logs")(YAML::Load("kubectl: /nonexistent/kubectl"), e2);
  r = missing->collect({ctx, {}}, sink);
  EXPECT_EQ(r.status, "error");
  EXPECT_NE(r.reason.find("cannot run /nonexistent/kubectl"), std::string::npos) << r.reason;
  // No namespace known.
  ExecutionContext bare;
  r = logs()->collect({bare, {}}, sink);
  EXPECT_EQ(r.status, "error");
  EXPECT_NE(r.reason.find("no namespace"), std::string::npos) << r.reason;
}

TEST_F(KubectlShim, SelectorPodStatusAndEvents) {
  ExecutionContext ctx;
  ctx.id = "pytorchjob-sft-gemma-5b1c2";
  ctx.name = "sft-gemma";
  ctx.nodes = {"gke-a3-pool-9f02"};
  ctx.start = rfc3339("2026-06-24T10:00:00Z");
  ctx.end = rfc3339("2026-06-24T11:34:20Z");
  Session session(source_rules(), ctx);
  SessionSink sink(session);
  auto c = logs("namespace: llm-train\nselector: 'training.kubeflow.org/job-name={name}'\nprevious: false\n"
                "pod_status: true\nevents: true\n");
  ConnectorReport r = c->collect({ctx, {}}, sink);
  EXPECT_EQ(r.status, "ok") << r.reason;
  EXPECT_NE(r.reason.find("2 pods, 2 container logs (0 previous)"), std::string::npos) << r.reason;
  bool status_line = false, events = false;
  for (const auto& s : sink.sources) {
    status_line |= s == "pod/llm-train/sft-gemma-worker-1 status";
    events |= s == "events/llm-train";
  }
  EXPECT_TRUE(status_line);
  EXPECT_TRUE(events);
  Verdict v = session.attribute();
  EXPECT_NE(v.json.find("OOMKilled"), std::string::npos);
}

TEST(Process, CapturesOutputExitCodeAndTimeout) {
  auto r = blueprint::run_process({"sh", "-c", "echo out; echo err >&2; exit 3"}, 10, 1 << 20);
  EXPECT_TRUE(r.started);
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_EQ(r.out, "out\n");
  EXPECT_EQ(r.describe("sh"), "sh: exit 3: err");
  auto t = blueprint::run_process({"sleep", "5"}, 1, 1 << 20);
  EXPECT_TRUE(t.timed_out);
  auto big = blueprint::run_process({"sh", "-c", "head -c 100000 /dev/zero"}, 10, 1000);
  EXPECT_TRUE(big.truncated);
  EXPECT_EQ(big.describe("kubectl logs"), "kubectl logs: output too large");
  EXPECT_LE(big.out.size(), 1000u);
}

// kubectl's policy over the shared runner (blueprint/src/process): the last 4 KiB of stderr, its
// last line in describe(), SIGKILL at once on timeout, a missing kubectl named.
TEST(Process, KubectlPolicy) {
  auto noisy = blueprint::run_process(
      {"sh", "-c", "head -c 10000 /dev/zero | tr '\\0' x >&2; echo >&2; echo 'error: the server is down' >&2; exit 1"},
      10, 1 << 20);
  EXPECT_EQ(noisy.exit_code, 1);
  EXPECT_EQ(noisy.err.size(), 4096u);
  EXPECT_EQ(noisy.describe("kubectl get pods"), "kubectl get pods: exit 1: error: the server is down");
  auto stubborn = blueprint::run_process({"sh", "-c", "trap '' TERM; sleep 30"}, 1, 1 << 20);
  EXPECT_TRUE(stubborn.timed_out);
  EXPECT_LT(stubborn.seconds, 2.5);  // no SIGTERM grace for kubectl
  EXPECT_EQ(stubborn.describe("kubectl get workloads"), "kubectl get workloads: timed out");
  auto missing = blueprint::run_process({"attribution-no-such-kubectl"}, 5, 1 << 20);
  EXPECT_FALSE(missing.started);
  EXPECT_EQ(missing.describe("kubectl get pods"),
            "kubectl get pods: cannot run attribution-no-such-kubectl: No such file or directory");
}

}  // namespace
}  // namespace attribution::testing
