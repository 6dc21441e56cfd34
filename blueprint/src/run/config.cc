#include "run/config.h"

#include "attribution/edge/config_layers.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <set>

namespace attribution::blueprint {
namespace {

const std::set<std::string>& top_level_keys() {
  static const std::set<std::string> keys = {"cluster", "rules",  "adapter", "adapters", "collectors",
                                             "stores",  "watch",  "output",  "threads",  "progress"};
  return keys;
}

std::vector<std::string> split(const std::string& s, char c) {
  std::vector<std::string> out;
  std::string cur;
  for (char ch : s) {
    if (ch == c) {
      out.push_back(cur);
      cur.clear();
    } else {
      cur += ch;
    }
  }
  out.push_back(cur);
  return out;
}

std::string lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

bool is_index(const std::string& s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

std::string redact_url(const std::string& v) {
  // scheme://user:password@host → scheme://user:<redacted>@host
  auto scheme = v.find("://");
  if (scheme == std::string::npos) return v;
  auto at = v.find('@', scheme + 3);
  auto slash = v.find('/', scheme + 3);
  if (at == std::string::npos || (slash != std::string::npos && slash < at)) return v;
  auto colon = v.find(':', scheme + 3);
  if (colon == std::string::npos || colon > at) return v;
  return v.substr(0, colon + 1) + "<redacted>" + v.substr(at);
}

YAML::Node redact(const YAML::Node& n, const std::string& key) {
  if (n.IsMap()) {
    YAML::Node out(YAML::NodeType::Map);
    for (const auto& kv : n) {
      std::string k = kv.first.as<std::string>("");
      out[k] = redact(kv.second, k);
    }
    return out;
  }
  if (n.IsSequence()) {
    YAML::Node out(YAML::NodeType::Sequence);
    for (const auto& e : n) out.push_back(redact(e, key));
    return out;
  }
  if (n.IsScalar()) {
    if (is_secret_key(key)) return YAML::Node(n.Scalar().empty() ? "" : "<redacted>");
    return YAML::Node(redact_url(n.Scalar()));
  }
  return n;
}

void check_scalar(const YAML::Node& n, const std::string& key, const std::string& name,
                  std::vector<std::string>& errors) {
  if (n && !n.IsScalar()) errors.push_back(fmt::format("{}: {}: must be a string", name, key));
}

void check_map(const YAML::Node& n, const std::string& key, const std::string& name, std::vector<std::string>& errors) {
  if (n && !n.IsMap() && !n.IsNull()) errors.push_back(fmt::format("{}: {}: must be a mapping", name, key));
}

void check_keys(const YAML::Node& n, const std::string& key, const std::set<std::string>& allowed,
                const std::string& name, std::vector<std::string>& errors) {
  if (!n || !n.IsMap()) return;
  for (const auto& kv : n) {
    std::string k = kv.first.as<std::string>("");
    if (!allowed.count(k)) {
      std::string list;
      for (const auto& a : allowed) list += (list.empty() ? "" : ", ") + a;
      errors.push_back(fmt::format("{}: {}{}{}: unknown key (expected one of: {})", name, key, key.empty() ? "" : ".", k,
                                   list));
    }
  }
}

void validate(const YAML::Node& root, const std::string& name, std::vector<std::string>& errors) {
  if (!root.IsMap()) {
    if (!root.IsNull()) errors.push_back(fmt::format("{}: the document must be a mapping", name));
    return;
  }
  check_keys(root, "", top_level_keys(), name, errors);
  check_scalar(root["cluster"], "cluster", name, errors);
  check_scalar(root["rules"], "rules", name, errors);
  check_scalar(root["adapter"], "adapter", name, errors);
  if (auto o = root["output"]) {
    check_scalar(o, "output", name, errors);
    if (o.IsScalar() && o.Scalar() != "json" && o.Scalar() != "text")
      errors.push_back(fmt::format("{}: output: must be json or text, not \"{}\"", name, o.Scalar()));
  }
  if (auto t = root["threads"]) {
    int v = -1;
    if (!t.IsScalar() || !YAML::convert<int>::decode(t, v) || v < 0)
      errors.push_back(fmt::format("{}: threads: must be a non-negative integer", name));
  }
  if (auto p = root["progress"]) {
    bool b;
    if (!p.IsScalar() || !YAML::convert<bool>::decode(p, b))
      errors.push_back(fmt::format("{}: progress: must be true or false", name));
  }
  check_map(root["adapters"], "adapters", name, errors);
  check_map(root["stores"], "stores", name, errors);
  check_keys(root["stores"], "stores", {"sqlite", "postgres", "jsonl", "webhook"}, name, errors);
  check_map(root["watch"], "watch", name, errors);
  check_keys(root["watch"], "watch",
             {"interval", "cursor", "since", "lookback", "settle", "concurrency", "backlog", "report", "metrics_file"},
             name, errors);
  if (auto w = root["watch"]; w && w.IsMap()) {
    for (const char* k : {"interval", "since", "lookback", "settle", "report"}) {
      if (!w[k]) continue;
      int64_t ns = 0;
      if (!w[k].IsScalar() || !parse_duration_ns(w[k].Scalar(), ns))
        errors.push_back(fmt::format("{}: watch.{}: not a duration (e.g. 30s, 5m, 2h)", name, k));
    }
    for (const char* k : {"concurrency", "backlog"}) {
      if (!w[k]) continue;
      int v = 0;
      if (!w[k].IsScalar() || !YAML::convert<int>::decode(w[k], v) || v < 1)
        errors.push_back(fmt::format("{}: watch.{}: must be an integer >= 1", name, k));
    }
  }
  if (auto c = root["collectors"]) {
    if (c.IsSequence()) {
      for (size_t i = 0; i < c.size(); ++i) {
        if (!c[i].IsMap() || !c[i]["type"] || !c[i]["type"].IsScalar())
          errors.push_back(fmt::format("{}: collectors[{}].type: required (the collector's name, e.g. files, loki)", name, i));
      }
    } else if (!c.IsMap() && !c.IsNull()) {
      errors.push_back(fmt::format("{}: collectors: must be a list of {{type: ...}} blocks", name));
    }
  }
}

YAML::Node merge(YAML::Node base, const YAML::Node& over) {
  if (!over.IsMap() || !base.IsMap()) return over;
  for (const auto& kv : over) {
    std::string k = kv.first.as<std::string>("");
    if (base[k]) base[k] = merge(base[k], kv.second);
    else base[k] = kv.second;
  }
  return base;
}

}  // namespace

bool is_secret_key(const std::string& key) {
  std::string k = lower(key);
  for (const char* s : {"token", "password", "passwd", "dsn", "secret", "authorization", "api_key", "apikey",
                        "credentials"})
    if (k.find(s) != std::string::npos) return true;
  return false;
}

void set_config_path(YAML::Node root, const std::string& path, const std::string& value) {
  auto parts = split(path, '.');
  std::vector<YAML::Node> chain{root};
  for (size_t i = 0; i + 1 < parts.size(); ++i) {
    YAML::Node cur = chain.back();
    const auto& p = parts[i];
    YAML::Node next;
    if (cur.IsSequence() && is_index(p)) {
      size_t idx = std::stoul(p);
      while (cur.size() <= idx) cur.push_back(YAML::Node(YAML::NodeType::Map));
      next = cur[idx];
    } else {
      if (!cur[p] || (!cur[p].IsMap() && !cur[p].IsSequence()))
        cur[p] = YAML::Node(is_index(parts[i + 1]) ? YAML::NodeType::Sequence : YAML::NodeType::Map);
      next = cur[p];
    }
    chain.push_back(next);
  }
  YAML::Node last = chain.back();
  if (last.IsSequence() && is_index(parts.back())) {
    size_t idx = std::stoul(parts.back());
    while (last.size() <= idx) last.push_back(YAML::Node());
    last[idx] = value;
  } else {
    last[parts.back()] = value;
  }
}

bool load_config(const ConfigLayers& layers, LoadedConfig& out, std::vector<std::string>& errors) {
  out.name = layers.file.empty() ? "config" : layers.file;
  YAML::Node root(YAML::NodeType::Map);
  if (!layers.file.empty()) {
    YAML::Node doc;
    std::string error;
    if (!edge::read_config_file(layers.file, layers.env, doc, error)) {
      errors.push_back(error);
      return false;
    }
    std::vector<std::string> file_errors;
    validate(doc, out.name, file_errors);
    if (!file_errors.empty()) {
      errors.insert(errors.end(), file_errors.begin(), file_errors.end());
      return false;
    }
    root = merge(root, doc);
  }
  for (const auto& [k, v] : layers.env) {
    if (k.rfind("ATTRIBUTION_", 0) != 0) continue;
    std::string rest = k.substr(12);
    std::string path;
    if (rest == "RULES_DIR") path = "rules";
    else if (rest == "DB") path = "stores.sqlite.path";
    else if (rest == "CONFIG") continue;
    else {
      auto dotted = edge::config_key_for_env_var(k);
      if (!dotted || !top_level_keys().count(split(*dotted, '.').front())) continue;
      path = *dotted;
    }
    try {
      set_config_path(root, path, v);
    } catch (const YAML::Exception& e) {
      errors.push_back(fmt::format("{}: {}: {}", k, path, e.msg));
    }
  }
  for (const auto& [path, v] : layers.flags) {
    try {
      set_config_path(root, path, v);
    } catch (const YAML::Exception& e) {
      errors.push_back(fmt::format("flag: {}: {}", path, e.msg));
    }
  }
  if (!errors.empty()) return false;
  std::vector<std::string> merged_errors;
  validate(root, layers.file.empty() ? "config (env/flags)" : out.name + " (with env/flags)", merged_errors);
  errors.insert(errors.end(), merged_errors.begin(), merged_errors.end());
  out.root = root;
  return errors.empty();
}

std::string redacted_config(const YAML::Node& root) {
  YAML::Emitter e;
  e << redact(root, "");
  return std::string(e.c_str()) + "\n";
}

bool parse_duration_ns(const std::string& text, int64_t& ns) {
  if (text.empty()) return false;
  size_t i = 0;
  while (i < text.size() && (std::isdigit(static_cast<unsigned char>(text[i])) || text[i] == '.')) ++i;
  if (i == 0) return false;
  double v = 0;
  try {
    v = std::stod(text.substr(0, i));
  } catch (...) {
    return false;
  }
  std::string unit = text.substr(i);
  double mult;
  if (unit.empty() || unit == "s") mult = 1e9;
  else if (unit == "ms") mult = 1e6;
  else if (unit == "m") mult = 60e9;
  else if (unit == "h") mult = 3600e9;
  else if (unit == "d") mult = 86400e9;
  else return false;
  ns = static_cast<int64_t>(v * mult);
  return true;
}

}  // namespace attribution::blueprint
