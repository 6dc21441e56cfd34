// Runs a command (no shell) and captures its stdout (bounded) and the tail of its stderr, with a
// timeout. Used by the kubectl-based connectors (k8s pod logs, Kueue adapter).
//
// Thread-safety: reentrant.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace attribution::blueprint {

struct ProcessResult {
  bool started = false;
  int exit_code = -1;        // -1 when killed or not started
  bool timed_out = false;
  bool truncated = false;    // stdout exceeded max_stdout (the process was killed)
  std::string out;
  std::string err;           // last 4 KiB of stderr
  std::string error;         // why it could not run ("kubectl: not found")
  // "kubectl get pods: exit 1: <stderr tail>" style summary for reports.
  std::string describe(const std::string& what) const;
};

ProcessResult run_process(const std::vector<std::string>& argv, int timeout_s, uint64_t max_stdout);

}  // namespace attribution::blueprint
