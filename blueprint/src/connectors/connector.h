// The connector interfaces of the blueprint (SPEC §9), one folder per connector under
// connectors/<name>/ (Envoy-extension style), registered by name:
//
//   Adapter   — which workloads ended, and each attempt's ExecutionContext (slurm, kueue, static).
//   Collector — evidence for one attempt (files, loki, k8s_logs, prometheus), streamed into an
//               EvidenceSink. A collector never throws and never aborts a run: it returns a
//               ConnectorReport (ok | empty | error, reason, counts, bytes).
//
// Connectors own their I/O (processes, HTTP, files); the engine only sees text and observations.
// Thread-safety: a connector instance is used by one run at a time.
#pragma once

#include <yaml-cpp/yaml.h>

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "attribution/engine.h"

namespace attribution::blueprint {

// Where collected evidence goes. text(): a block of whole lines of one source (first_line is the
// 1-based number of its first line in that source). observation(): one observation (a Loki entry
// with its own timestamp, a metric sample).
class EvidenceSink {
 public:
  virtual ~EvidenceSink() = default;
  virtual void text(const TextSource& source, std::string_view block, uint64_t first_line) = 0;
  virtual void observation(const Observation& observation) = 0;
};

// A workload attempt found by an adapter, plus evidence it knows about (e.g. Slurm's StdOut/StdErr
// paths) that the files collector should read.
struct WorkloadAttempt {
  ExecutionContext context;
  std::vector<std::pair<std::string, TextSource>> evidence_files;  // path → defaults
  // What the adapter says about this attempt's discovery (the exec adapter: its command's exit,
  // stderr, skipped lines); the run adds them to the attempt's connector_reports.
  std::vector<ConnectorReport> reports;
};

class Adapter {
 public:
  virtual ~Adapter() = default;
  virtual std::string name() const = 0;
  // Attempts of one job id (all attempts, oldest first; arrays and het jobs expand to several).
  virtual bool by_job(const std::string& job_id, std::vector<WorkloadAttempt>& out, std::string& error) = 0;
  // Attempts that ended in [from, to] (by reported_end()).
  virtual bool ended_between(TimeNs from, TimeNs to, std::vector<WorkloadAttempt>& out, std::string& error) = 0;

  // The following have defaults right for a live scheduler; the replay adapter (connectors/replay/)
  // overrides them to release recorded jobs on a simulated clock.
  //
  // The adapter's clock: "now" for `watch` polls and `run --since`. Default: the system clock.
  virtual TimeNs now() const;
  // When an attempt became known as ended; ended_between() selects by it and `watch` orders its
  // work and keeps its cursor by it. Default: the attempt's own end.
  virtual TimeNs reported_end(const WorkloadAttempt& attempt) const { return attempt.context.end; }
  // The earliest-ending attempts of ended_between(from, to), at most `limit` of them, ordered by
  // (reported_end, id, attempt); `more` is set when some were left out. `watch` uses it to hold a
  // bounded backlog. Default: the whole answer of ended_between(), sorted and cut (so the memory of
  // one whole answer); adapters that can stop early override it.
  virtual bool ended_between_limited(TimeNs from, TimeNs to, size_t limit, std::vector<WorkloadAttempt>& out,
                                     bool& more, std::string& error);
  // True when no attempt will end after `t` (a replay's schedule is over): `watch` then exits once
  // it has taken everything. Default: false (a live scheduler always may).
  virtual bool schedule_ended(TimeNs /*t*/) const { return false; }
};

class Collector {
 public:
  virtual ~Collector() = default;
  virtual std::string name() const = 0;  // e.g. "loki/syslog", used in connector_reports
  virtual ConnectorReport collect(const WorkloadAttempt& attempt, EvidenceSink& sink) = 0;
};

// Factories take the connector's YAML config block (config errors name the key).
using AdapterFactory = std::function<std::unique_ptr<Adapter>(const YAML::Node& config, std::string& error)>;
using CollectorFactory = std::function<std::unique_ptr<Collector>(const YAML::Node& config, std::string& error)>;

std::map<std::string, AdapterFactory>& adapter_registry();
std::map<std::string, CollectorFactory>& collector_registry();

struct AdapterRegistrar {
  AdapterRegistrar(const char* name, AdapterFactory f) { adapter_registry()[name] = std::move(f); }
};
struct CollectorRegistrar {
  CollectorRegistrar(const char* name, CollectorFactory f) { collector_registry()[name] = std::move(f); }
};

}  // namespace attribution::blueprint
