#include "config.h"

#include "attribution/edge/config_layers.h"
#include "attribution/edge/rules_dir.h"

#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <charconv>
#include <cstdlib>
#include <filesystem>
#include <thread>

namespace attribution::service {
namespace fs = std::filesystem;

const std::vector<ConfigKey>& config_keys() {
  static const std::vector<ConfigKey> keys = {
      {"listen", "ADDR:PORT to bind (loopback by default; port 0 = any free port)", false},
      {"data_dir", "state directory (SQLite database)", false},
      {"rules_dir", "directory of rule files (*.yaml)", false},
      {"auth_token", "bearer token required on /v2 (mandatory when binding non-loopback)", true},
      {"auth_token_file", "file holding the bearer token", false},
      {"tls_cert", "PEM certificate: serve HTTPS", false},
      {"tls_key", "PEM private key for --tls-cert", false},
      {"port_file", "write the bound port to this file once listening", false},
      {"threads", "HTTP connection threads", false},
      {"connection_queue", "accepted connections waiting for a thread before 429", false},
      {"work_concurrency", "requests doing ingest/attribution work at once (0 = CPU count)", false},
      {"work_queue", "requests waiting for a work slot before 429", false},
      {"max_body_bytes", "largest request body", false},
      {"max_line_bytes", "longest observation text; longer ones are truncated", false},
      {"max_observations_per_session", "observations one session may hold", false},
      {"max_sessions", "open sessions", false},
      {"session_ttl_s", "idle seconds before a session is closed and deleted", false},
      {"request_timeout_s", "seconds for a whole request, body included", false},
      {"read_timeout_s", "seconds for one socket read", false},
      {"retry_after_s", "Retry-After seconds on 429", false},
      {"store", "session store: sqlite:PATH (default DATA_DIR/sessions.db) or postgres://USER@HOST/DB (shared by replicas)", true},
      {"store_pool_size", "PostgreSQL connections per replica", false},
      {"store_pool_wait_ms", "milliseconds to wait for a free store connection before 503 store_busy", false},
      {"store_connect_timeout_s", "at start, seconds to keep retrying an unreachable PostgreSQL store before exiting (0 = try once)", false},
      {"log_level", "debug | info | warn | error", false},
      {"log_format", "json | text", false},
  };
  return keys;
}

namespace {
bool to_u64(const std::string& v, uint64_t& out) {
  auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), out);
  return ec == std::errc() && p == v.data() + v.size();
}
bool to_int(const std::string& v, int& out) {
  auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), out);
  return ec == std::errc() && p == v.data() + v.size() && out >= 0;
}
std::string normalize_key(std::string k) {
  for (auto& c : k) {
    if (c == '-') c = '_';
    else c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  return k;
}
}  // namespace

bool config_set(Config& c, const std::string& raw_key, const std::string& v, std::string& error) {
  std::string key = normalize_key(raw_key);
  auto bad = [&](const char* what) {
    error = key + ": " + what + " (got \"" + v + "\")";
    return false;
  };
  std::map<std::string, std::string*> strings = {
      {"listen", &c.listen},       {"data_dir", &c.data_dir},   {"rules_dir", &c.rules_dir},
      {"auth_token", &c.auth_token}, {"auth_token_file", &c.auth_token_file},
      {"tls_cert", &c.tls_cert},   {"tls_key", &c.tls_key},     {"port_file", &c.port_file},
      {"log_level", &c.log_level}, {"log_format", &c.log_format}, {"store", &c.store}};
  std::map<std::string, int*> ints = {{"threads", &c.threads},
                                      {"connection_queue", &c.connection_queue},
                                      {"work_concurrency", &c.work_concurrency},
                                      {"work_queue", &c.work_queue},
                                      {"store_pool_size", &c.store_pool_size},
                                      {"store_pool_wait_ms", &c.store_pool_wait_ms},
                                      {"store_connect_timeout_s", &c.store_connect_timeout_s}};
  std::map<std::string, uint64_t*> u64s = {
      {"max_body_bytes", &c.max_body_bytes},
      {"max_line_bytes", &c.max_line_bytes},
      {"max_observations_per_session", &c.max_observations_per_session},
      {"max_sessions", &c.max_sessions},
      {"session_ttl_s", &c.session_ttl_s},
      {"request_timeout_s", &c.request_timeout_s},
      {"read_timeout_s", &c.read_timeout_s},
      {"retry_after_s", &c.retry_after_s}};
  if (auto it = strings.find(key); it != strings.end()) {
    if (key == "log_level" && v != "debug" && v != "info" && v != "warn" && v != "error" && v != "off")
      return bad("must be debug, info, warn, error or off");
    if (key == "log_format" && v != "json" && v != "text") return bad("must be json or text");
    if (key == "store" && !v.empty() && v.rfind("sqlite:", 0) != 0 && v.rfind("postgres://", 0) != 0 &&
        v.rfind("postgresql://", 0) != 0) {
      error = key + ": expected sqlite:PATH, postgres://... or postgresql://...";
      return false;
    }
    *it->second = v;
    return true;
  }
  if (auto it = ints.find(key); it != ints.end()) {
    if (!to_int(v, *it->second)) return bad("not a non-negative integer");
    if (key == "threads" && *it->second < 1) return bad("must be at least 1");
    if (key == "store_pool_size" && *it->second < 1) return bad("must be at least 1");
    return true;
  }
  if (auto it = u64s.find(key); it != u64s.end()) {
    if (!to_u64(v, *it->second)) return bad("not a non-negative integer");
    return true;
  }
  error = "unknown configuration key \"" + raw_key + "\"";
  return false;
}

std::string config_get(const Config& c, const std::string& key) {
  Config copy = c;
  // Read through the setter table by round-tripping: cheap and keeps one list of keys.
  if (key == "listen") return c.listen;
  if (key == "data_dir") return c.data_dir;
  if (key == "rules_dir") return c.rules_dir;
  if (key == "auth_token") return c.auth_token;
  if (key == "auth_token_file") return c.auth_token_file;
  if (key == "tls_cert") return c.tls_cert;
  if (key == "tls_key") return c.tls_key;
  if (key == "port_file") return c.port_file;
  if (key == "threads") return std::to_string(c.threads);
  if (key == "connection_queue") return std::to_string(c.connection_queue);
  if (key == "work_concurrency") return std::to_string(c.work_concurrency);
  if (key == "work_queue") return std::to_string(c.work_queue);
  if (key == "max_body_bytes") return std::to_string(c.max_body_bytes);
  if (key == "max_line_bytes") return std::to_string(c.max_line_bytes);
  if (key == "max_observations_per_session") return std::to_string(c.max_observations_per_session);
  if (key == "max_sessions") return std::to_string(c.max_sessions);
  if (key == "session_ttl_s") return std::to_string(c.session_ttl_s);
  if (key == "request_timeout_s") return std::to_string(c.request_timeout_s);
  if (key == "read_timeout_s") return std::to_string(c.read_timeout_s);
  if (key == "retry_after_s") return std::to_string(c.retry_after_s);
  if (key == "log_level") return c.log_level;
  if (key == "log_format") return c.log_format;
  if (key == "store") return c.store;
  if (key == "store_pool_size") return std::to_string(c.store_pool_size);
  if (key == "store_pool_wait_ms") return std::to_string(c.store_pool_wait_ms);
  if (key == "store_connect_timeout_s") return std::to_string(c.store_connect_timeout_s);
  return {};
}

bool config_apply_yaml(Config& c, const std::string& text, const std::string& name, std::string& error) {
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    error = name + ":" + std::to_string(e.mark.line + 1) + ":" + std::to_string(e.mark.column + 1) +
            ": " + e.msg;
    return false;
  }
  // ${VAR} expansion, as in a config file read by edge::read_config_file.
  auto env = edge::process_environment();
  return config_apply_node(c, root, name, error, &env);
}

bool config_apply_node(Config& c, const YAML::Node& root, const std::string& name, std::string& error,
                       const edge::Environment* expand_from) {
  if (!root || root.IsNull()) return true;
  if (!root.IsMap()) {
    error = name + ": expected a mapping of configuration keys";
    return false;
  }
  for (auto it = root.begin(); it != root.end(); ++it) {
    auto key = it->first.as<std::string>();
    if (!it->second.IsScalar()) {
      error = name + ":" + std::to_string(it->first.Mark().line + 1) + ": " + key + ": expected a scalar";
      return false;
    }
    std::string value = it->second.as<std::string>();
    if (expand_from != nullptr) value = edge::expand_env_references(value, *expand_from);
    std::string err;
    if (!config_set(c, key, value, err)) {
      error = name + ":" + std::to_string(it->first.Mark().line + 1) + ": " + err;
      return false;
    }
  }
  return true;
}

bool config_apply_env(Config& c, char** env, std::string& error) {
  if (!env) return true;
  for (const auto& k : config_keys()) {
    std::string var = edge::env_var_for_key(k.name);
    for (char** e = env; *e; ++e) {
      std::string_view entry(*e);
      if (entry.size() > var.size() && entry.substr(0, var.size()) == var && entry[var.size()] == '=') {
        std::string err;
        if (!config_set(c, k.name, std::string(entry.substr(var.size() + 1)), err)) {
          error = var + ": " + err;
          return false;
        }
      }
    }
  }
  return true;
}

std::string config_dump(const Config& c) {
  std::string out;
  for (const auto& k : config_keys()) {
    std::string v = config_get(c, k.name);
    if (k.secret && !v.empty()) v = "<redacted>";
    out += std::string(k.name) + ": \"" + v + "\"\n";
  }
  return out;
}

void config_finalize(Config& c, const std::string& /*argv0*/) {
  if (c.data_dir.empty()) {
    if (const char* s = std::getenv("STATE_DIRECTORY"); s && *s) {
      std::string dirs = s;  // systemd may pass several, colon-separated
      c.data_dir = dirs.substr(0, dirs.find(':'));
    } else if (const char* x = std::getenv("XDG_STATE_HOME"); x && *x) {
      c.data_dir = std::string(x) + "/attribution-service";
    } else if (const char* h = std::getenv("HOME"); h && *h && ::geteuid() != 0) {
      c.data_dir = std::string(h) + "/.local/state/attribution-service";
    } else {
      c.data_dir = "/var/lib/attribution-service";
    }
  }
  if (c.rules_dir.empty()) c.rules_dir = edge::default_rules_location();
  if (c.work_concurrency <= 0) {
    unsigned hw = std::thread::hardware_concurrency();
    c.work_concurrency = static_cast<int>(hw ? hw : 2);
  }
}

}  // namespace attribution::service
