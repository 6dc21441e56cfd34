// The loop of `attribution-blueprint watch`: poll the adapter for ended attempts, attribute them on
// a bounded pool of workers, store each verdict, and move the persistent cursor (store table
// `cursors`) past what is stored.
//
// Concurrency and backpressure (docs/blueprint.md "watch"):
//   - `concurrency` worker threads each own a Pipeline (its own collectors; rules shared) and run
//     collect → attribute. The watch thread alone writes the stores and the cursor, so stores stay
//     single-threaded (store.h).
//   - The backlog (attempts taken from the adapter and not yet stored: queued + in flight + done
//     and waiting to be stored) never exceeds `backlog`. When more attempts have ended than that,
//     the watch takes the earliest `backlog` of them and leaves the rest at the adapter, logs
//     "backlog full", and polls the adapter again (from the cursor, without waiting for the
//     interval) as soon as the batch is stored. Nothing is dropped: the cursor never passes an
//     attempt that is not stored, so an attempt left at the adapter is taken by a later poll.
//   - The cursor advances in (reported_end, id, attempt) order over the stored prefix of a batch, so
//     a crash or SIGTERM mid-batch redoes at most that batch; attempts already stored are found by
//     has_run() and not attributed twice.
//   - Progress: a log line every `report` (attributed, rate, backlog, in flight, cursor, RSS), a
//     line when the backlog fills and when it drains, and, with `metrics_file`, Prometheus text
//     counters rewritten atomically at each report (node_exporter textfile style).
// Thread-safety: run_watch_loop runs on the calling thread and starts/joins its own workers.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <iosfwd>
#include <string>
#include <vector>

#include "run/pipeline.h"

namespace attribution::blueprint {

struct WatchSettings {
  int64_t interval_ns = 60'000'000'000LL;  // wait between polls when caught up
  int64_t since_ns = 0;                    // first start: take attempts that ended this long ago
  int64_t lookback_ns = 600'000'000'000LL; // re-check this far behind the cursor
  int64_t settle_ns = 0;                   // poll up to now - settle
  unsigned concurrency = 1;                // attempts attributed at the same time
  size_t backlog = 256;                    // attempts held at most (queued + in flight + unstored)
  int64_t report_ns = 30'000'000'000LL;    // progress log line every ...
  std::string metrics_file;                // Prometheus text counters (empty: none)
  std::string cursor_name;
  bool once = false;   // one poll, then exit (a batch cut by the backlog bound is not continued)
  int max_polls = 0;   // exit after N polls (0: until SIGINT/SIGTERM or the adapter's schedule ends)
};

// Reads watch.* from the merged config (validated by load_config): defaults above, concurrency
// defaults to min(4, cores), and the per-attempt scanner threads default to cores / concurrency.
WatchSettings watch_settings(const YAML::Node& root);

// What a watch run did (also the final log line and the metrics file).
struct WatchStats {
  uint64_t polls = 0;
  uint64_t attributed = 0;       // attributed and stored
  uint64_t already_stored = 0;   // found by has_run, not attributed again
  uint64_t failed = 0;           // store errors or attribution exceptions (retried by a later poll)
  uint64_t backlog_full = 0;     // polls that left attempts at the adapter because the backlog was full
  size_t backlog = 0, backlog_peak = 0;
  size_t in_flight = 0;
  int64_t cursor_end = 0;  // ns
  int64_t adapter_now = 0;
  uint64_t rss_bytes = 0, peak_rss_bytes = 0;
};

// Runs the loop until `stop`, `once`, `max_polls`, or the adapter's schedule is over. `emit` is
// called on the watch thread for each attempt stored. Returns a process exit code (kExit*).
int run_watch_loop(Pipeline& pipeline, const WatchSettings& settings,
                   const std::function<void(const AttemptOutcome&)>& emit, std::ostream& err,
                   const std::atomic<bool>& stop, WatchStats* stats_out = nullptr);

// Current and peak resident set size of this process, from /proc/self (0 when unreadable).
uint64_t resident_bytes();
uint64_t peak_resident_bytes();

}  // namespace attribution::blueprint
