#include "connectors/exec/exec_process.h"

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
#include <set>

extern char** environ;

namespace attribution::blueprint {
namespace {

using Clock = std::chrono::steady_clock;

// Keeps the first and the last `limit/2` bytes of a stream.
class BoundedText {
 public:
  explicit BoundedText(size_t limit) : half_(limit / 2) {}
  void append(const char* p, size_t n) {
    total_ += n;
    if (head_.size() < half_) {
      size_t take = std::min(n, half_ - head_.size());
      head_.append(p, take);
      p += take;
      n -= take;
    }
    tail_.append(p, n);
    if (tail_.size() > half_) tail_.erase(0, tail_.size() - half_);
  }
  std::string text() const {
    uint64_t skipped = total_ - head_.size() - tail_.size();
    if (skipped == 0) return head_ + tail_;
    return fmt::format("{}…[{} bytes skipped]…{}", head_, skipped, tail_);
  }

 private:
  size_t half_;
  uint64_t total_ = 0;
  std::string head_, tail_;
};

}  // namespace

std::string ExecResult::failure(int timeout_s) const {
  if (!started) return error;
  if (timed_out) return fmt::format("timed out after {} s (process group killed)", timeout_s);
  if (truncated) return fmt::format("output over the limit after {} bytes (process group killed)", stdout_bytes);
  if (signal != 0) return fmt::format("killed by signal {} ({})", signal, strsignal(signal));
  if (exit_code != 0) return fmt::format("exit {}", exit_code);
  return "";
}

std::string describe_command(const std::vector<std::string>& argv) {
  std::string out;
  for (const auto& a : argv) {
    if (!out.empty()) out += ' ';
    bool plain = !a.empty() && a.find_first_of(" \t\n'\"\\$`;&|<>()*?[]{}") == std::string::npos;
    if (plain) {
      out += a;
    } else {
      out += '\'';
      for (char c : a) {
        if (c == '\'') out += "'\\''";
        else out += c;
      }
      out += '\'';
    }
  }
  return out;
}

ExecResult run_exec(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env,
                    const std::string& cwd, const ExecLimits& limits,
                    const std::function<void(std::string_view line, uint64_t number)>& on_line) {
  ExecResult r;
  auto t0 = Clock::now();
  if (argv.empty() || argv[0].empty()) {
    r.error = "empty command";
    return r;
  }
  int out_pipe[2], err_pipe[2];
  if (pipe2(out_pipe, O_CLOEXEC) != 0) {
    r.error = fmt::format("pipe: {}", std::strerror(errno));
    return r;
  }
  if (pipe2(err_pipe, O_CLOEXEC) != 0) {
    r.error = fmt::format("pipe: {}", std::strerror(errno));
    close(out_pipe[0]);
    close(out_pipe[1]);
    return r;
  }
  // The environment: ours, with `env` added or replacing.
  std::vector<std::string> env_strings;
  std::set<std::string> overridden;
  for (const auto& [k, v] : env) {
    env_strings.push_back(k + "=" + v);
    overridden.insert(k);
  }
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    std::string_view entry(*e);
    auto eq = entry.find('=');
    if (eq != std::string_view::npos && overridden.count(std::string(entry.substr(0, eq)))) continue;
    env_strings.emplace_back(entry);
  }
  std::vector<char*> envp;
  for (auto& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);

  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, out_pipe[1], 1);
  posix_spawn_file_actions_adddup2(&fa, err_pipe[1], 2);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  if (!cwd.empty()) posix_spawn_file_actions_addchdir_np(&fa, cwd.c_str());
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  posix_spawnattr_setpgroup(&attr, 0);  // its own group: a timeout kills the command's children too
  sigset_t none, all;
  sigemptyset(&none);
  sigfillset(&all);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setsigdefault(&attr, &all);
  pid_t pid = 0;
  int rc = posix_spawnp(&pid, args[0], &fa, &attr, args.data(), envp.data());
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&attr);
  close(out_pipe[1]);
  close(err_pipe[1]);
  if (rc != 0) {
    r.error = fmt::format("cannot run {}: {}", argv[0], std::strerror(rc));
    close(out_pipe[0]);
    close(err_pipe[0]);
    return r;
  }
  r.started = true;

  auto deadline = t0 + std::chrono::seconds(limits.timeout_s);
  pollfd fds[2] = {{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}};
  int open_fds = 2;
  std::string pending;  // stdout bytes after the last newline
  bool pending_cut = false;
  uint64_t line_no = 0;
  BoundedText err_text(limits.max_stderr_bytes);
  static thread_local char buf[65536];
  auto emit = [&](std::string_view line) {
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    on_line(line, line_no);
  };
  while (open_fds > 0) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) {
      r.timed_out = true;
      break;
    }
    int n = poll(fds, 2, static_cast<int>(std::min<long long>(left, 1000)));
    if (n < 0 && errno != EINTR) break;
    for (auto& p : fds) {
      if (p.fd < 0 || !(p.revents & (POLLIN | POLLHUP | POLLERR))) continue;
      ssize_t got = read(p.fd, buf, sizeof buf);
      if (got < 0 && (errno == EINTR || errno == EAGAIN)) continue;
      if (got <= 0) {
        close(p.fd);
        p.fd = -1;
        --open_fds;
        continue;
      }
      if (p.fd == err_pipe[0]) {
        err_text.append(buf, static_cast<size_t>(got));
        continue;
      }
      r.stdout_bytes += static_cast<uint64_t>(got);
      if (r.stdout_bytes > limits.max_stdout_bytes) {
        r.truncated = true;
        break;
      }
      std::string_view chunk(buf, static_cast<size_t>(got));
      while (!chunk.empty()) {
        size_t nl = chunk.find('\n');
        std::string_view piece = chunk.substr(0, nl);
        if (!pending_cut) {
          size_t room = limits.max_line_bytes - std::min<uint64_t>(limits.max_line_bytes, pending.size());
          if (piece.size() > room) {
            pending.append(piece.substr(0, room));
            pending_cut = true;
            ++r.long_lines;
          } else {
            pending.append(piece);
          }
        }
        if (nl == std::string_view::npos) break;
        emit(pending);
        pending.clear();
        pending_cut = false;
        chunk.remove_prefix(nl + 1);
      }
    }
    if (r.truncated) break;
  }
  bool killed = false;
  if (r.timed_out || r.truncated) {
    kill(-pid, SIGTERM);
    killed = true;
  }
  for (auto& p : fds) {
    if (p.fd >= 0) close(p.fd);
  }
  // The leader is waited for without reaping it (WNOWAIT), so its pid, which is the group's id,
  // cannot be reused before the group is killed: no signal can reach an unrelated process.
  auto wait_leader = [&](bool block) {
    siginfo_t info{};
    while (true) {
      int w = waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOWAIT | (block ? 0 : WNOHANG));
      if (w == 0) return info.si_pid == pid;
      if (errno != EINTR) return true;  // nothing to wait for
    }
  };
  if (killed) {
    // Give the group 2 s to end on SIGTERM, then SIGKILL it.
    auto hard = Clock::now() + std::chrono::seconds(2);
    while (!wait_leader(false) && Clock::now() < hard) usleep(20000);
  } else {
    wait_leader(true);
  }
  kill(-pid, SIGKILL);  // whatever of the group is left: the group ends with the command
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!killed) {
    if (!pending.empty()) emit(pending);
    if (WIFEXITED(status)) r.exit_code = WEXITSTATUS(status);
    else if (WIFSIGNALED(status)) r.signal = WTERMSIG(status);
  }
  r.stderr_text = err_text.text();
  if (r.started && !killed && r.exit_code == 127 && r.stdout_bytes == 0 && r.stderr_text.empty())
    r.error = fmt::format("{}: not found", argv[0]);
  r.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  return r;
}

}  // namespace attribution::blueprint
