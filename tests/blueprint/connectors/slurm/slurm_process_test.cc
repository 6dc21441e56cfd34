// How the Slurm adapter (blueprint/src/connectors/slurm/) runs sacct and scontrol: through the
// blueprint's process runner, with shim scripts named sacct/scontrol on PATH standing in for a
// Slurm that hangs, is missing or prints without end (the real Slurm is exercised by
// tests/integration/slurm.sh). Each test takes at most a few seconds (timeouts of 1 s).
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "../connector_test_util.h"
#include "connectors/connector.h"

namespace attribution::blueprint {
namespace {

namespace fs = std::filesystem;
using attribution::testing::temp_dir;
using attribution::testing::write_file;

// One FAILED job that ran on gpu-1 and gpu-2, with its output file named on the SubmitLine.
std::string job_row(const std::string& id, const std::string& workdir) {
  return id + "|" + id + "|train|gpu|acct|ana|8|FAILED|1:0|0:0|NonZeroExitCode|gpu-[1-2]|2|1700000000|1700000000|" +
         "1700000300|00:05:00|01:00:00|c1|" + workdir + "||sbatch -o job-%j.out t.sh\n";
}

// A directory of shims put first on PATH for the test's lifetime (the adapter runs "sacct" and
// "scontrol" by name, as on a login node). Single-threaded tests: PATH is set before any run.
class SlurmShims : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = temp_dir("slurm-shims");
    ASSERT_FALSE(dir_.empty());
    const char* path = std::getenv("PATH");
    saved_path_ = path ? path : "";
    setenv("PATH", (dir_ + ":" + saved_path_).c_str(), 1);
  }
  void TearDown() override {
    setenv("PATH", saved_path_.c_str(), 1);
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  void shim(const std::string& name, const std::string& body) {
    write_file(dir_ + "/" + name, "#!/bin/sh\n" + body);
    chmod((dir_ + "/" + name).c_str(), 0755);
  }
  std::string read(const std::string& name) const {
    std::ifstream f(dir_ + "/" + name);
    std::stringstream s;
    s << f.rdbuf();
    return s.str();
  }
  std::unique_ptr<Adapter> adapter(YAML::Node config = YAML::Node()) {
    config["timeout"] = 1;
    config["scratch_dir"] = dir_;
    std::string error;
    auto a = adapter_registry().at("slurm")(config, error);
    EXPECT_TRUE(a) << error;
    return a;
  }
  // True while the process exists and is not a zombie (a reparented child nobody reaped yet).
  static bool running(pid_t pid) {
    std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
    std::string line;
    if (!std::getline(stat, line)) return false;
    auto paren = line.rfind(')');
    return paren != std::string::npos && paren + 2 < line.size() && line[paren + 2] != 'Z';
  }
  static double seconds_since(std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }

  std::string dir_, saved_path_;
};

TEST_F(SlurmShims, HungSacctIsKilledAtTheTimeoutWithItsChildrenAndTheErrorNamesIt) {
  // The shim's own child (the sleep) holds stdout open: only a kill of the whole group ends it.
  shim("sacct", "echo 'sacct: waiting for slurmdbd' >&2\nsleep 30 &\necho $! > " + dir_ + "/sleep.pid\nwait\n");
  auto a = adapter();
  ASSERT_TRUE(a);
  std::vector<WorkloadAttempt> attempts;
  std::string error;
  auto t0 = std::chrono::steady_clock::now();
  EXPECT_FALSE(a->by_job("77", attempts, error));
  double took = seconds_since(t0);
  EXPECT_LT(took, 5.0);
  EXPECT_GE(took, 0.9);
  EXPECT_NE(error.find("sacct failed: `SLURM_TIME_FORMAT=%s sacct --parsable2 --noheader --duplicates -o JobID,"),
            std::string::npos)
      << error;
  EXPECT_NE(error.find(",SubmitLine -a -j 77`: timed out after 1 s (process group killed)"), std::string::npos) << error;
  EXPECT_NE(error.find("stderr: sacct: waiting for slurmdbd"), std::string::npos) << error;
  pid_t sleeper = std::atoi(read("sleep.pid").c_str());
  ASSERT_GT(sleeper, 0);
  for (int i = 0; i < 50 && running(sleeper); ++i) usleep(20000);
  EXPECT_FALSE(running(sleeper)) << "the hung sacct's child " << sleeper << " outlived the timeout";
  EXPECT_TRUE(attempts.empty());
}

TEST_F(SlurmShims, SacctAndScontrolGetTheSlurmEnvironmentWhileOursStaysUnchanged) {
  unsetenv("SLURM_CONF");
  shim("sacct", "echo \"sacct $SLURM_TIME_FORMAT $SLURM_CONF\" >> " + dir_ + "/env\ncat <<'EOF'\n" +
                    job_row("55", dir_) + "EOF\n");
  shim("scontrol", "echo \"scontrol $SLURM_TIME_FORMAT $SLURM_CONF $*\" >> " + dir_ +
                       "/env\necho 'JobId=55 JobName=train StdOut=/logs/55 out.txt StdErr=/logs/55.err WorkDir=/w'\n");
  YAML::Node config;
  config["slurm_conf"] = "/etc/slurm-b/slurm.conf";
  auto a = adapter(config);
  ASSERT_TRUE(a);
  std::vector<WorkloadAttempt> attempts;
  std::string error;
  ASSERT_TRUE(a->by_job("55", attempts, error)) << error;
  EXPECT_EQ(read("env"), "sacct %s /etc/slurm-b/slurm.conf\nscontrol %s /etc/slurm-b/slurm.conf show job -o 55\n");
  EXPECT_EQ(std::getenv("SLURM_CONF"), nullptr);
  EXPECT_EQ(std::getenv("SLURM_TIME_FORMAT"), nullptr);
  ASSERT_EQ(attempts.size(), 1u);
  EXPECT_TRUE(attempts[0].reports.empty());
  std::vector<std::string> paths;
  for (const auto& [path, source] : attempts[0].evidence_files) paths.push_back(path);
  EXPECT_EQ(paths.size(), 3u);
  EXPECT_EQ(paths.at(1), "/logs/55 out.txt");  // scontrol's StdOut, spaces and all
  EXPECT_EQ(paths.at(2), "/logs/55.err");
}

TEST_F(SlurmShims, HungScontrolIsAskedOncePerQueryAndEveryAttemptSaysSo) {
  shim("sacct", "cat <<'EOF'\n" + job_row("55", dir_) + job_row("56", dir_) + "EOF\n");
  shim("scontrol", "echo \"$*\" >> " + dir_ + "/scontrol.calls\nexec sleep 30\n");
  auto a = adapter();
  ASSERT_TRUE(a);
  std::vector<WorkloadAttempt> attempts;
  std::string error;
  auto t0 = std::chrono::steady_clock::now();
  ASSERT_TRUE(a->ended_between(1700000200LL * 1'000'000'000LL, 1700000400LL * 1'000'000'000LL, attempts, error))
      << error;
  EXPECT_LT(seconds_since(t0), 1.9);  // one timeout, not one per job
  EXPECT_EQ(read("scontrol.calls"), "show job -o 55\n");
  ASSERT_EQ(attempts.size(), 2u);
  for (const auto& attempt : attempts) {
    ASSERT_EQ(attempt.reports.size(), 1u) << attempt.context.id;
    EXPECT_EQ(attempt.reports[0].connector, "slurm:scontrol");
    EXPECT_EQ(attempt.reports[0].status, "error");
    EXPECT_EQ(attempt.reports[0].reason,
              "`SLURM_TIME_FORMAT=%s scontrol show job -o 55`: timed out after 1 s (process group killed); "
              "StdOut/StdErr taken from the SubmitLine or slurm-%j.out");
    ASSERT_EQ(attempt.evidence_files.size(), 2u);
    EXPECT_EQ(attempt.evidence_files[1].first, dir_ + "/job-" + attempt.context.id + ".out");
  }
  // The next query asks scontrol again (a controller that was down may be back).
  attempts.clear();
  ASSERT_TRUE(a->by_job("56", attempts, error)) << error;
  EXPECT_EQ(read("scontrol.calls"), "show job -o 55\nshow job -o 55\n");  // sacct -j 56 returns both rows here
}

TEST_F(SlurmShims, ScontrolThatForgotTheJobIsNoErrorButEndlessOutputIsCut) {
  shim("sacct", "cat <<'EOF'\n" + job_row("55", dir_) + "EOF\n");
  shim("scontrol", "echo 'slurm_load_jobs error: Invalid job id specified' >&2\nexit 1\n");
  auto a = adapter();
  ASSERT_TRUE(a);
  std::vector<WorkloadAttempt> attempts;
  std::string error;
  ASSERT_TRUE(a->by_job("55", attempts, error)) << error;
  ASSERT_EQ(attempts.size(), 1u);
  EXPECT_TRUE(attempts[0].reports.empty());
  EXPECT_EQ(attempts[0].evidence_files.at(1).first, dir_ + "/job-55.out");

  shim("scontrol", "exec yes 'JobId=55 StdOut=/never/read'\n");
  attempts.clear();
  auto t0 = std::chrono::steady_clock::now();
  ASSERT_TRUE(a->by_job("55", attempts, error)) << error;
  EXPECT_LT(seconds_since(t0), 0.9);  // cut at 1 MiB, long before the 1 s timeout
  ASSERT_EQ(attempts.size(), 1u);
  ASSERT_EQ(attempts[0].reports.size(), 1u);
  EXPECT_NE(attempts[0].reports[0].reason.find("`SLURM_TIME_FORMAT=%s scontrol show job -o 55`: output over the limit"),
            std::string::npos)
      << attempts[0].reports[0].reason;
  EXPECT_EQ(attempts[0].evidence_files.at(1).first, dir_ + "/job-55.out");
}

TEST_F(SlurmShims, MissingCommandsAreNamed) {
  YAML::Node config;
  config["sacct"] = dir_ + "/no-such-sacct";
  auto a = adapter(config);
  ASSERT_TRUE(a);
  std::vector<WorkloadAttempt> attempts;
  std::string error;
  EXPECT_FALSE(a->by_job("55", attempts, error));
  EXPECT_NE(error.find("cannot run " + dir_ + "/no-such-sacct: No such file or directory"), std::string::npos) << error;

  shim("sacct", "cat <<'EOF'\n" + job_row("55", dir_) + "EOF\n");
  config = YAML::Node();
  config["scontrol"] = "no-such-scontrol";
  a = adapter(config);
  ASSERT_TRUE(a);
  ASSERT_TRUE(a->by_job("55", attempts, error)) << error;
  ASSERT_EQ(attempts.size(), 1u);
  ASSERT_EQ(attempts[0].reports.size(), 1u);
  EXPECT_NE(attempts[0].reports[0].reason.find("cannot run no-such-scontrol: No such file or directory"),
            std::string::npos)
      << attempts[0].reports[0].reason;
}

TEST_F(SlurmShims, SacctFailureNamesTheCommandItsExitAndItsStderr) {
  shim("sacct", "echo 'sacct: error: Problem talking to the database' >&2\necho 'second line' >&2\nexit 1\n");
  auto a = adapter();
  ASSERT_TRUE(a);
  std::vector<WorkloadAttempt> attempts;
  std::string error;
  EXPECT_FALSE(a->by_job("9", attempts, error));
  EXPECT_NE(error.find("-a -j 9`: exit 1; stderr: sacct: error: Problem talking to the database | second line"),
            std::string::npos)
      << error;
}

}  // namespace
}  // namespace attribution::blueprint
