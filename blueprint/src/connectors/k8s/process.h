// How the kubectl-based connectors (k8s pod logs, Kueue adapter) run kubectl: through the
// blueprint's process runner (process/process_runner.h, which states the full contract: no shell,
// stdin /dev/null, its own process group, never hangs), with kubectl's policy on top: stdout
// captured whole up to `max_stdout` bytes (more: killed, `truncated`), the last 4 KiB of stderr
// kept for the report, SIGKILL at once on timeout (kubectl has nothing to flush), and the
// inherited environment unchanged.
//
// Thread-safety: reentrant.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "process/process_runner.h"

namespace attribution::blueprint {

struct ProcessResult : process::Result {
  // From process::Result: started, exit_code (-1 when killed, ended by a signal or not started),
  // timed_out, truncated, error (why it could not run: "cannot run kubectl: No such file or
  // directory").
  std::string out;
  std::string err;  // last 4 KiB of stderr
  // "kubectl get pods: exit 1: <last line of stderr>" style summary for reports.
  std::string describe(const std::string& what) const;
};

ProcessResult run_process(const std::vector<std::string>& argv, int timeout_s, uint64_t max_stdout);

}  // namespace attribution::blueprint
