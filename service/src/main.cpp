// attribution-service: the REST service that owns the engine (SPEC §8).
//
//   attribution-service --listen 127.0.0.1:8000 --data-dir DIR --rules DIR [--config FILE]
//
// Configuration precedence: flags > ATTRIBUTION_* environment > config file > defaults, each layer
// found and read as the blueprint does (attribution/edge/config_layers.h). Rules: --rules, else the
// shared default search (attribution/edge/rules_dir.h), so a binary run from its build tree finds
// the checkout's rules/.
#include <CLI/CLI.hpp>
#include <pthread.h>

#include <csignal>
#include <cstdio>
#include <iostream>
#include <thread>

#include "attribution/edge/config_layers.h"
#include "attribution/edge/rules_dir.h"
#include "attribution/engine.h"
#include "config.h"
#include "log.h"
#include "server.h"

extern char** environ;


int main(int argc, char** argv) {
  using namespace attribution::service;
  Config cfg;
  CLI::App app{"attribution-service: REST service that owns the attribution engine"};
  app.set_version_flag("--version", std::string(attribution::engine_version()));
  std::string config_file;
  app.add_option("--config", config_file, "YAML configuration file (also ATTRIBUTION_CONFIG)");
  bool print_config = false;
  app.add_flag("--print-config", print_config, "print the effective configuration and exit");
  std::map<std::string, std::string> flag_values;
  std::map<std::string, CLI::Option*> options;
  for (const auto& k : config_keys()) {
    std::string flag = "--";
    for (const char* p = k.name; *p; ++p) flag += *p == '_' ? '-' : *p;
    if (std::string(k.name) == "rules_dir") flag += ",--rules";
    options[k.name] = app.add_option(flag, flag_values[k.name], k.help);
  }
  CLI11_PARSE(app, argc, argv);

  std::string error;
  const auto environment = attribution::edge::process_environment();
  config_file = attribution::edge::config_file_location(config_file, environment);
  if (!config_file.empty()) {
    YAML::Node root;
    if (!attribution::edge::read_config_file(config_file, environment, root, error) ||
        !config_apply_node(cfg, root, config_file, error)) {
      std::fprintf(stderr, "attribution-service: %s\n", error.c_str());
      return 2;
    }
  }
  if (!config_apply_env(cfg, environ, error)) {
    std::fprintf(stderr, "attribution-service: %s\n", error.c_str());
    return 2;
  }
  for (const auto& [key, opt] : options) {
    if (opt->count() == 0) continue;
    if (!config_set(cfg, key, flag_values[key], error)) {
      std::fprintf(stderr, "attribution-service: --%s\n", error.c_str());
      return 2;
    }
  }
  config_finalize(cfg, argv[0]);
  if (print_config) {
    std::cout << config_dump(cfg);
    return 0;
  }
  set_log_level(*parse_log_level(cfg.log_level));
  set_log_json(cfg.log_format == "json");

  std::vector<std::string> rule_errors, rule_warnings;
  auto rules = attribution::edge::load_rules_from(cfg.rules_dir, rule_errors, &rule_warnings);
  if (!rules) {
    std::string joined;
    for (const auto& e : rule_errors) joined += (joined.empty() ? "" : "\n") + e;
    log(LogLevel::kError, "rules failed to load", {{"rules_dir", cfg.rules_dir}, {"error", joined}});
    return 1;
  }
  for (const auto& w : rule_warnings) log(LogLevel::kWarn, "rules warning", {{"warning", w}});
  auto info = attribution::describe(*rules);
  log(LogLevel::kInfo, "rules loaded",
      {{"rules_dir", cfg.rules_dir}, {"digest", info.digest}, {"files", std::to_string(info.files)},
       {"extractors", std::to_string(info.extractors)}});

  std::signal(SIGPIPE, SIG_IGN);
  // SIGTERM/SIGINT are taken synchronously by one thread (sigwait), not in a signal handler.
  sigset_t sigs;
  sigemptyset(&sigs);
  sigaddset(&sigs, SIGTERM);
  sigaddset(&sigs, SIGINT);
  pthread_sigmask(SIG_BLOCK, &sigs, nullptr);
  Service service(cfg, rules);
  if (!service.init(error)) {
    log(LogLevel::kError, "cannot start", {{"error", error}});
    return 1;
  }
  std::thread([&service, sigs] {
    int sig = 0;
    sigwait(&sigs, &sig);
    log(LogLevel::kInfo, "signal received; stopping", {{"signal", std::to_string(sig)}});
    service.stop();
  }).detach();
  bool ok = service.run();
  service.stop();
  log(LogLevel::kInfo, "stopped");
  return ok ? 0 : 1;
}
