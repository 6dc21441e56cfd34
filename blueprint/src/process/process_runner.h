// The one way the blueprint runs an external command (kubectl for the k8s connectors, a site's
// own command for the exec connectors): spawn without a shell, read stdout and stderr with a
// deadline, kill on timeout or on too much output, report how it ended. Only the blueprint runs
// commands (the service never does), so this lives in the blueprint, not in edge/.
//
// Contract of run() / run_lines() / run_capture():
//   argv     argv[0] is looked up in PATH (posix_spawnp); no shell is involved unless argv asks
//            for one ({"/bin/sh", "-c", ...}). Empty argv or empty argv[0]: not started,
//            error "empty command".
//   env      the caller's environment at the time of the call, with `env` added to it (a name in
//            `env` replaces the inherited value). Read from `environ`: do not setenv()
//            concurrently.
//   cwd      the command's working directory when not empty.
//   stdin    /dev/null. stdout and stderr are pipes; no other descriptor of ours leaks into the
//            child (all are opened close-on-exec here).
//   process  its own process group with default signal dispositions and an empty signal mask,
//            so a kill reaches the command's children too and the caller's masks do not leak.
//   timeout  limits.timeout_s bounds the whole run, from spawn until the command has exited (also
//            a command that closes its stdout and stderr but keeps running). Then, and when
//            stdout passes limits.max_stdout_bytes, the group gets SIGTERM, and SIGKILL
//            limits.kill_grace_ms later (0: SIGKILL at once); the group is SIGKILLed in any case
//            once the command has ended, so no child of it outlives the call.
//   stdout   handed to the caller as it arrives, in chunks (run), in lines (run_lines: without
//            the newline or a trailing '\r', 1-based numbers, a line longer than
//            limits.max_line_bytes cut there and counted in long_lines, the last line counted
//            even without a newline unless the run was killed), or appended to a string
//            (run_capture). The chunk that would pass max_stdout_bytes is not delivered; memory
//            stays bounded by one 64 KiB buffer (plus the longest line for run_lines, the
//            output for run_capture).
//   stderr   kept bounded: the first and the last limits.max_stderr_bytes / 2 bytes, with
//            "…[N bytes skipped]…" between when cut (stderr_text), and the last half alone
//            (stderr_tail). Read concurrently with stdout, so neither pipe can fill and deadlock.
//   returns  Result. Exec failure (missing binary, not executable, bad cwd): started == false and
//            error "cannot run <argv[0]>: <reason>" (" (in <cwd>)" when cwd was given). Exited:
//            exit_code. Ended by a signal not ours: signal, exit_code -1. Timed out / output
//            over the limit: timed_out / truncated, exit_code -1, signal 0. A started command
//            that exits 127 with no output at all (a shell that did not find it) also gets error
//            "<argv[0]>: not found". failure() says all of this in one phrase for reports.
//   hangs    never: every wait is bounded by the timeout plus kill_grace_ms (a process stuck in
//            uninterruptible kernel sleep, which SIGKILL cannot end, is the only exception).
//
// Thread-safety: reentrant; each call owns its child, pipes and buffers, so calls may run
// concurrently from any number of threads. The callbacks run on the calling thread.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace attribution::blueprint::process {

struct Limits {
  int timeout_s = 60;                      // whole run
  uint64_t max_stdout_bytes = 1ull << 30;  // more: the group is killed, `truncated` set
  uint64_t max_line_bytes = 16ull << 20;   // run_lines: a longer stdout line is cut there
  size_t max_stderr_bytes = 8192;          // stderr kept: first half and last half of this
  int kill_grace_ms = 2000;                // between SIGTERM and SIGKILL to the group
};

struct Request {
  std::vector<std::string> argv;
  std::map<std::string, std::string> env;  // added to (and overriding) the inherited environment
  std::string cwd;                         // empty: ours
  Limits limits;
};

struct Result {
  bool started = false;
  int exit_code = -1;  // exit status when it exited by itself
  int signal = 0;      // the signal that ended it (not counting our own kill)
  bool timed_out = false;
  bool truncated = false;     // stdout passed max_stdout_bytes
  uint64_t stdout_bytes = 0;  // read from stdout, including the chunk that passed the limit
  uint64_t long_lines = 0;    // run_lines: lines cut at max_line_bytes
  std::string stderr_text;    // bounded; "…[N bytes skipped]…" in the middle when cut
  std::string stderr_tail;    // the last max_stderr_bytes / 2 bytes of stderr
  std::string error;   // why it could not start ("cannot run bjobs: No such file or directory")
  int timeout_s = 0;   // the limit it ran under (for failure())
  double seconds = 0;  // wall time of the call
  // "exit 2", "killed by signal 9 (Killed)", "timed out after 5 s (process group killed)",
  // "output over the limit after N bytes (process group killed)", `error` when not started,
  // or "" (exit 0).
  std::string failure() const;
};

using ChunkCallback = std::function<void(std::string_view chunk)>;
using LineCallback = std::function<void(std::string_view line, uint64_t number)>;

Result run(const Request& request, const ChunkCallback& on_stdout);
Result run_lines(const Request& request, const LineCallback& on_line);
Result run_capture(const Request& request, std::string& stdout_text);

// The command as one readable string for reports: args joined with spaces, shell-quoted when
// needed.
std::string describe_command(const std::vector<std::string>& argv);

}  // namespace attribution::blueprint::process
