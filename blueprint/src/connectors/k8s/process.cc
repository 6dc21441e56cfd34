#include "connectors/k8s/process.h"

#include <fmt/format.h>

namespace attribution::blueprint {

std::string ProcessResult::describe(const std::string& what) const {
  if (!started) return fmt::format("{}: {}", what, error);
  if (timed_out) return fmt::format("{}: timed out", what);
  if (truncated) return fmt::format("{}: output too large", what);
  std::string tail = err;
  while (!tail.empty() && (tail.back() == '\n' || tail.back() == '\r')) tail.pop_back();
  size_t nl = tail.rfind('\n');
  if (nl != std::string::npos) tail = tail.substr(nl + 1);
  return fmt::format("{}: exit {}{}{}", what, exit_code, tail.empty() ? "" : ": ", tail);
}

ProcessResult run_process(const std::vector<std::string>& argv, int timeout_s,
                          uint64_t max_stdout) {
  process::Request request;
  request.argv = argv;
  request.limits.timeout_s = timeout_s;
  request.limits.max_stdout_bytes = max_stdout;
  request.limits.max_stderr_bytes = 8192;  // stderr_tail: the last 4 KiB
  request.limits.kill_grace_ms = 0;
  ProcessResult r;
  static_cast<process::Result&>(r) = process::run_capture(request, r.out);
  r.err = r.stderr_tail;
  return r;
}

}  // namespace attribution::blueprint
