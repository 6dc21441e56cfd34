#include "attribution/edge/config_layers.h"

#include <fmt/format.h>

#include <cctype>
#include <fstream>
#include <sstream>

extern char** environ;

namespace attribution::edge {
namespace {

void expand_in_place(YAML::Node node, const Environment& env) {
  if (node.IsScalar()) {
    const std::string& v = node.Scalar();
    if (v.find("${") != std::string::npos) node = expand_env_references(v, env);
    return;
  }
  if (node.IsMap()) {
    for (auto kv : node) expand_in_place(kv.second, env);
  } else if (node.IsSequence()) {
    for (auto e : node) expand_in_place(e, env);
  }
}

}  // namespace

Environment process_environment() {
  Environment env;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    std::string s(*e);
    auto eq = s.find('=');
    if (eq != std::string::npos) env[s.substr(0, eq)] = s.substr(eq + 1);
  }
  return env;
}

std::string config_file_location(const std::string& flag_value, const Environment& env) {
  if (!flag_value.empty()) return flag_value;
  auto it = env.find(std::string(kEnvPrefix) + "CONFIG");
  return it == env.end() ? "" : it->second;
}

std::string expand_env_references(const std::string& value, const Environment& env) {
  std::string out;
  size_t pos = 0;
  while (pos < value.size()) {
    size_t start = value.find("${", pos);
    size_t end = start == std::string::npos ? std::string::npos : value.find('}', start + 2);
    if (end == std::string::npos) {
      out.append(value, pos, std::string::npos);
      break;
    }
    out.append(value, pos, start - pos);
    auto it = env.find(value.substr(start + 2, end - start - 2));
    if (it != env.end()) out += it->second;
    pos = end + 1;
  }
  return out;
}

bool read_config_file(const std::string& path, const Environment& env, YAML::Node& out, std::string& error) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    error = fmt::format("{}: cannot read", path);
    return false;
  }
  std::ostringstream ss;
  ss << in.rdbuf();
  try {
    out = YAML::Load(ss.str());
  } catch (const YAML::Exception& e) {
    error = fmt::format("{}:{}:{}: {}", path, e.mark.line + 1, e.mark.column + 1, e.msg);
    return false;
  }
  if (!out || out.IsNull()) out = YAML::Node(YAML::NodeType::Map);
  expand_in_place(out, env);
  return true;
}

std::string env_var_for_key(const std::string& dotted_key) {
  std::string var = kEnvPrefix;
  for (char c : dotted_key) {
    if (c == '.') var += "__";
    else if (c == '-') var += '_';
    else var += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  }
  return var;
}

std::optional<std::string> config_key_for_env_var(const std::string& name) {
  const std::string prefix = kEnvPrefix;
  if (name.size() <= prefix.size() || name.compare(0, prefix.size(), prefix) != 0) return std::nullopt;
  std::string key;
  for (size_t i = prefix.size(); i < name.size(); ++i) {
    if (name.compare(i, 2, "__") == 0) {
      key += '.';
      ++i;
    } else {
      key += static_cast<char>(std::tolower(static_cast<unsigned char>(name[i])));
    }
  }
  return key;
}

}  // namespace attribution::edge
