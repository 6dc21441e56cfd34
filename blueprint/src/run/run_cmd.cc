#include "run/run_cmd.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <iostream>
#include <set>
#include <thread>

#include "attribution/codec.h"
#include "attribution/edge/config_layers.h"
#include "commands/analyze.h"
#include "run/config.h"
#include "run/pipeline.h"
#include "run/watch.h"

namespace attribution::blueprint {
namespace {

std::atomic<bool> g_stop{false};
void on_signal(int) { g_stop = true; }

struct Loaded {
  LoadedConfig config;
  std::string output = "text";
  bool progress = false;
};

int load(const RunCommandOptions& options, Loaded& loaded, std::ostream& out, std::ostream& err, bool& done) {
  done = false;
  ConfigLayers layers;
  layers.env = edge::process_environment();
  layers.file = edge::config_file_location(options.config_file, layers.env);
  layers.flags = options.flags;
  std::vector<std::string> errors;
  if (!load_config(layers, loaded.config, errors)) {
    for (const auto& e : errors) err << "error: " << e << "\n";
    done = true;
    return kExitUsage;
  }
  if (options.print_config) {
    out << redacted_config(loaded.config.root);
    done = true;
    return kExitOk;
  }
  const auto& root = loaded.config.root;
  loaded.output = root["output"] ? root["output"].as<std::string>("text") : "text";
  bool tty = isatty(STDERR_FILENO) != 0;
  if (options.progress == "always") loaded.progress = true;
  else if (options.progress == "never") loaded.progress = false;
  else loaded.progress = tty && (!root["progress"] || root["progress"].as<bool>(true));
  return kExitOk;
}

nlohmann::json run_json(const AttemptOutcome& o) {
  nlohmann::json j;
  j["job_id"] = o.context.id;
  j["attempt"] = o.context.attempt;
  j["cluster"] = o.context.cluster;
  j["scheduler"] = o.context.scheduler;
  j["state"] = o.context.state;
  j["outcome"] = o.verdict.outcome;
  j["domain"] = o.verdict.domain;
  j["quality"] = o.verdict.quality;
  j["root_symptom"] = o.verdict.root_symptom;
  j["root_node"] = o.verdict.root_node;
  j["lines"] = o.lines;
  j["bytes"] = o.bytes;
  nlohmann::json stored = nlohmann::json::object();
  for (const auto& [s, id] : o.stored) stored[s] = id;
  j["stored"] = stored;
  j["store_errors"] = o.store_errors;
  j["context"] = nlohmann::json::parse(context_to_json(o.context), nullptr, false);
  j["verdict"] = nlohmann::json::parse(o.verdict.json, nullptr, false);
  return j;
}

std::string run_line(const AttemptOutcome& o) {
  std::string where;
  for (const auto& [s, id] : o.stored) where += fmt::format(" {}{}", s, id ? fmt::format("#{}", id) : "");
  std::string root = o.verdict.root_symptom.empty()
                         ? ""
                         : fmt::format(" root={}{}", o.verdict.root_symptom,
                                       o.verdict.root_node.empty() ? "" : "@" + o.verdict.root_node);
  std::string failed;
  for (const auto& r : o.reports)
    if (r.status == "error") failed += fmt::format(" [{} error: {}]", r.connector, r.reason);
  return fmt::format("{}{} {} {} {} ({}, {}){}{}{}{}\n", o.context.id,
                     o.context.attempt ? fmt::format(" attempt {}", o.context.attempt) : "", o.context.state,
                     o.verdict.outcome, o.verdict.domain, o.verdict.quality, o.verdict.root_node.empty() ? "-" : o.verdict.root_node,
                     root, failed, where.empty() ? "" : " →", where);
}

class Progress {
 public:
  Progress(bool on, std::ostream& err) : on_(on), err_(err) {}
  void show(size_t i, size_t n, const std::string& what) {
    if (!on_) return;
    err_ << fmt::format("\r\033[K[{}/{}] {}", i, n, what) << std::flush;
  }
  void clear() {
    if (on_) err_ << "\r\033[K" << std::flush;
  }

 private:
  bool on_;
  std::ostream& err_;
};


}  // namespace

std::string encode_cursor(const WatchCursor& cursor) {
  nlohmann::json j;
  j["end_ns"] = cursor.end;
  j["end"] = cursor.end == kNoTime ? "" : format_rfc3339_ns(cursor.end);
  j["done"] = cursor.done;
  j["floor_ns"] = cursor.floor;
  return j.dump();
}

bool decode_cursor(const std::string& text, WatchCursor& cursor) {
  auto j = nlohmann::json::parse(text, nullptr, false);
  if (!j.is_object() || !j.contains("end_ns") || !j["end_ns"].is_number_integer()) return false;
  cursor.end = j["end_ns"].get<int64_t>();
  cursor.done.clear();
  cursor.floor = j.contains("floor_ns") && j["floor_ns"].is_number_integer() ? j["floor_ns"].get<int64_t>() : cursor.end;
  if (j.contains("done") && j["done"].is_array())
    for (const auto& d : j["done"])
      if (d.is_string()) cursor.done.push_back(d.get<std::string>());
  return true;
}

int run_run(const RunCommandOptions& options, std::ostream& out, std::ostream& err) {
  Loaded loaded;
  bool done = false;
  int rc = load(options, loaded, out, err, done);
  if (done) return rc;
  PipelineSetup setup{loaded.config.root, loaded.config.name, options.bundles};
  std::vector<std::string> errors;
  auto pipeline = Pipeline::create(setup, true, errors);
  if (!pipeline) {
    for (const auto& e : errors) err << "error: " << e << "\n";
    return kExitUsage;
  }
  // Select attempts.
  std::vector<WorkloadAttempt> attempts;
  std::string error;
  bool have_range = !options.since.empty() || !options.from.empty() || !options.to.empty();
  if (pipeline->adapter_name() == "static" && options.bundles.empty() && !have_range) {
    err << "error: run --adapter static needs --bundle DIR (or adapters.static.bundles with a time range)\n";
    return kExitUsage;
  }
  if (!options.jobs.empty() && have_range) {
    err << "error: --job and --since/--from/--to are exclusive\n";
    return kExitUsage;
  }
  if (pipeline->adapter_name() == "static" && !have_range) {
    for (const auto& b : options.bundles) {
      if (!pipeline->adapter().by_job(b, attempts, error)) {
        err << "error: " << error << "\n";
        return kExitError;
      }
    }
  } else if (!options.jobs.empty()) {
    for (const auto& j : options.jobs) {
      if (!pipeline->adapter().by_job(j, attempts, error)) {
        err << "error: " << pipeline->adapter_name() << ": " << error << "\n";
        return kExitError;
      }
    }
  } else if (have_range) {
    TimeNs now = pipeline->adapter().now(), from = kNoTime, to = now;
    if (!options.since.empty()) {
      int64_t d = 0;
      if (!parse_duration_ns(options.since, d)) {
        err << "error: --since: not a duration (e.g. 30m, 2h, 1d): " << options.since << "\n";
        return kExitUsage;
      }
      from = now - d;
    }
    if (!options.from.empty()) {
      auto p = parse_rfc3339(options.from);
      if (!p.ok()) {
        err << "error: --from: " << p.error << "\n";
        return kExitUsage;
      }
      from = p.value;
    }
    if (!options.to.empty()) {
      auto p = parse_rfc3339(options.to);
      if (!p.ok()) {
        err << "error: --to: " << p.error << "\n";
        return kExitUsage;
      }
      to = p.value;
    }
    if (from == kNoTime) {
      err << "error: a time range needs --since or --from\n";
      return kExitUsage;
    }
    if (from > to) {
      err << "error: --from is after --to (or after now)\n";
      return kExitUsage;
    }
    if (!pipeline->adapter().ended_between(from, to, attempts, error)) {
      err << "error: " << pipeline->adapter_name() << ": " << error << "\n";
      return kExitError;
    }
  } else {
    err << "error: run needs --job ID or a time range (--since, --from/--to)\n";
    return kExitUsage;
  }

  Progress progress(loaded.progress && loaded.output == "text", err);
  bool json = loaded.output == "json";
  nlohmann::json runs = nlohmann::json::array();
  bool any_connector_failed = false, any_store_failed = false;
  uint64_t total_lines = 0;
  auto t0 = std::chrono::steady_clock::now();
  for (size_t i = 0; i < attempts.size(); ++i) {
    progress.show(i + 1, attempts.size(), fmt::format("job {} attempt {}", attempts[i].context.id, attempts[i].context.attempt));
    AttemptOutcome o = pipeline->process(attempts[i]);
    progress.clear();
    total_lines += o.lines;
    any_connector_failed |= o.connector_failed();
    any_store_failed |= !o.store_errors.empty();
    for (const auto& e : o.store_errors) err << "error: store " << e << "\n";
    if (json) runs.push_back(run_json(o));
    else out << run_line(o) << std::flush;
  }
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (json) {
    nlohmann::json doc;
    doc["apiVersion"] = "attribution/v1";
    doc["kind"] = "RunResult";
    doc["adapter"] = pipeline->adapter_name();
    doc["runs"] = runs;
    nlohmann::json stores = nlohmann::json::array();
    for (const auto& s : pipeline->stores()) stores.push_back(s->name());
    doc["stores"] = stores;
    out << doc.dump() << "\n";
  } else if (attempts.size() > 1 || attempts.empty()) {
    err << fmt::format("{} attempt(s) analysed in {:.2f}s\n", attempts.size(), secs);
  }
  if (attempts.empty()) {
    err << "warning: no workload attempts matched\n";
    return kExitNoData;
  }
  if (any_store_failed) return kExitError;
  if (any_connector_failed) return kExitPartial;
  if (total_lines == 0) {
    err << "warning: no evidence could be read for any attempt\n";
  }
  return kExitOk;
}

int run_watch(const RunCommandOptions& options, std::ostream& out, std::ostream& err) {
  Loaded loaded;
  bool done = false;
  int rc = load(options, loaded, out, err, done);
  if (done) return rc;
  const YAML::Node& root = loaded.config.root;
  WatchSettings settings = watch_settings(root);
  settings.once = options.once;
  settings.max_polls = options.max_polls;
  PipelineSetup setup{root, loaded.config.name, options.bundles};
  std::vector<std::string> errors;
  auto pipeline = Pipeline::create(setup, true, errors);
  if (!pipeline) {
    for (const auto& e : errors) err << "error: " << e << "\n";
    return kExitUsage;
  }
  std::signal(SIGINT, on_signal);
  std::signal(SIGTERM, on_signal);
  bool json = loaded.output == "json";
  auto emit = [&](const AttemptOutcome& o) {
    if (json) out << run_json(o).dump() << "\n" << std::flush;
    else out << run_line(o) << std::flush;
  };
  return run_watch_loop(*pipeline, settings, emit, err, g_stop);
}

}  // namespace attribution::blueprint
