// Configuration precedence, the same for both binaries (ECOSYSTEM.md §conventions):
//
//   flags  >  ATTRIBUTION_* environment  >  config file  >  defaults
//
// What is shared is how each layer is found and read; what keys exist stays with each binary
// (the service's flat keys in service/src/config.*, the blueprint's tree in blueprint/src/run/config.*):
//   - the config file: --config FILE, else $ATTRIBUTION_CONFIG (config_file_location);
//   - its text: YAML, errors as "FILE:LINE:COLUMN: message", ${VAR} in scalar values replaced by
//     the variable's value (empty when unset), as Falco does (read_config_file);
//   - environment names: key "a.b_c" is ATTRIBUTION_A__B_C — upper case, a dot becomes "__"
//     (env_var_for_key, config_key_for_env_var).
//
// Thread-safety: pure functions over their arguments, except process_environment() (reads environ)
// and read_config_file (reads a file).
#pragma once

#include <yaml-cpp/yaml.h>

#include <map>
#include <optional>
#include <string>

namespace attribution::edge {

using Environment = std::map<std::string, std::string>;

// Snapshot of the process environment (name → value).
Environment process_environment();

// The prefix every configuration variable carries.
inline constexpr const char* kEnvPrefix = "ATTRIBUTION_";

// --config when given, else $ATTRIBUTION_CONFIG when set and non-empty, else "" (no file).
std::string config_file_location(const std::string& flag_value, const Environment& env);

// Reads `path` as a YAML document into `out` (a null document becomes an empty mapping) and
// expands ${VAR} in every scalar value from `env`. Returns false with `error`: "PATH: cannot
// read" or "PATH:LINE:COLUMN: message".
bool read_config_file(const std::string& path, const Environment& env, YAML::Node& out, std::string& error);

// "${HOME}/x" → "/root/x": every ${NAME} replaced by env[NAME] ("" when unset); an unclosed "${" is kept.
std::string expand_env_references(const std::string& value, const Environment& env);

// "stores.postgres.dsn" → "ATTRIBUTION_STORES__POSTGRES__DSN"; "rules_dir" → "ATTRIBUTION_RULES_DIR".
std::string env_var_for_key(const std::string& dotted_key);

// The reverse: "ATTRIBUTION_STORES__POSTGRES__DSN" → "stores.postgres.dsn"; nullopt when the name
// lacks the prefix or has nothing after it.
std::optional<std::string> config_key_for_env_var(const std::string& name);

}  // namespace attribution::edge
