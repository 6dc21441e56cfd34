// `run` and `watch` subcommands (SPEC §9). Flags are the top layer of the configuration: each one
// sets a dotted config key (see run/config.h), so `--print-config` shows their effect.
#include <CLI/CLI.hpp>
#include <iostream>

#include "cli.h"
#include "commands/analyze.h"
#include "run/run_cmd.h"

namespace attribution::blueprint {
namespace {

struct CommonFlags {
  std::string adapter, db, postgres, jsonl, webhook, cluster, rules, output, threads;
  std::vector<std::string> sets;
};

void add_common(CLI::App* c, RunCommandOptions& o, CommonFlags& f) {
  c->add_option("-c,--config", o.config_file, "YAML config file (default: $ATTRIBUTION_CONFIG)");
  c->add_option("--set", f.sets, "Override a config key: --set stores.sqlite.path=/x.sqlite (repeatable)");
  c->add_option("--adapter", f.adapter, "Adapter: static (bundles), slurm, kueue, replay (a simulated schedule)");
  c->add_option("--bundle", o.bundles, "Bundle directory for the static adapter (repeatable)");
  c->add_option("--db", f.db, "SQLite store path (stores.sqlite.path)");
  c->add_option("--postgres", f.postgres, "PostgreSQL DSN (stores.postgres.dsn)");
  c->add_option("--jsonl", f.jsonl, "Write verdicts as JSON lines to a file, or - for stdout (stores.jsonl.path)");
  c->add_option("--webhook", f.webhook, "POST each verdict to this URL (stores.webhook.url)");
  c->add_option("--cluster", f.cluster, "Cluster name stored with each run");
  c->add_option("--rules", f.rules, "Rules directory or file");
  c->add_option("-o,--output", f.output, "text (default) or json")->check(CLI::IsMember({"json", "text"}));
  c->add_option("-j,--threads", f.threads, "Scanner threads for bundles (default: all cores)");
  c->add_flag("--print-config", o.print_config, "Print the effective configuration (secrets redacted) and exit");
  c->add_option("--progress", o.progress, "Progress display on stderr: auto (TTY), always, never")
      ->check(CLI::IsMember({"auto", "always", "never"}));
}

bool apply_flags(RunCommandOptions& o, const CommonFlags& f, std::ostream& err) {
  auto set = [&](const char* key, const std::string& v) {
    if (!v.empty()) o.flags.emplace_back(key, v);
  };
  set("adapter", f.adapter);
  if (f.adapter.empty() && !o.bundles.empty()) o.flags.emplace_back("adapter", "static");
  set("stores.sqlite.path", f.db);
  set("stores.postgres.dsn", f.postgres);
  set("stores.jsonl.path", f.jsonl);
  set("stores.webhook.url", f.webhook);
  set("cluster", f.cluster);
  set("rules", f.rules);
  set("output", f.output);
  set("threads", f.threads);
  for (const auto& s : f.sets) {
    auto eq = s.find('=');
    if (eq == std::string::npos || eq == 0) {
      err << "error: --set " << s << ": expected key=value\n";
      return false;
    }
    o.flags.emplace_back(s.substr(0, eq), s.substr(eq + 1));
  }
  return true;
}

void setup_run_commands(CLI::App& app, int& exit_code) {
  static RunCommandOptions run;
  static CommonFlags run_flags;
  auto* r = app.add_subcommand("run", "Analyse workloads once (bundles, a job id or a time range) into the stores");
  add_common(r, run, run_flags);
  r->add_option("--job", run.jobs, "Job id (repeatable); arrays and het jobs expand to every task/component");
  r->add_option("--since", run.since, "Jobs that ended in the last DURATION (30m, 2h, 1d)");
  r->add_option("--from", run.from, "Jobs that ended at or after this RFC 3339 time");
  r->add_option("--to", run.to, "Jobs that ended at or before this RFC 3339 time (default: now)");
  r->callback([&exit_code] {
    if (!apply_flags(run, run_flags, std::cerr)) {
      exit_code = kExitUsage;
      return;
    }
    exit_code = run_run(run, std::cout, std::cerr);
  });

  static RunCommandOptions watch;
  static CommonFlags watch_flags;
  static std::string interval, cursor, since, lookback, concurrency, backlog, report_every, metrics_file;
  auto* w = app.add_subcommand("watch", "Follow newly finished jobs (persistent cursor in the store)");
  add_common(w, watch, watch_flags);
  w->add_option("--interval", interval, "Poll interval (watch.interval, default 60s)");
  w->add_option("--cursor", cursor, "Cursor name (watch.cursor, default <adapter>:<cluster>)");
  w->add_option("--since", since, "On first start, also take jobs that ended this long ago (watch.since)");
  w->add_option("--lookback", lookback, "Re-check this far behind the cursor for late records (watch.lookback, default 10m)");
  w->add_option("--concurrency", concurrency,
                 "Attempts attributed at the same time (watch.concurrency, default min(4, cores); each gets "
                 "cores/concurrency scanner threads unless --threads is set)");
  w->add_option("--backlog", backlog,
                "Most attempts held at once, taken and not yet stored (watch.backlog, default 256); when more have "
                "ended, the rest wait at the adapter and are polled as soon as the backlog drains, none dropped");
  w->add_option("--report-every", report_every, "Progress log line interval (watch.report, default 30s)");
  w->add_option("--metrics-file", metrics_file,
                "Write Prometheus text counters here at each report (watch.metrics_file; node_exporter textfile)");
  w->add_flag("--once", watch.once, "Poll once and exit");
  w->add_option("--max-polls", watch.max_polls, "Exit after N polls (0 = run until SIGINT/SIGTERM)");
  w->callback([&exit_code] {
    if (!apply_flags(watch, watch_flags, std::cerr)) {
      exit_code = kExitUsage;
      return;
    }
    if (!interval.empty()) watch.flags.emplace_back("watch.interval", interval);
    if (!cursor.empty()) watch.flags.emplace_back("watch.cursor", cursor);
    if (!since.empty()) watch.flags.emplace_back("watch.since", since);
    if (!lookback.empty()) watch.flags.emplace_back("watch.lookback", lookback);
    if (!concurrency.empty()) watch.flags.emplace_back("watch.concurrency", concurrency);
    if (!backlog.empty()) watch.flags.emplace_back("watch.backlog", backlog);
    if (!report_every.empty()) watch.flags.emplace_back("watch.report", report_every);
    if (!metrics_file.empty()) watch.flags.emplace_back("watch.metrics_file", metrics_file);
    exit_code = run_watch(watch, std::cout, std::cerr);
  });
}

CliRegistrar run_registrar("run", &setup_run_commands);

}  // namespace
}  // namespace attribution::blueprint
