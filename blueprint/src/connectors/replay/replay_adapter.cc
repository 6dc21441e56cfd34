#include "connectors/replay/replay_adapter.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <tuple>

#include "attribution/codec.h"
#include "connectors/static/static_adapter.h"
#include "run/config.h"

namespace attribution::blueprint {
namespace {

constexpr const char* kReleasedLabel = "replay.released_ns";
constexpr const char* kTemplateLabel = "replay.template_id";
constexpr int64_t kHourNs = 3600'000'000'000LL;
constexpr const char* kDefaultStart = "2026-01-05T00:00:00Z";

// Smallest index i in [0, n) with first + i * step >= t (n when none); step > 0.
int64_t first_at_or_after(TimeNs first, int64_t step, int64_t n, TimeNs t) {
  if (t <= first) return 0;
  // (t - first) may exceed int64 only for absurd ranges; long double keeps it exact enough and the
  // adjustment below corrects rounding.
  long double q = static_cast<long double>(t - first) / static_cast<long double>(step);
  int64_t i = q >= static_cast<long double>(n) ? n : static_cast<int64_t>(std::ceil(q));
  while (i > 0 && first + (i - 1) * step >= t) --i;
  while (i < n && first + i * step < t) ++i;
  return i;
}

// Largest index i in [0, n) with first + i * step <= t, plus one (0 when none).
int64_t end_at_or_before(TimeNs first, int64_t step, int64_t n, TimeNs t) {
  if (t < first) return 0;
  long double q = static_cast<long double>(t - first) / static_cast<long double>(step);
  int64_t i = q >= static_cast<long double>(n) ? n : static_cast<int64_t>(std::floor(q)) + 1;
  while (i > 0 && first + (i - 1) * step > t) --i;
  while (i < n && first + i * step <= t) ++i;
  return i;
}

int digits(int64_t n) {
  int d = 1;
  while (n >= 10) {
    n /= 10;
    ++d;
  }
  return d;
}

bool read_duration(const YAML::Node& block, const char* key, const std::string& where, int64_t& ns,
                   std::string& error) {
  if (!block[key]) return true;
  std::string text = block[key].as<std::string>("");
  if (!parse_duration_ns(text, ns) || ns < 0) {
    error = fmt::format("{}.{}: not a duration (e.g. 90s, 10m, 168h): \"{}\"", where, key, text);
    return false;
  }
  return true;
}

bool read_number(const YAML::Node& block, const char* key, const std::string& where, double& value,
                 std::string& error) {
  if (!block[key]) return true;
  try {
    value = block[key].as<double>();
  } catch (const std::exception&) {
    error = fmt::format("{}.{}: must be a number", where, key);
    return false;
  }
  if (!std::isfinite(value) || value < 0) {
    error = fmt::format("{}.{}: must be a number >= 0", where, key);
    return false;
  }
  return true;
}

}  // namespace

ReplayAdapter::ReplayAdapter(Schedule schedule, std::vector<Template> templates)
    : schedule_(std::move(schedule)), templates_(std::move(templates)) {
  if (schedule_.jobs_per_hour > 0) {
    steady_interval_ns_ = std::max<int64_t>(1, std::llround(static_cast<double>(kHourNs) / schedule_.jobs_per_hour));
    steady_jobs_ = schedule_.duration_ns / steady_interval_ns_;
  }
}

std::unique_ptr<ReplayAdapter> ReplayAdapter::create(const YAML::Node& config, std::string& error) {
  const std::string where = "adapters.replay";
  Schedule s;
  if (!config || !config.IsMap()) {
    error = where + ": needs a block with bundles: [DIR, ...] and a schedule (jobs_per_hour, bursts)";
    return nullptr;
  }
  static const char* kKeys[] = {"bundles", "start", "speed", "jobs_per_hour", "duration", "bursts", "id_prefix", "cluster"};
  for (const auto& kv : config) {
    std::string k = kv.first.as<std::string>("");
    if (std::find_if(std::begin(kKeys), std::end(kKeys), [&](const char* x) { return k == x; }) == std::end(kKeys)) {
      error = fmt::format("{}.{}: unknown key (expected one of: bundles, start, speed, jobs_per_hour, duration, "
                          "bursts, id_prefix)", where, k);
      return nullptr;
    }
  }
  std::string start = config["start"] ? config["start"].as<std::string>("") : kDefaultStart;
  auto parsed = parse_rfc3339(start);
  if (!parsed.ok()) {
    error = fmt::format("{}.start: {}", where, parsed.error);
    return nullptr;
  }
  s.start = parsed.value;
  if (!read_number(config, "speed", where, s.speed, error)) return nullptr;
  if (s.speed <= 0) {
    error = where + ".speed: must be > 0 (simulated seconds per wall-clock second)";
    return nullptr;
  }
  if (!read_number(config, "jobs_per_hour", where, s.jobs_per_hour, error)) return nullptr;
  if (!read_duration(config, "duration", where, s.duration_ns, error)) return nullptr;
  if (config["id_prefix"]) s.id_prefix = config["id_prefix"].as<std::string>("replay");
  if (s.id_prefix.empty()) {
    error = where + ".id_prefix: must not be empty";
    return nullptr;
  }
  if (YAML::Node bursts = config["bursts"]) {
    if (!bursts.IsSequence()) {
      error = where + ".bursts: must be a list of {at, jobs, within}";
      return nullptr;
    }
    for (size_t i = 0; i < bursts.size(); ++i) {
      std::string bw = fmt::format("{}.bursts[{}]", where, i);
      Burst b;
      double jobs = 0;
      if (!bursts[i].IsMap() || !bursts[i]["jobs"]) {
        error = bw + ": needs at, jobs and within";
        return nullptr;
      }
      if (!read_duration(bursts[i], "at", bw, b.at_ns, error)) return nullptr;
      if (!read_number(bursts[i], "jobs", bw, jobs, error)) return nullptr;
      b.within_ns = 600'000'000'000LL;
      if (!read_duration(bursts[i], "within", bw, b.within_ns, error)) return nullptr;
      b.jobs = static_cast<int64_t>(jobs);
      if (b.jobs < 1 || static_cast<double>(b.jobs) != jobs) {
        error = bw + ".jobs: must be a whole number >= 1";
        return nullptr;
      }
      if (b.within_ns < b.jobs) {
        error = bw + ".within: shorter than one nanosecond per job";
        return nullptr;
      }
      s.bursts.push_back(b);
    }
  }
  YAML::Node bundles = config["bundles"];
  if (!bundles || !bundles.IsSequence() || bundles.size() == 0) {
    error = where + ".bundles: must be a non-empty list of bundle directories (the evidence each job replays)";
    return nullptr;
  }
  std::vector<Template> templates;
  StaticAdapter reader;
  for (size_t i = 0; i < bundles.size(); ++i) {
    std::string dir = bundles[i].as<std::string>("");
    std::vector<WorkloadAttempt> one;
    std::string e;
    if (!reader.by_job(dir, one, e) || one.empty()) {
      error = fmt::format("{}.bundles[{}]: {}", where, i, e.empty() ? "no workload in " + dir : e);
      return nullptr;
    }
    templates.push_back({dir, std::move(one.front().context)});
  }
  auto adapter = std::make_unique<ReplayAdapter>(std::move(s), std::move(templates));
  if (adapter->total_jobs() == 0) {
    error = where + ": the schedule releases no job (set jobs_per_hour with duration, or bursts)";
    return nullptr;
  }
  return adapter;
}

int64_t ReplayAdapter::total_jobs() const {
  int64_t n = steady_jobs_;
  for (const auto& b : schedule_.bursts) n += b.jobs;
  return n;
}

TimeNs ReplayAdapter::last_release() const {
  TimeNs last = std::numeric_limits<TimeNs>::min();
  if (steady_jobs_ > 0) last = schedule_.start + steady_jobs_ * steady_interval_ns_;
  for (const auto& b : schedule_.bursts)
    last = std::max(last, schedule_.start + b.at_ns + (b.jobs - 1) * (b.within_ns / b.jobs));
  return last;
}

TimeNs ReplayAdapter::now() const {
  std::call_once(clock_started_, [this] { wall_origin_ = std::chrono::steady_clock::now(); });
  double wall_ns = std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - wall_origin_).count();
  return schedule_.start + static_cast<int64_t>(wall_ns * schedule_.speed);
}

TimeNs ReplayAdapter::reported_end(const WorkloadAttempt& attempt) const {
  auto it = attempt.context.labels.find(kReleasedLabel);
  if (it == attempt.context.labels.end()) return attempt.context.end;
  try {
    return std::stoll(it->second);
  } catch (...) {
    return attempt.context.end;
  }
}

std::string ReplayAdapter::id_of(const Release& r) const {
  if (r.source < 0) return fmt::format("{}-{:0{}}", schedule_.id_prefix, r.index + 1, std::max(7, digits(steady_jobs_)));
  const Burst& b = schedule_.bursts[static_cast<size_t>(r.source)];
  return fmt::format("{}-b{}-{:0{}}", schedule_.id_prefix, r.source + 1, r.index + 1, std::max(6, digits(b.jobs)));
}

std::vector<ReplayAdapter::Release> ReplayAdapter::releases(TimeNs from, TimeNs to, size_t limit, bool& more) const {
  std::vector<Release> out;
  more = false;
  if (from > to || limit == 0) {
    more = limit == 0 && from <= to;
    return out;
  }
  auto take = [&](TimeNs first, int64_t step, int64_t n, int source) {
    int64_t lo = first_at_or_after(first, step, n, from);
    int64_t hi = end_at_or_before(first, step, n, to);
    if (hi <= lo) return;
    // Each source is ordered by time and, within a source, ids grow with time: the first `limit`
    // of each source contain the first `limit` of the merge.
    if (static_cast<uint64_t>(hi - lo) > limit) {
      hi = lo + static_cast<int64_t>(limit);
      more = true;
    }
    for (int64_t i = lo; i < hi; ++i) out.push_back({first + i * step, source, i});
  };
  if (steady_jobs_ > 0) take(schedule_.start + steady_interval_ns_, steady_interval_ns_, steady_jobs_, -1);
  for (size_t b = 0; b < schedule_.bursts.size(); ++b) {
    const Burst& burst = schedule_.bursts[b];
    take(schedule_.start + burst.at_ns, burst.within_ns / burst.jobs, burst.jobs, static_cast<int>(b));
  }
  std::vector<std::pair<std::tuple<TimeNs, std::string>, size_t>> keyed;
  keyed.reserve(out.size());
  for (size_t i = 0; i < out.size(); ++i) keyed.push_back({{out[i].at, id_of(out[i])}, i});
  std::sort(keyed.begin(), keyed.end());
  std::vector<Release> sorted;
  sorted.reserve(std::min(limit, keyed.size()));
  for (const auto& k : keyed) {
    if (sorted.size() == limit) {
      more = true;
      break;
    }
    sorted.push_back(out[k.second]);
  }
  return sorted;
}

WorkloadAttempt ReplayAdapter::attempt_of(const Release& r) const {
  // Steady job k and burst job j take templates in turn (the burst shifted by its index, so two
  // bursts do not start on the same template).
  size_t n = templates_.size();
  size_t t = r.source < 0 ? static_cast<size_t>(r.index) % n : static_cast<size_t>(r.index + r.source) % n;
  const Template& tpl = templates_[t];
  WorkloadAttempt a;
  a.context = tpl.context;  // keeps the bundle-directory label the pipeline reads the evidence by
  a.context.labels[kTemplateLabel] = tpl.context.id;
  a.context.labels[kReleasedLabel] = std::to_string(r.at);
  a.context.id = id_of(r);
  return a;
}

bool ReplayAdapter::ended_between(TimeNs from, TimeNs to, std::vector<WorkloadAttempt>& out, std::string& error) {
  bool more = false;
  return ended_between_limited(from, to, std::numeric_limits<size_t>::max(), out, more, error);
}

bool ReplayAdapter::ended_between_limited(TimeNs from, TimeNs to, size_t limit, std::vector<WorkloadAttempt>& out,
                                          bool& more, std::string& error) {
  error.clear();
  if (from == kNoTime) from = std::numeric_limits<TimeNs>::min() + 1;
  if (to == kNoTime) to = now();
  for (const auto& r : releases(from, to, limit, more)) out.push_back(attempt_of(r));
  return true;
}

bool ReplayAdapter::lookup(const std::string& job_id, TimeNs& released, size_t& template_index) const {
  std::string prefix = schedule_.id_prefix + "-";
  if (job_id.compare(0, prefix.size(), prefix) != 0) return false;
  std::string rest = job_id.substr(prefix.size());
  Release r{0, -1, 0};
  try {
    size_t used = 0;
    if (!rest.empty() && rest[0] == 'b') {
      size_t dash = rest.find('-');
      if (dash == std::string::npos) return false;
      int b = std::stoi(rest.substr(1, dash - 1), &used);
      if (used != dash - 1 || b < 1 || static_cast<size_t>(b) > schedule_.bursts.size()) return false;
      int64_t j = std::stoll(rest.substr(dash + 1), &used);
      const Burst& burst = schedule_.bursts[static_cast<size_t>(b - 1)];
      if (used != rest.size() - dash - 1 || j < 1 || j > burst.jobs) return false;
      r = {schedule_.start + burst.at_ns + (j - 1) * (burst.within_ns / burst.jobs), b - 1, j - 1};
    } else {
      int64_t k = std::stoll(rest, &used);
      if (used != rest.size() || k < 1 || k > steady_jobs_) return false;
      r = {schedule_.start + k * steady_interval_ns_, -1, k - 1};
    }
  } catch (...) {
    return false;
  }
  if (id_of(r) != job_id) return false;  // e.g. not zero-padded as issued
  released = r.at;
  size_t n = templates_.size();
  template_index = r.source < 0 ? static_cast<size_t>(r.index) % n : static_cast<size_t>(r.index + r.source) % n;
  return true;
}

bool ReplayAdapter::by_job(const std::string& job_id, std::vector<WorkloadAttempt>& out, std::string& error) {
  TimeNs released = 0;
  size_t t = 0;
  if (!lookup(job_id, released, t)) {
    error = fmt::format("job {} is not in the replay schedule (ids: {}-<k>, {}-b<burst>-<j>)", job_id,
                        schedule_.id_prefix, schedule_.id_prefix);
    return false;
  }
  bool more = false;
  std::vector<WorkloadAttempt> at;
  ended_between_limited(released, released, std::numeric_limits<size_t>::max(), at, more, error);
  for (auto& a : at)
    if (a.context.id == job_id) out.push_back(std::move(a));
  return true;
}

AdapterRegistrar replay_adapter_registrar("replay", [](const YAML::Node& config, std::string& error) -> std::unique_ptr<Adapter> {
  return ReplayAdapter::create(config, error);
});

}  // namespace attribution::blueprint
