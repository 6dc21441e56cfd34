#include "run/watch.h"

#include <fmt/format.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <fstream>
#include <mutex>
#include <optional>
#include <set>
#include <thread>
#include <tuple>

#include "attribution/codec.h"
#include "commands/analyze.h"
#include "run/config.h"
#include "run/run_cmd.h"

namespace attribution::blueprint {
namespace {

constexpr TimeNs kNanosPerSecond = 1000000000;

using Clock = std::chrono::steady_clock;

std::string attempt_key(const ExecutionContext& c) { return fmt::format("{}#{}", c.id, c.attempt); }

// Worker threads, each with its own Pipeline, fed from a queue the watch thread fills; finished
// outcomes come back through a second queue. The queue never holds more than the batch the watch
// thread submitted, which the backlog bound caps.
class WorkerPool {
 public:
  struct Done {
    size_t slot;
    AttemptOutcome outcome;
    std::string exception;  // set when attribute() threw
  };

  explicit WorkerPool(std::vector<std::unique_ptr<Pipeline>> pipelines) : pipelines_(std::move(pipelines)) {
    for (auto& p : pipelines_) threads_.emplace_back([this, pp = p.get()] { work(*pp); });
  }
  ~WorkerPool() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stopping_ = true;
    }
    work_cv_.notify_all();
    for (auto& t : threads_) t.join();
  }
  void submit(size_t slot, const WorkloadAttempt* attempt) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      queue_.emplace_back(slot, attempt);
    }
    work_cv_.notify_one();
  }
  // Removes what no worker has started; returns the slots removed.
  std::vector<size_t> cancel_queued() {
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<size_t> slots;
    for (auto& q : queue_) slots.push_back(q.first);
    queue_.clear();
    return slots;
  }
  // Waits up to `wait` for a finished attempt.
  std::optional<Done> next(std::chrono::milliseconds wait) {
    std::unique_lock<std::mutex> lock(mu_);
    if (!done_cv_.wait_for(lock, wait, [this] { return !done_.empty(); })) return std::nullopt;
    Done d = std::move(done_.front());
    done_.pop_front();
    return d;
  }
  size_t in_flight() {
    std::lock_guard<std::mutex> lock(mu_);
    return busy_;
  }
  // Drops what is queued, waits for the attempts in flight and discards every result: after it no
  // worker refers to an attempt of the batch (which the caller is about to free).
  void abandon() {
    std::unique_lock<std::mutex> lock(mu_);
    queue_.clear();
    done_cv_.wait(lock, [this] { return busy_ == 0; });
    done_.clear();
  }

 private:
  void work(Pipeline& pipeline) {
    for (;;) {
      std::pair<size_t, const WorkloadAttempt*> job;
      {
        std::unique_lock<std::mutex> lock(mu_);
        work_cv_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
        if (stopping_) return;
        job = queue_.front();
        queue_.pop_front();
        ++busy_;
      }
      Done d{job.first, {}, {}};
      try {
        d.outcome = pipeline.attribute(*job.second);
      } catch (const std::exception& e) {
        d.exception = e.what();
      } catch (...) {
        d.exception = "unknown exception";
      }
      {
        std::lock_guard<std::mutex> lock(mu_);
        --busy_;
        done_.push_back(std::move(d));
      }
      done_cv_.notify_one();
    }
  }

  std::vector<std::unique_ptr<Pipeline>> pipelines_;
  std::vector<std::thread> threads_;
  std::mutex mu_;
  std::condition_variable work_cv_, done_cv_;
  std::deque<std::pair<size_t, const WorkloadAttempt*>> queue_;
  std::deque<Done> done_;
  size_t busy_ = 0;
  bool stopping_ = false;
};

// One attempt of a batch, in cursor order.
struct Slot {
  enum State { kSkip, kQueued, kDone, kFailed };
  const WorkloadAttempt* attempt;
  TimeNs ended;
  std::string key;
  State state;
};

std::string mb(uint64_t bytes) { return fmt::format("{:.0f} MB", static_cast<double>(bytes) / 1048576.0); }

void write_metrics(const std::string& path, const WatchSettings& s, const WatchStats& st, std::ostream& err) {
  if (path.empty()) return;
  std::string text;
  auto metric = [&](const char* name, const char* type, const char* help, double value) {
    text += fmt::format("# HELP {} {}\n# TYPE {} {}\n{} {}\n", name, help, name, type, name, value);
  };
  metric("attribution_watch_polls_total", "counter", "Adapter polls.", static_cast<double>(st.polls));
  metric("attribution_watch_attempts_attributed_total", "counter", "Attempts attributed and stored.",
         static_cast<double>(st.attributed));
  metric("attribution_watch_attempts_already_stored_total", "counter",
         "Ended attempts found already stored (not attributed again).", static_cast<double>(st.already_stored));
  metric("attribution_watch_attempts_failed_total", "counter",
         "Attempts whose store write or attribution failed (the cursor stays before them; retried).",
         static_cast<double>(st.failed));
  metric("attribution_watch_backlog_full_total", "counter",
         "Polls that left ended attempts at the adapter because the backlog was full.",
         static_cast<double>(st.backlog_full));
  metric("attribution_watch_backlog", "gauge", "Attempts taken and not yet stored.", static_cast<double>(st.backlog));
  metric("attribution_watch_backlog_peak", "gauge", "Largest backlog so far.", static_cast<double>(st.backlog_peak));
  metric("attribution_watch_backlog_limit", "gauge", "The backlog bound (watch.backlog).",
         static_cast<double>(s.backlog));
  metric("attribution_watch_in_flight", "gauge", "Attempts being attributed now.", static_cast<double>(st.in_flight));
  metric("attribution_watch_concurrency", "gauge", "Worker threads (watch.concurrency).",
         static_cast<double>(s.concurrency));
  metric("attribution_watch_cursor_seconds", "gauge", "The cursor: reported_end of the last stored attempt (adapter clock).",
         st.cursor_end == kNoTime ? 0.0 : static_cast<double>(st.cursor_end) / 1e9);
  metric("attribution_watch_lag_seconds", "gauge", "Adapter clock minus the cursor.",
         st.cursor_end == kNoTime ? 0.0 : static_cast<double>(st.adapter_now - st.cursor_end) / 1e9);
  metric("attribution_watch_resident_bytes", "gauge", "Resident set size.", static_cast<double>(st.rss_bytes));
  metric("attribution_watch_peak_resident_bytes", "gauge", "Peak resident set size.",
         static_cast<double>(st.peak_rss_bytes));
  std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << text;
    if (!out) {
      err << fmt::format("warning: watch: cannot write metrics file {}\n", tmp);
      return;
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0)
    err << fmt::format("warning: watch: cannot rename {} to {}\n", tmp, path);
}

}  // namespace

uint64_t resident_bytes() {
  std::ifstream in("/proc/self/statm");
  uint64_t size = 0, resident = 0;
  if (!(in >> size >> resident)) return 0;
  return resident * static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
}

uint64_t peak_resident_bytes() {
  struct rusage usage {};
  if (getrusage(RUSAGE_SELF, &usage) != 0) return 0;
  return static_cast<uint64_t>(usage.ru_maxrss) * 1024;
}

WatchSettings watch_settings(const YAML::Node& root) {
  WatchSettings s;
  YAML::Node w = root["watch"] ? root["watch"] : YAML::Node(YAML::NodeType::Map);
  auto duration = [&](const char* key, int64_t& v) {
    if (w[key]) parse_duration_ns(w[key].as<std::string>(""), v);
  };
  duration("interval", s.interval_ns);
  duration("since", s.since_ns);
  duration("lookback", s.lookback_ns);
  duration("settle", s.settle_ns);
  duration("report", s.report_ns);
  unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  s.concurrency = std::min(4u, cores);
  if (w["concurrency"]) s.concurrency = std::max(1, w["concurrency"].as<int>(1));
  if (w["backlog"]) s.backlog = static_cast<size_t>(std::max(1, w["backlog"].as<int>(256)));
  if (w["metrics_file"]) s.metrics_file = w["metrics_file"].as<std::string>("");
  if (w["cursor"]) s.cursor_name = w["cursor"].as<std::string>("");
  return s;
}

int run_watch_loop(Pipeline& pipeline, const WatchSettings& settings,
                   const std::function<void(const AttemptOutcome&)>& emit, std::ostream& err,
                   const std::atomic<bool>& stop, WatchStats* stats_out) {
  Adapter& adapter = pipeline.adapter();
  VerdictStore* cursors = pipeline.cursor_store();
  if (!cursors) {
    err << "error: watch needs a store that keeps cursors (stores.sqlite or stores.postgres)\n";
    return kExitUsage;
  }
  const std::string cursor_name = settings.cursor_name.empty()
                                      ? fmt::format("{}:{}", pipeline.adapter_name(), pipeline.cluster())
                                      : settings.cursor_name;
  const size_t bound = std::max<size_t>(1, settings.backlog);
  const unsigned concurrency = std::max(1u, settings.concurrency);

  // Workers: their own collectors, the rules shared. Scanner threads per attempt: as configured
  // (`threads`), else the cores shared out among the workers.
  unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  unsigned per_attempt = pipeline.threads() ? pipeline.threads() : std::max(1u, cores / concurrency);
  std::vector<std::unique_ptr<Pipeline>> workers;
  std::vector<std::string> errors;
  for (unsigned i = 0; i < concurrency; ++i) {
    auto w = pipeline.worker(per_attempt, errors);
    if (!w) {
      for (const auto& e : errors) err << "error: " << e << "\n";
      return kExitUsage;
    }
    workers.push_back(std::move(w));
  }
  WorkerPool pool(std::move(workers));

  WatchStats st;
  st.cursor_end = kNoTime;
  const auto started = Clock::now();
  auto last_report = started;
  uint64_t attributed_at_last_report = 0;
  auto report = [&](bool force) {
    auto now = Clock::now();
    if (!force && now - last_report < std::chrono::nanoseconds(settings.report_ns)) return;
    double secs = std::chrono::duration<double>(now - last_report).count();
    st.rss_bytes = resident_bytes();
    st.peak_rss_bytes = std::max(st.peak_rss_bytes, peak_resident_bytes());
    st.in_flight = pool.in_flight();
    st.adapter_now = adapter.now();
    err << fmt::format(
        "watch: {} attributed (+{} in {:.0f}s, {:.1f}/s), backlog {}/{} (peak {}), in flight {}/{}, cursor {}, "
        "lag {:.0f}s, rss {}\n",
        st.attributed, st.attributed - attributed_at_last_report, secs,
        secs > 0 ? static_cast<double>(st.attributed - attributed_at_last_report) / secs : 0.0, st.backlog, bound,
        st.backlog_peak, st.in_flight, concurrency,
        st.cursor_end == kNoTime ? std::string("-") : format_rfc3339(st.cursor_end),
        st.cursor_end == kNoTime ? 0.0 : static_cast<double>(st.adapter_now - st.cursor_end) / 1e9, mb(st.rss_bytes));
    write_metrics(settings.metrics_file, settings, st, err);
    last_report = now;
    attributed_at_last_report = st.attributed;
  };

  bool catching_up = false;  // the last batch was cut by the bound: poll again from the cursor
  uint64_t catch_up_started_at = 0;
  auto catch_up_since = started;
  int last_rc = kExitOk;
  bool schedule_over = false;
  while (!stop) {
    ++st.polls;
    std::string error;
    std::optional<std::string> value;
    WatchCursor cursor;
    if (!cursors->get_cursor(cursor_name, value, error)) {
      err << "error: cursor " << cursor_name << ": " << error << "\n";
      return kExitError;
    }
    TimeNs now = adapter.now();
    if (!value || !decode_cursor(*value, cursor)) {
      if (value) err << "warning: cursor " << cursor_name << " unreadable, restarting from now\n";
      // Whole seconds: schedulers report end times in seconds, so a job that ends in the same second
      // the cursor is set, after it, would otherwise read as older than the floor and never be taken.
      // The cost is the other side of that second: a job that ended in it just before may be taken.
      cursor.end = now - settings.since_ns;
      cursor.end -= ((cursor.end % kNanosPerSecond) + kNanosPerSecond) % kNanosPerSecond;
      cursor.floor = cursor.end;
      cursor.done.clear();
      if (!cursors->set_cursor(cursor_name, encode_cursor(cursor), error)) {
        err << "error: cursor " << cursor_name << ": " << error << "\n";
        return kExitError;
      }
      err << fmt::format("watch: cursor {} set to {}\n", cursor_name, format_rfc3339(cursor.end));
    }
    st.cursor_end = cursor.end;

    // Ask the adapter. Caught up: everything that ended in the lookback window behind the cursor
    // (late records). Catching up: only from the cursor, at most the bound past the attempts
    // already done at the cursor's instant, so one answer stays bounded too.
    std::vector<WorkloadAttempt> attempts;
    bool more = false;
    TimeNs to = now - settings.settle_ns;
    bool ok;
    if (catching_up) {
      TimeNs from = std::max(cursor.floor, cursor.end);
      ok = adapter.ended_between_limited(from, to, bound + cursor.done.size(), attempts, more, error);
    } else {
      TimeNs from = std::max(cursor.floor, cursor.end - settings.lookback_ns);
      ok = adapter.ended_between(from, to, attempts, error);
    }
    if (!ok) {
      err << "error: " << pipeline.adapter_name() << ": " << error << "\n";
      last_rc = kExitError;
    } else {
      std::vector<TimeNs> ended(attempts.size());
      for (size_t i = 0; i < attempts.size(); ++i) ended[i] = adapter.reported_end(attempts[i]);
      std::vector<size_t> order(attempts.size());
      for (size_t i = 0; i < order.size(); ++i) order[i] = i;
      std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
        return std::tie(ended[a], attempts[a].context.id, attempts[a].context.attempt) <
               std::tie(ended[b], attempts[b].context.id, attempts[b].context.attempt);
      });

      // Select the batch: skip what is done, take at most `bound` new attempts, cut the rest.
      std::set<std::string> done_at_end(cursor.done.begin(), cursor.done.end());
      std::vector<Slot> slots;
      size_t taken = 0;
      bool cut = false;
      for (size_t i : order) {
        const auto& c = attempts[i].context;
        if (ended[i] == kNoTime || ended[i] < cursor.floor) continue;
        std::string key = attempt_key(c);
        if (ended[i] == cursor.end && done_at_end.count(key)) continue;
        if (taken == bound) {
          cut = true;
          break;
        }
        bool found = false;
        std::string cluster = c.cluster.empty() ? pipeline.cluster() : c.cluster;
        if (!cursors->has_run(cluster, c.scheduler, c.id, c.attempt, found, error)) {
          err << "error: " << error << "\n";
          last_rc = kExitError;
          cut = true;  // the cursor stops before this attempt
          break;
        }
        if (found) {
          ++st.already_stored;
          slots.push_back({&attempts[i], ended[i], std::move(key), Slot::kSkip});
        } else {
          ++taken;
          slots.push_back({&attempts[i], ended[i], std::move(key), Slot::kQueued});
        }
      }
      bool truncated = cut || more;
      if (truncated) {
        ++st.backlog_full;
        if (!catching_up) {
          catch_up_started_at = st.attributed;
          catch_up_since = Clock::now();
          err << fmt::format(
              "watch: backlog full ({} attempts taken, the bound): later ended attempts stay at the adapter "
              "and are taken from the cursor as soon as this batch is stored (none dropped)\n",
              bound);
        }
      } else if (catching_up) {
        err << fmt::format("watch: backlog drained: caught up with the adapter ({} attempts in {:.1f}s)\n",
                           st.attributed - catch_up_started_at,
                           std::chrono::duration<double>(Clock::now() - catch_up_since).count());
      }
      catching_up = truncated;
      st.backlog = taken;
      st.backlog_peak = std::max(st.backlog_peak, st.backlog);

      for (size_t i = 0; i < slots.size(); ++i)
        if (slots[i].state == Slot::kQueued) pool.submit(i, slots[i].attempt);

      // Store results as they finish; move the cursor over the stored prefix.
      size_t next = 0;
      int processed = 0;
      bool batch_failed = false;
      auto advance = [&]() -> bool {
        bool moved = false;
        while (next < slots.size() && (slots[next].state == Slot::kSkip || slots[next].state == Slot::kDone)) {
          const Slot& s = slots[next];
          if (s.ended > cursor.end) {
            cursor.end = s.ended;
            cursor.done = {s.key};
            done_at_end = {s.key};
          } else if (s.ended == cursor.end && done_at_end.insert(s.key).second) {
            cursor.done.push_back(s.key);
          }
          ++next;
          moved = true;
        }
        if (moved && !cursors->set_cursor(cursor_name, encode_cursor(cursor), error)) {
          err << "error: cursor " << cursor_name << ": " << error << "\n";
          return false;
        }
        st.cursor_end = cursor.end;
        return true;
      };
      if (!advance()) {
        pool.abandon();
        return kExitError;
      }
      size_t outstanding = taken;
      bool cancelled = false;
      auto cancel = [&] {
        for (size_t slot : pool.cancel_queued()) {
          (void)slot;  // stays kQueued: the cursor stops before it, a later poll takes it
          --outstanding;
          --st.backlog;
        }
        cancelled = true;
      };
      while (outstanding > 0) {
        if (stop && !cancelled) cancel();
        if (outstanding == 0) break;
        auto done = pool.next(std::chrono::milliseconds(200));
        if (done) {
          --outstanding;
          Slot& s = slots[done->slot];
          if (!done->exception.empty()) {
            err << fmt::format("error: job {} attempt {}: attribution failed: {} (retried by a later poll)\n",
                               s.attempt->context.id, s.attempt->context.attempt, done->exception);
            s.state = Slot::kFailed;
          } else {
            pipeline.store(done->outcome);
            if (!done->outcome.store_errors.empty()) {
              for (const auto& e : done->outcome.store_errors) err << "error: store " << e << "\n";
              s.state = Slot::kFailed;
            } else {
              s.state = Slot::kDone;
              ++st.attributed;
              ++processed;
              if (done->outcome.connector_failed() && last_rc == kExitOk) last_rc = kExitPartial;
              emit(done->outcome);
            }
          }
          --st.backlog;
          if (s.state == Slot::kFailed) {
            ++st.failed;
            last_rc = kExitError;
            batch_failed = true;
            if (!cancelled) cancel();  // a broken store: do not attribute the rest of the batch now
          }
          if (!advance()) {
            pool.abandon();
            return kExitError;
          }
        }
        report(false);
      }
      st.backlog = 0;
      if (batch_failed) catching_up = false;  // retry after the interval, with the lookback
      if (processed > 0 || settings.once)
        err << fmt::format("watch: poll {}: {} new attempt(s), cursor at {}\n", st.polls, processed,
                           format_rfc3339(cursor.end));
      schedule_over = !truncated && !batch_failed && adapter.schedule_ended(to);
    }
    report(false);
    if (settings.once || (settings.max_polls > 0 && st.polls >= static_cast<uint64_t>(settings.max_polls))) break;
    if (schedule_over) {
      err << "watch: the adapter's schedule is over and every attempt of it is stored; exiting\n";
      break;
    }
    if (catching_up) continue;  // more ended attempts wait at the adapter: no interval
    auto until = Clock::now() + std::chrono::nanoseconds(settings.interval_ns);
    while (!stop && Clock::now() < until) {
      std::this_thread::sleep_for(std::chrono::milliseconds(std::min<int64_t>(100, settings.interval_ns / 1'000'000 + 1)));
      report(false);
    }
  }
  report(true);
  err << fmt::format(
      "watch: done: {} attributed, {} already stored, {} failed, {} polls, backlog peak {}/{}, backlog full {} "
      "time(s), peak rss {}, {:.1f}s\n",
      st.attributed, st.already_stored, st.failed, st.polls, st.backlog_peak, bound, st.backlog_full,
      mb(st.peak_rss_bytes), std::chrono::duration<double>(Clock::now() - started).count());
  if (stats_out) *stats_out = st;
  return last_rc;
}

}  // namespace attribution::blueprint
