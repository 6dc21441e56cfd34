// Runs a user's command for the exec connectors: no shell unless the command asks for one, its
// own process group (a timeout kills the group, so a script's children die with it), extra
// environment variables, stdout handed over line by line as it arrives (memory bounded by the
// longest line, not by the output), stderr kept bounded (first and last bytes) for the report.
//
// Thread-safety: reentrant; each call owns its child.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace attribution::blueprint {

struct ExecLimits {
  int timeout_s = 60;                    // whole run; then SIGTERM to the group, 2 s later SIGKILL
  uint64_t max_stdout_bytes = 1ull << 30;  // more: the group is killed, `truncated` set
  uint64_t max_line_bytes = 16ull << 20;   // a longer stdout line is cut there (and counted)
  size_t max_stderr_bytes = 8192;        // stderr kept: first half and last half of this
};

struct ExecResult {
  bool started = false;
  int exit_code = -1;   // exit status when it exited
  int signal = 0;       // the signal that ended it (not counting our own kill)
  bool timed_out = false;
  bool truncated = false;  // stdout exceeded max_stdout_bytes
  uint64_t stdout_bytes = 0;
  uint64_t long_lines = 0;  // lines cut at max_line_bytes
  std::string stderr_text;  // bounded; "…[N bytes skipped]…" in the middle when cut
  std::string error;        // why it could not start ("cannot run bjobs: No such file or directory")
  double seconds = 0;
  // "exit 2", "killed by signal 9", "timed out after 5 s", "output over 1073741824 bytes", or "" (exit 0).
  std::string failure(int timeout_s) const;
};

// Runs argv[0] (looked up in PATH) with `env` added to (and overriding) the environment, in
// `cwd` when not empty, stdin from /dev/null. `on_line` gets each stdout line without its
// newline and its 1-based number; the last line counts even without a newline.
ExecResult run_exec(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env,
                    const std::string& cwd, const ExecLimits& limits,
                    const std::function<void(std::string_view line, uint64_t number)>& on_line);

// The command as one readable string for reports: args joined with spaces, quoted when needed.
std::string describe_command(const std::vector<std::string>& argv);

}  // namespace attribution::blueprint
