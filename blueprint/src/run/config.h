// Blueprint configuration (SPEC §9): a YAML file, overridden by ATTRIBUTION_* environment
// variables, overridden by flags. Precedence: flags > env > file > defaults.
//
// Environment mapping: ATTRIBUTION_<KEY>[__<KEY>...] sets the dotted path in lower case, e.g.
// ATTRIBUTION_STORES__POSTGRES__DSN → stores.postgres.dsn, ATTRIBUTION_CLUSTER → cluster.
// Only variables whose first segment is a known top-level key are taken (others, such as
// ATTRIBUTION_SERVICE_URL, belong to other commands). Aliases: ATTRIBUTION_RULES_DIR → rules,
// ATTRIBUTION_DB → stores.sqlite.path.
//
// How the layers are found and read is shared with the service (attribution/edge/config_layers.h):
// the file is --config or $ATTRIBUTION_CONFIG, ${VAR} in its values is expanded from the
// environment, and ATTRIBUTION_A__B_C names key a.b_c.
//
// Errors name the source and the key: "config.yaml: stores.postgres.dsn: must be a string".
#pragma once

#include <yaml-cpp/yaml.h>

#include <map>
#include <string>
#include <utility>
#include <vector>

namespace attribution::blueprint {

struct ConfigLayers {
  std::string file;                                        // --config (may be empty)
  std::map<std::string, std::string> env;                  // environment (all variables; filtered here)
  std::vector<std::pair<std::string, std::string>> flags;  // dotted key → value, in order
};

struct LoadedConfig {
  YAML::Node root;
  std::string name;  // the file name used in errors ("config.yaml") or "config"
};

// Loads and merges the layers, then validates. Returns false with one message per problem.
bool load_config(const ConfigLayers& layers, LoadedConfig& out, std::vector<std::string>& errors);

// Sets `path` ("stores.sqlite.path", "collectors.0.url") to a scalar, creating maps on the way.
void set_config_path(YAML::Node root, const std::string& path, const std::string& value);

// The effective config as YAML with secrets (token, password, dsn, secret, key, authorization,
// credentials in URLs) replaced by "<redacted>".
std::string redacted_config(const YAML::Node& root);

// True when a key names a secret.
bool is_secret_key(const std::string& key);

// "90s", "5m", "2h", "1d", "250ms", or plain seconds → nanoseconds; false if malformed.
bool parse_duration_ns(const std::string& text, int64_t& ns);

}  // namespace attribution::blueprint
