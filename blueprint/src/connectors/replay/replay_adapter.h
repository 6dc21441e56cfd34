// The replay adapter: a fleet's ended jobs, released on a schedule in simulated time, so `watch`
// can be driven through a week of work (steady rate plus maintenance-window bursts) in minutes.
//
// Each released job replays the evidence of a template bundle (SPEC §7; `bundles:`, cycled): the
// attempt is the template's ExecutionContext with a new id, so its verdict is the template's verdict
// with that id, and the pipeline reads the template's `sources:` exactly as the static adapter's.
// The template's start/end are kept (the engine windows evidence by them); the *release* time is
// what ended_between() selects by and what `watch` keeps its cursor by (reported_end()).
//
// Config (adapters.replay):
//   bundles:        [DIR, ...]             required; job k replays bundles[k % n]
//   start:          RFC 3339               simulated time of schedule offset 0 (2026-01-05T00:00:00Z)
//   speed:          60                     simulated seconds per wall-clock second (default 1)
//   jobs_per_hour:  11905                  steady rate (default 0 = none); job k ends at (k+1)/rate
//   duration:       168h                   span of the steady schedule (default 1h)
//   bursts:         [{at: 36h, jobs: 10000, within: 10m}, ...]   evenly spread within the window
//   id_prefix:      replay                 ids: <prefix>-<k> (steady), <prefix>-b<i>-<j> (burst i)
//
// The simulated clock (now()) starts at `start` on its first reading and runs `speed` times as
// fast as the wall clock. Nothing is random: the same config releases the same ids at the same
// simulated instants. Job ids are zero-padded so their order is the numeric order.
// Thread-safety: now() may be called from any thread; the rest follows connector.h (one run).
#pragma once

#include <atomic>
#include <chrono>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "connectors/connector.h"

namespace attribution::blueprint {

class ReplayAdapter : public Adapter {
 public:
  struct Burst {
    int64_t at_ns = 0;      // offset from start
    int64_t jobs = 0;
    int64_t within_ns = 0;  // window length; job j ends at at + j * within / jobs
  };
  struct Template {
    std::string dir;
    ExecutionContext context;
  };
  struct Schedule {
    TimeNs start = 0;
    double speed = 1;
    double jobs_per_hour = 0;
    int64_t duration_ns = 3600'000'000'000LL;
    std::vector<Burst> bursts;
    std::string id_prefix = "replay";
  };

  // Reads every template bundle's manifest once. Errors name the key (adapters.replay.<key>).
  static std::unique_ptr<ReplayAdapter> create(const YAML::Node& config, std::string& error);
  ReplayAdapter(Schedule schedule, std::vector<Template> templates);

  std::string name() const override { return "replay"; }
  // A scheduled id, released or not (the schedule is known in advance).
  bool by_job(const std::string& job_id, std::vector<WorkloadAttempt>& out, std::string& error) override;
  bool ended_between(TimeNs from, TimeNs to, std::vector<WorkloadAttempt>& out, std::string& error) override;
  bool ended_between_limited(TimeNs from, TimeNs to, size_t limit, std::vector<WorkloadAttempt>& out, bool& more,
                             std::string& error) override;
  TimeNs now() const override;
  TimeNs reported_end(const WorkloadAttempt& attempt) const override;
  bool schedule_ended(TimeNs t) const override { return t >= last_release(); }

  // Totals of the schedule (for reports and tests).
  int64_t steady_jobs() const { return steady_jobs_; }
  int64_t total_jobs() const;
  TimeNs last_release() const;
  // The release time and template of a scheduled id; false when the id is not in the schedule.
  bool lookup(const std::string& job_id, TimeNs& released, size_t& template_index) const;

 private:
  struct Release {
    TimeNs at;
    int source;  // -1 steady, else burst index
    int64_t index;
  };
  // Releases with time in [from, to], earliest first (ties by id), at most `limit`.
  std::vector<Release> releases(TimeNs from, TimeNs to, size_t limit, bool& more) const;
  std::string id_of(const Release& r) const;
  WorkloadAttempt attempt_of(const Release& r) const;

  Schedule schedule_;
  std::vector<Template> templates_;
  int64_t steady_interval_ns_ = 0;
  int64_t steady_jobs_ = 0;
  mutable std::once_flag clock_started_;
  mutable std::chrono::steady_clock::time_point wall_origin_;
};

}  // namespace attribution::blueprint
