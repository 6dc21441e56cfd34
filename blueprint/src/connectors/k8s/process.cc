#include "connectors/k8s/process.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

extern char** environ;

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

ProcessResult run_process(const std::vector<std::string>& argv, int timeout_s, uint64_t max_stdout) {
  ProcessResult r;
  if (argv.empty()) {
    r.error = "empty command";
    return r;
  }
  int out_pipe[2], err_pipe[2];
  if (pipe2(out_pipe, O_CLOEXEC) != 0 || pipe2(err_pipe, O_CLOEXEC) != 0) {
    r.error = std::strerror(errno);
    return r;
  }
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, out_pipe[1], 1);
  posix_spawn_file_actions_adddup2(&fa, err_pipe[1], 2);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = 0;
  int rc = posix_spawnp(&pid, args[0], &fa, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  close(out_pipe[1]);
  close(err_pipe[1]);
  if (rc != 0) {
    r.error = fmt::format("cannot run {}: {}", argv[0], std::strerror(rc));
    close(out_pipe[0]);
    close(err_pipe[0]);
    return r;
  }
  r.started = true;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
  pollfd fds[2] = {{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}};
  int open_fds = 2;
  char buf[65536];
  bool killed = false;
  while (open_fds > 0) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()).count();
    if (left <= 0) {
      r.timed_out = true;
      break;
    }
    int n = poll(fds, 2, static_cast<int>(std::min<long long>(left, 1000)));
    if (n < 0 && errno != EINTR) break;
    for (auto& p : fds) {
      if (p.fd < 0 || !(p.revents & (POLLIN | POLLHUP | POLLERR))) continue;
      ssize_t got = read(p.fd, buf, sizeof buf);
      if (got <= 0) {
        close(p.fd);
        p.fd = -1;
        --open_fds;
        continue;
      }
      if (p.fd == out_pipe[0]) {
        if (r.out.size() + static_cast<size_t>(got) > max_stdout) {
          r.truncated = true;
          break;
        }
        r.out.append(buf, static_cast<size_t>(got));
      } else {
        r.err.append(buf, static_cast<size_t>(got));
        if (r.err.size() > 4096) r.err.erase(0, r.err.size() - 4096);
      }
    }
    if (r.truncated) break;
  }
  if (r.timed_out || r.truncated) {
    kill(pid, SIGKILL);
    killed = true;
  }
  for (auto& p : fds)
    if (p.fd >= 0) close(p.fd);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!killed && WIFEXITED(status)) r.exit_code = WEXITSTATUS(status);
  if (!killed && WIFEXITED(status) && WEXITSTATUS(status) == 127 && r.out.empty())
    r.error = fmt::format("{}: not found", argv[0]);
  return r;
}

}  // namespace attribution::blueprint
