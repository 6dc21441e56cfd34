#include "process/process_runner.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <memory>
#include <set>
#include <thread>

extern char** environ;

namespace attribution::blueprint::process {
namespace {

using Clock = std::chrono::steady_clock;
constexpr size_t kReadBufferBytes = 65536;

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
  // The last `limit/2` bytes of the stream. When bytes were skipped, tail_ is exactly that;
  // otherwise head_ + tail_ is the whole stream.
  std::string last() const {
    std::string all = head_ + tail_;
    return all.size() > half_ ? all.substr(all.size() - half_) : all;
  }

 private:
  size_t half_;
  uint64_t total_ = 0;
  std::string head_, tail_;
};

// Splits stdout chunks into lines for run_lines (the rules are in the header).
class LineSplitter {
 public:
  LineSplitter(uint64_t max_line_bytes, const LineCallback& on_line)
      : max_(max_line_bytes), on_line_(on_line) {}
  void feed(std::string_view chunk) {
    while (!chunk.empty()) {
      size_t nl = chunk.find('\n');
      std::string_view piece = chunk.substr(0, nl);
      if (!cut_) {
        size_t room = max_ - std::min<uint64_t>(max_, pending_.size());
        if (piece.size() > room) {
          pending_.append(piece.substr(0, room));
          cut_ = true;
          ++long_lines_;
        } else {
          pending_.append(piece);
        }
      }
      if (nl == std::string_view::npos) break;
      emit();
      chunk.remove_prefix(nl + 1);
    }
  }
  void finish() {
    if (!pending_.empty()) emit();
  }
  uint64_t long_lines() const { return long_lines_; }

 private:
  void emit() {
    std::string_view line(pending_);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    on_line_(line, ++number_);
    pending_.clear();
    cut_ = false;
  }
  uint64_t max_;
  const LineCallback& on_line_;
  std::string pending_;  // stdout bytes after the last newline
  bool cut_ = false;     // pending_ reached max_; the rest of this line is dropped
  uint64_t number_ = 0;
  uint64_t long_lines_ = 0;
};

// Waits, without reaping it (WNOWAIT), until the group leader `pid` has ended or `until` has
// passed; true when it has ended (or there is nothing to wait for). Not reaping keeps its pid,
// which is the group's id, from being reused, so a later kill(-pid) cannot reach an unrelated
// process group.
bool wait_leader_until(pid_t pid, Clock::time_point until) {
  Clock::duration pause = std::chrono::microseconds(500);
  while (true) {
    siginfo_t info{};
    int w = waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOWAIT | WNOHANG);
    if (w == 0 && info.si_pid == pid) return true;
    if (w != 0 && errno == EINTR) continue;
    if (w != 0) return true;  // ECHILD: nothing to wait for
    auto now = Clock::now();
    if (now >= until) return false;
    std::this_thread::sleep_for(std::min<Clock::duration>(pause, until - now));
    pause = std::min<Clock::duration>(pause * 2, std::chrono::milliseconds(50));
  }
}

// The environment for the child: ours, with `env` added or replacing.
std::vector<std::string> child_environment(const std::map<std::string, std::string>& env) {
  std::vector<std::string> out;
  std::set<std::string_view> overridden;
  for (const auto& [name, value] : env) {
    out.push_back(name + "=" + value);
    overridden.insert(name);
  }
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    std::string_view entry(*e);
    auto eq = entry.find('=');
    if (eq != std::string_view::npos && overridden.count(entry.substr(0, eq))) continue;
    out.emplace_back(entry);
  }
  return out;
}

}  // namespace

std::string Result::failure() const {
  if (!started) return error;
  if (timed_out) return fmt::format("timed out after {} s (process group killed)", timeout_s);
  if (truncated)
    return fmt::format("output over the limit after {} bytes (process group killed)", stdout_bytes);
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
        if (c == '\'')
          out += "'\\''";
        else
          out += c;
      }
      out += '\'';
    }
  }
  return out;
}

Result run(const Request& request, const ChunkCallback& on_stdout) {
  const auto& argv = request.argv;
  const auto& limits = request.limits;
  Result r;
  r.timeout_s = limits.timeout_s;
  auto t0 = Clock::now();
  auto finish = [&] {
    r.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
    return r;
  };
  if (argv.empty() || argv[0].empty()) {
    r.error = "empty command";
    return finish();
  }
  int out_pipe[2], err_pipe[2];
  if (pipe2(out_pipe, O_CLOEXEC) != 0) {
    r.error = fmt::format("cannot run {}: pipe: {}", argv[0], std::strerror(errno));
    return finish();
  }
  if (pipe2(err_pipe, O_CLOEXEC) != 0) {
    r.error = fmt::format("cannot run {}: pipe: {}", argv[0], std::strerror(errno));
    close(out_pipe[0]);
    close(out_pipe[1]);
    return finish();
  }
  std::vector<std::string> env_strings = child_environment(request.env);
  std::vector<char*> envp;
  for (auto& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, out_pipe[1], 1);
  posix_spawn_file_actions_adddup2(&actions, err_pipe[1], 2);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  if (!request.cwd.empty()) posix_spawn_file_actions_addchdir_np(&actions, request.cwd.c_str());
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  posix_spawnattr_setflags(&attr,
                           POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  posix_spawnattr_setpgroup(&attr, 0);  // its own group: a kill reaches the command's children too
  sigset_t none, all;
  sigemptyset(&none);
  sigfillset(&all);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setsigdefault(&attr, &all);
  pid_t pid = 0;
  int rc = posix_spawnp(&pid, args[0], &actions, &attr, args.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  close(out_pipe[1]);
  close(err_pipe[1]);
  if (rc != 0) {
    r.error = fmt::format("cannot run {}: {}{}", argv[0], std::strerror(rc),
                          request.cwd.empty() ? "" : fmt::format(" (in {})", request.cwd));
    close(out_pipe[0]);
    close(err_pipe[0]);
    return finish();
  }
  r.started = true;

  auto deadline = t0 + std::chrono::seconds(limits.timeout_s);
  pollfd fds[2] = {{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}};
  int open_fds = 2;
  BoundedText err_text(limits.max_stderr_bytes);
  // Per call (not static): a callback may itself run a command.
  auto buf = std::make_unique<char[]>(kReadBufferBytes);
  while (open_fds > 0 && !r.truncated) {
    auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) {
      r.timed_out = true;
      break;
    }
    int n = poll(fds, 2, static_cast<int>(std::min<long long>(left, 1000)));
    if (n < 0 && errno != EINTR) break;
    for (auto& p : fds) {
      if (p.fd < 0 || !(p.revents & (POLLIN | POLLHUP | POLLERR))) continue;
      ssize_t got = read(p.fd, buf.get(), kReadBufferBytes);
      if (got < 0 && (errno == EINTR || errno == EAGAIN)) continue;
      if (got <= 0) {
        close(p.fd);
        p.fd = -1;
        --open_fds;
        continue;
      }
      if (p.fd == err_pipe[0]) {
        err_text.append(buf.get(), static_cast<size_t>(got));
        continue;
      }
      r.stdout_bytes += static_cast<uint64_t>(got);
      if (r.stdout_bytes > limits.max_stdout_bytes) {
        r.truncated = true;
        break;
      }
      on_stdout(std::string_view(buf.get(), static_cast<size_t>(got)));
    }
  }
  for (auto& p : fds) {
    if (p.fd >= 0) close(p.fd);
  }
  // Both pipes at end: the command may still run (it closed them, or a child holds none of
  // them); it gets what is left of the deadline to end.
  if (!r.timed_out && !r.truncated && !wait_leader_until(pid, deadline)) r.timed_out = true;
  bool killed = r.timed_out || r.truncated;
  if (killed && limits.kill_grace_ms > 0) {
    kill(-pid, SIGTERM);
    wait_leader_until(pid, Clock::now() + std::chrono::milliseconds(limits.kill_grace_ms));
  }
  kill(-pid, SIGKILL);  // whatever of the group is left: the group ends with the command
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!killed) {
    if (WIFEXITED(status))
      r.exit_code = WEXITSTATUS(status);
    else if (WIFSIGNALED(status))
      r.signal = WTERMSIG(status);
  }
  r.stderr_text = err_text.text();
  r.stderr_tail = err_text.last();
  if (!killed && r.exit_code == 127 && r.stdout_bytes == 0 && r.stderr_text.empty())
    r.error = fmt::format("{}: not found", argv[0]);
  return finish();
}

Result run_lines(const Request& request, const LineCallback& on_line) {
  LineSplitter lines(request.limits.max_line_bytes, on_line);
  Result r = run(request, [&](std::string_view chunk) { lines.feed(chunk); });
  if (r.started && !r.timed_out && !r.truncated) lines.finish();
  r.long_lines = lines.long_lines();
  return r;
}

Result run_capture(const Request& request, std::string& stdout_text) {
  return run(request, [&](std::string_view chunk) { stdout_text.append(chunk); });
}

}  // namespace attribution::blueprint::process
