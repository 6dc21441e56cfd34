// The blueprint's process runner (blueprint/src/process/process_runner.h) against real commands:
// timeouts and the group kill, output caps without deadlock, exits, signals, exec failures,
// stderr bounds, environment, cwd, stdin, line splitting, concurrent calls.
#include "process/process_runner.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

namespace attribution::blueprint::process {
namespace {

Request command(std::vector<std::string> argv, int timeout_s = 10) {
  Request r;
  r.argv = std::move(argv);
  r.limits.timeout_s = timeout_s;
  return r;
}

Request shell(const std::string& script, int timeout_s = 10) {
  return command({"/bin/sh", "-c", script}, timeout_s);
}

// True once `pid` no longer runs (gone, or a zombie nobody has reaped yet), polled for up to 3 s.
bool process_ended(pid_t pid) {
  for (int i = 0; i < 150; ++i) {
    if (kill(pid, 0) != 0) return true;
    std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
    std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
    auto close_paren = text.rfind(')');
    if (close_paren != std::string::npos && close_paren + 2 < text.size() &&
        text[close_paren + 2] == 'Z')
      return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return false;
}

TEST(ProcessRunner, CapturesStdoutStderrAndExitCode) {
  std::string out;
  Result r = run_capture(shell("echo out; echo err >&2; exit 3"), out);
  EXPECT_TRUE(r.started);
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_EQ(r.signal, 0);
  EXPECT_FALSE(r.timed_out);
  EXPECT_FALSE(r.truncated);
  EXPECT_EQ(out, "out\n");
  EXPECT_EQ(r.stdout_bytes, 4u);
  EXPECT_EQ(r.stderr_text, "err\n");
  EXPECT_EQ(r.stderr_tail, "err\n");
  EXPECT_EQ(r.failure(), "exit 3");
  EXPECT_TRUE(r.error.empty()) << r.error;
}

TEST(ProcessRunner, ZeroExitIsNoFailure) {
  std::string out;
  Result r = run_capture(command({"printf", "%s", "a b"}), out);
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(out, "a b");
  EXPECT_EQ(r.failure(), "");
}

TEST(ProcessRunner, TimeoutKillsSleepAndItsGroup) {
  // The shell prints its background child's pid, then waits for it: the timeout has to kill
  // both (the whole group), within the timeout plus the grace period.
  Request request = shell("sleep 30 & echo $!; wait", 1);
  request.limits.kill_grace_ms = 2000;
  std::string out;
  Result r = run_capture(request, out);
  EXPECT_TRUE(r.started);
  EXPECT_TRUE(r.timed_out);
  EXPECT_EQ(r.exit_code, -1);
  EXPECT_EQ(r.signal, 0);
  EXPECT_EQ(r.failure(), "timed out after 1 s (process group killed)");
  EXPECT_GE(r.seconds, 0.9);
  EXPECT_LT(r.seconds, 5.0);
  ASSERT_FALSE(out.empty());
  pid_t child = static_cast<pid_t>(std::stol(out));
  EXPECT_TRUE(process_ended(child))
      << "the background sleep (pid " << child << ") outlived the run";
}

TEST(ProcessRunner, TimeoutOfAPlainSleep) {
  Result r = run(command({"sleep", "30"}, 1), [](std::string_view) {});
  EXPECT_TRUE(r.timed_out);
  EXPECT_LT(r.seconds, 4.0);  // SIGTERM ends sleep at once; no wait for the 2 s grace
}

TEST(ProcessRunner, SigtermIgnoredThenSigkillAfterGrace) {
  Request request = shell("trap '' TERM; sleep 30", 1);
  request.limits.kill_grace_ms = 300;
  Result r = run(request, [](std::string_view) {});
  EXPECT_TRUE(r.timed_out);
  EXPECT_GE(r.seconds, 1.2);  // the timeout, then the grace period, then SIGKILL
  EXPECT_LT(r.seconds, 4.0);
}

TEST(ProcessRunner, ZeroGraceKillsAtOnce) {
  Request request = shell("trap '' TERM; sleep 30", 1);
  request.limits.kill_grace_ms = 0;
  Result r = run(request, [](std::string_view) {});
  EXPECT_TRUE(r.timed_out);
  EXPECT_LT(r.seconds, 2.0);
}

TEST(ProcessRunner, CommandThatClosesItsPipesAndKeepsRunningStillTimesOut) {
  // Both pipes reach end of file at once; the wait for the command itself must keep the deadline.
  Result r = run(shell("exec >/dev/null 2>&1; sleep 30", 1), [](std::string_view) {});
  EXPECT_TRUE(r.timed_out);
  EXPECT_LT(r.seconds, 4.0);
}

TEST(ProcessRunner, LargeStdoutCappedWithoutDeadlock) {
  Request request = command({"head", "-c", "50000000", "/dev/zero"}, 20);
  request.limits.max_stdout_bytes = 1 << 20;
  uint64_t delivered = 0;
  Result r = run(request, [&](std::string_view chunk) { delivered += chunk.size(); });
  EXPECT_TRUE(r.truncated);
  EXPECT_FALSE(r.timed_out);
  EXPECT_EQ(r.exit_code, -1);
  EXPECT_LE(delivered, 1u << 20);
  EXPECT_GT(r.stdout_bytes, 1u << 20);
  EXPECT_EQ(r.failure(), "output over the limit after " + std::to_string(r.stdout_bytes) +
                             " bytes (process group killed)");
  EXPECT_LT(r.seconds, 10.0);
}

TEST(ProcessRunner, LargeStderrAndStdoutTogetherDoNotDeadlock) {
  // 5 MB to stderr before any stdout: the runner must drain stderr while the command writes it
  // (a pipe holds 64 KiB), then take all of stdout.
  Request request = shell(
      "head -c 5000000 /dev/zero | tr '\\0' e >&2; head -c 5000000 /dev/zero | tr '\\0' o", 20);
  request.limits.max_stderr_bytes = 1000;
  std::string out;
  Result r = run_capture(request, out);
  EXPECT_EQ(r.exit_code, 0) << r.failure();
  EXPECT_EQ(out.size(), 5000000u);
  EXPECT_EQ(out.find_first_not_of('o'), std::string::npos);
  EXPECT_EQ(r.stderr_text,
            std::string(500, 'e') + "…[4999000 bytes skipped]…" + std::string(500, 'e'));
  EXPECT_EQ(r.stderr_tail, std::string(500, 'e'));
}

TEST(ProcessRunner, StderrKeepsFirstAndLastHalf) {
  Request request = shell(
      "{ echo first line; i=0; while [ $i -lt 50 ]; do echo middle $i; i=$((i+1)); done; echo the "
      "last line; } >&2; "
      "exit 1");
  request.limits.max_stderr_bytes = 64;
  Result r = run(request, [](std::string_view) {});
  EXPECT_EQ(r.exit_code, 1);
  ASSERT_NE(r.stderr_text.find("bytes skipped]…"), std::string::npos) << r.stderr_text;
  EXPECT_EQ(r.stderr_text.rfind("first line\n", 0), 0u) << r.stderr_text;
  EXPECT_EQ(r.stderr_tail.size(), 32u);
  EXPECT_EQ(r.stderr_tail.substr(r.stderr_tail.size() - 14), "the last line\n");
  EXPECT_EQ(r.stderr_text.substr(r.stderr_text.size() - 32), r.stderr_tail);
}

TEST(ProcessRunner, ShortStderrTailIsAllOfIt) {
  Request request = shell("printf 'abcdefghij' >&2");
  request.limits.max_stderr_bytes = 16;  // halves of 8: all 10 bytes kept, the tail is the last 8
  Result r = run(request, [](std::string_view) {});
  EXPECT_EQ(r.stderr_text, "abcdefghij");
  EXPECT_EQ(r.stderr_tail, "cdefghij");
}

TEST(ProcessRunner, MissingBinaryIsNamed) {
  Result r = run(command({"attribution-no-such-binary-7f3a"}), [](std::string_view) {});
  EXPECT_FALSE(r.started);
  EXPECT_EQ(r.error, "cannot run attribution-no-such-binary-7f3a: No such file or directory");
  EXPECT_EQ(r.failure(), r.error);
  EXPECT_EQ(r.exit_code, -1);

  Result absolute = run(command({"/nonexistent/dir/tool", "--flag"}), [](std::string_view) {});
  EXPECT_FALSE(absolute.started);
  EXPECT_NE(absolute.error.find("/nonexistent/dir/tool"), std::string::npos) << absolute.error;
}

TEST(ProcessRunner, NotExecutableAndMissingCwdAreNamed) {
  std::string plain_file = ::testing::TempDir() + "process_runner_not_executable";
  std::ofstream(plain_file) << "not a program\n";
  ASSERT_EQ(chmod(plain_file.c_str(), 0644), 0);
  Result not_exec = run(command({plain_file}), [](std::string_view) {});
  EXPECT_FALSE(not_exec.started);
  EXPECT_EQ(not_exec.error, "cannot run " + plain_file + ": Permission denied");
  std::remove(plain_file.c_str());

  Request in_missing_dir = command({"true"});
  in_missing_dir.cwd = "/nonexistent/workdir";
  Result r = run(in_missing_dir, [](std::string_view) {});
  EXPECT_FALSE(r.started);
  EXPECT_EQ(r.error, "cannot run true: No such file or directory (in /nonexistent/workdir)");
}

TEST(ProcessRunner, ShellThatDoesNotFindTheCommand) {
  // `sh -c` starts, then exits 127 with its own message on stderr: an exit, with that stderr.
  Result r = run(shell("attribution-no-such-binary-7f3a"), [](std::string_view) {});
  EXPECT_TRUE(r.started);
  EXPECT_EQ(r.exit_code, 127);
  EXPECT_NE(r.stderr_text.find("attribution-no-such-binary-7f3a"), std::string::npos)
      << r.stderr_text;
  // Silent 127: named "not found".
  Result silent = run(shell("exit 127"), [](std::string_view) {});
  EXPECT_EQ(silent.exit_code, 127);
  EXPECT_EQ(silent.error, "/bin/sh: not found");
}

TEST(ProcessRunner, EmptyCommand) {
  Result r = run(command({}), [](std::string_view) {});
  EXPECT_FALSE(r.started);
  EXPECT_EQ(r.error, "empty command");
  Result blank = run(command({""}), [](std::string_view) {});
  EXPECT_EQ(blank.error, "empty command");
}

TEST(ProcessRunner, EndedBySignal) {
  Result r = run(shell("kill -KILL $$"), [](std::string_view) {});
  EXPECT_TRUE(r.started);
  EXPECT_FALSE(r.timed_out);
  EXPECT_EQ(r.signal, SIGKILL);
  EXPECT_EQ(r.exit_code, -1);
  EXPECT_EQ(r.failure(), "killed by signal 9 (Killed)");
}

TEST(ProcessRunner, EnvironmentAddsAndOverrides) {
  ASSERT_EQ(setenv("ATTRIBUTION_RUNNER_TEST_INHERITED", "from-parent", 1), 0);
  ASSERT_EQ(setenv("ATTRIBUTION_RUNNER_TEST_OVERRIDDEN", "parent-value", 1), 0);
  Request request = shell(
      "echo \"$ATTRIBUTION_RUNNER_TEST_INHERITED $ATTRIBUTION_RUNNER_TEST_OVERRIDDEN "
      "$ATTRIBUTION_RUNNER_TEST_ADDED\"; "
      "env | grep -c '^ATTRIBUTION_RUNNER_TEST_OVERRIDDEN='");
  request.env = {{"ATTRIBUTION_RUNNER_TEST_OVERRIDDEN", "child value"},
                 {"ATTRIBUTION_RUNNER_TEST_ADDED", "x=1"}};
  std::string out;
  Result r = run_capture(request, out);
  EXPECT_EQ(r.exit_code, 0) << r.stderr_text;
  EXPECT_EQ(out, "from-parent child value x=1\n1\n");  // replaced, not listed twice
  unsetenv("ATTRIBUTION_RUNNER_TEST_INHERITED");
  unsetenv("ATTRIBUTION_RUNNER_TEST_OVERRIDDEN");
}

TEST(ProcessRunner, CwdAndStdinFromDevNull) {
  Request request = command({"pwd"});
  request.cwd = "/tmp";
  std::string out;
  EXPECT_EQ(run_capture(request, out).exit_code, 0);
  EXPECT_EQ(out, "/tmp\n");
  // `cat` reads stdin: /dev/null ends it at once (a terminal or an inherited pipe would hang it).
  std::string cat_out;
  Result cat = run_capture(command({"cat"}, 5), cat_out);
  EXPECT_EQ(cat.exit_code, 0);
  EXPECT_FALSE(cat.timed_out);
  EXPECT_EQ(cat_out, "");
}

TEST(ProcessRunner, OwnProcessGroup) {
  std::string out;
  Result r = run_capture(shell("ps -o pgid= -p $$; echo $$"), out);
  ASSERT_EQ(r.exit_code, 0) << r.stderr_text;
  auto nl = out.find('\n');
  ASSERT_NE(nl, std::string::npos);
  EXPECT_EQ(std::stol(out.substr(0, nl)),
            std::stol(out.substr(nl + 1)));  // the leader of its group
  EXPECT_NE(std::stol(out.substr(0, nl)), static_cast<long>(getpgrp()));
}

TEST(ProcessRunner, LinesAreNumberedCutAndTheLastCountsWithoutNewline) {
  Request request = shell("printf 'one\\r\\ntwo\\n\\n0123456789abcdef\\nlast'");
  request.limits.max_line_bytes = 10;
  std::vector<std::pair<std::string, uint64_t>> lines;
  Result r =
      run_lines(request, [&](std::string_view line, uint64_t n) { lines.emplace_back(line, n); });
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.long_lines, 1u);
  std::vector<std::pair<std::string, uint64_t>> want = {
      {"one", 1}, {"two", 2}, {"", 3}, {"0123456789", 4}, {"last", 5}};
  EXPECT_EQ(lines, want);
}

TEST(ProcessRunner, LinesSpanningReadChunks) {
  // 3000 lines of 100 bytes: lines cross the 64 KiB read boundaries and arrive whole.
  Request request = shell("i=0; while [ $i -lt 3000 ]; do printf '%099d\\n' $i; i=$((i+1)); done");
  uint64_t count = 0;
  bool all_whole = true;
  Result r = run_lines(request, [&](std::string_view line, uint64_t n) {
    all_whole &= line.size() == 99 && std::stoul(std::string(line)) == n - 1;
    count = n;
  });
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(count, 3000u);
  EXPECT_TRUE(all_whole);
  EXPECT_EQ(r.stdout_bytes, 300000u);
}

TEST(ProcessRunner, KilledRunDropsThePartialLastLine) {
  std::vector<std::string> lines;
  Result r = run_lines(shell("echo done; printf partial; sleep 30", 1),
                       [&](std::string_view line, uint64_t) { lines.emplace_back(line); });
  EXPECT_TRUE(r.timed_out);
  EXPECT_EQ(lines, std::vector<std::string>{"done"});
}

TEST(ProcessRunner, ConcurrentCallsKeepTheirOwnOutput) {
  // One call runs 2 s; the others must not wait for it (no pipe of theirs leaks into it).
  std::vector<std::thread> threads;
  std::vector<std::string> outs(6);
  std::vector<Result> results(6);
  for (int i = 0; i < 6; ++i) {
    threads.emplace_back([&, i] {
      Request request =
          i == 0 ? shell("sleep 2; echo slow") : command({"echo", "call", std::to_string(i)});
      results[i] = run_capture(request, outs[i]);
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(outs[0], "slow\n");
  for (int i = 1; i < 6; ++i) {
    EXPECT_EQ(outs[i], "call " + std::to_string(i) + "\n");
    EXPECT_EQ(results[i].exit_code, 0);
    EXPECT_LT(results[i].seconds, 1.5) << "call " << i << " waited for another call's child";
  }
}

TEST(ProcessRunner, DescribeCommandQuotesWhatAShellWouldSplit) {
  EXPECT_EQ(describe_command({"bjobs", "-o", "jobid stat", "it's", ""}),
            "bjobs -o 'jobid stat' 'it'\\''s' ''");
  EXPECT_EQ(describe_command({"/bin/sh", "-c", "echo $X"}), "/bin/sh -c 'echo $X'");
}

}  // namespace
}  // namespace attribution::blueprint::process
