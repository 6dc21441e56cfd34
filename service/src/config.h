// Service configuration: defaults < YAML config file < ATTRIBUTION_* environment < flags.
// How each layer is found and read is shared with the blueprint (attribution/edge/config_layers.h).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "attribution/edge/config_layers.h"

namespace attribution::service {

struct Config {
  std::string listen = "127.0.0.1:8000";
  std::string data_dir;   // default: $STATE_DIRECTORY, else $XDG_STATE_HOME/attribution-service, ...
  std::string rules_dir;  // default: edge::default_rules_location() (the blueprint's search)
  std::string auth_token;
  std::string auth_token_file;
  std::string tls_cert;
  std::string tls_key;
  std::string port_file;  // written with the bound port once listening (for tests and scripts)
  int threads = 32;                    // HTTP connection threads
  int connection_queue = 256;          // accepted connections waiting for a thread
  int work_concurrency = 0;            // requests doing ingest/attribute work at once (0 = cores)
  int work_queue = 64;                 // requests waiting for a work slot before 429
  uint64_t max_body_bytes = 64ull << 20;
  uint64_t max_line_bytes = 256ull << 10;
  uint64_t max_observations_per_session = 20000000;
  uint64_t max_sessions = 10000;
  uint64_t session_ttl_s = 7 * 24 * 3600;
  uint64_t request_timeout_s = 120;    // whole request, including a slowly sent body
  uint64_t read_timeout_s = 15;        // per socket read
  uint64_t retry_after_s = 1;
  // Session store: "" (SQLite at DATA_DIR/sessions.db), "sqlite:PATH" or a postgres:// URI.
  std::string store;
  int store_pool_size = 8;             // PostgreSQL connections per replica
  int store_pool_wait_ms = 2000;       // wait for a free connection before 503 store_busy
  int store_connect_timeout_s = 60;    // at start, keep trying an unreachable PostgreSQL this long
  std::string log_level = "info";
  std::string log_format = "json";     // json | text
};

struct ConfigKey {
  const char* name;  // snake_case; flags use --kebab-case, env ATTRIBUTION_UPPER_CASE
  const char* help;
  bool secret;
};
const std::vector<ConfigKey>& config_keys();

// Sets one key from its string form. Returns false with `error` on an unknown key or a bad value.
bool config_set(Config& config, const std::string& key, const std::string& value, std::string& error);
std::string config_get(const Config& config, const std::string& key);

// Applies a YAML mapping (keys in snake_case or kebab-case). Errors name the file.
bool config_apply_yaml(Config& config, const std::string& yaml_text, const std::string& name,
                       std::string& error);
// Applies an already parsed mapping (edge::read_config_file); values get ${VAR} expansion from
// `expand_from` when given.
bool config_apply_node(Config& config, const YAML::Node& root, const std::string& name, std::string& error,
                       const edge::Environment* expand_from = nullptr);
// Applies ATTRIBUTION_<KEY> variables from `env` (e.g. environ).
bool config_apply_env(Config& config, char** env, std::string& error);
// Effective configuration as YAML, secrets redacted.
std::string config_dump(const Config& config);

// Fills unset defaults (data_dir, rules_dir, work_concurrency) given the binary's path.
void config_finalize(Config& config, const std::string& argv0);

}  // namespace attribution::service
