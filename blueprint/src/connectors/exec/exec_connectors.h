// The exec connectors: a site's own scheduler or telemetry backend as an external command
// (docs/connectors.md "exec", schema api/exec-connector.schema.json).
//
//   exec adapter   runs `command` and reads JSON lines of execution contexts (ended jobs).
//                  Asked for one job: ATTRIBUTION_QUERY=job, ATTRIBUTION_QUERY_JOB=<id>; for a
//                  time range: ATTRIBUTION_QUERY=range, ATTRIBUTION_QUERY_FROM/_TO (RFC 3339) and
//                  _FROM_S/_TO_S (Unix seconds). {job_id} {from} {to} {from_s} {to_s} in the
//                  arguments are replaced too. Contexts ending outside a range are dropped.
//   exec collector runs `command` once per attempt (once per node, rank or day when its arguments
//                  use {node}, {rank} or {day}) and reads JSON lines of observations or raw
//                  text blocks (format: jsonl), or takes its whole stdout as the text of one
//                  source (format: text). The attempt comes as ATTRIBUTION_JOB_* variables
//                  (ID, ATTEMPT, NAME, USER, QUEUE, CLUSTER, SCHEDULER, STATE, NODES (comma-
//                  separated), START, END, START_S, END_S, WINDOW_START, WINDOW_END,
//                  WINDOW_START_S, WINDOW_END_S (the window widened by margin_s), CONTEXT (JSON))
//                  and as the collectors' templates in the arguments ({job}, {nodes}, {start_s}, ...).
//
// Both: `command` is a list (argv, no shell) or a string (run by /bin/sh -c), run by the
// blueprint's process runner (process/process_runner.h); `env` adds variables, `cwd` sets the
// directory, `timeout_s` (default 60) bounds the run — then the command's whole process group is
// killed (SIGTERM, SIGKILL 2 s later). A failure never aborts the run: a non-zero exit, a signal, a
// timeout or a line that breaks the schema makes the connector report `error`, with the command,
// the exit, the first errors ("line 3: end: not an RFC 3339 time") and the command's stderr
// (bounded by max_stderr_bytes, default 2048: first and last half); valid lines are still used.
// Thread-safety: one instance per run (connector.h).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "connectors/connector.h"
#include "process/process_runner.h"
#include "connectors/files/template.h"

namespace attribution::blueprint {

struct ExecCommandConfig {
  std::string name;                          // report name ("exec", "exec/lsf")
  std::vector<std::string> command;          // argv (a string command becomes /bin/sh -c STRING)
  std::map<std::string, std::string> env;
  std::string cwd;
  process::Limits limits;                    // timeout_s, max_output_bytes, max_line_bytes, max_stderr_bytes
  size_t max_errors = 5;                     // schema errors listed in a report
};

struct ExecCollectorConfig {
  ExecCommandConfig exec;
  bool raw_text = false;                     // format: text
  TextSource text_source;                    // format: text — the source of the whole stdout
  int64_t margin_s = 300;
};

bool parse_exec_command_config(const YAML::Node& config, const std::string& default_name, ExecCommandConfig& out,
                               std::string& error);
bool parse_exec_collector_config(const YAML::Node& config, ExecCollectorConfig& out, std::string& error);

class ExecAdapter : public Adapter {
 public:
  explicit ExecAdapter(ExecCommandConfig config) : config_(std::move(config)) {}
  std::string name() const override { return config_.name; }
  bool by_job(const std::string& job_id, std::vector<WorkloadAttempt>& out, std::string& error) override;
  bool ended_between(TimeNs from, TimeNs to, std::vector<WorkloadAttempt>& out, std::string& error) override;

 private:
  // Runs the command; attempts get the run's report. False (with error) only when it failed and
  // gave no context at all.
  bool run(const std::map<std::string, std::string>& vars, TimeNs from, TimeNs to, std::vector<WorkloadAttempt>& out,
           std::string& error);
  ExecCommandConfig config_;
};

class ExecCollector : public Collector {
 public:
  explicit ExecCollector(ExecCollectorConfig config) : config_(std::move(config)) {}
  std::string name() const override { return config_.exec.name; }
  // Once, or once per node / rank / day when the command's arguments use {node}, {rank} or {day}
  // (ATTRIBUTION_NODE / _RANK / _DAY in the environment; with format: text each run's stdout is that
  // node's source). The report sums the runs and names each failed one.
  ConnectorReport collect(const WorkloadAttempt& attempt, EvidenceSink& sink) override;

 private:
  ConnectorReport collect_one(const WorkloadAttempt& attempt, const TemplateBinding& binding, bool per_item,
                              EvidenceSink& sink);
  ExecCollectorConfig config_;
};

// The ATTRIBUTION_JOB_* variables an exec collector's command gets for `context`.
std::map<std::string, std::string> exec_job_environment(const ExecutionContext& context, int64_t margin_s);

}  // namespace attribution::blueprint
