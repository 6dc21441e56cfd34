// Serves api/openapi.yaml (embedded at build time) as JSON, converted once on first use.
#include <yaml-cpp/yaml.h>

#include <nlohmann/json.hpp>
#include <regex>

#include "server.h"

extern const char kOpenApiYaml[];

namespace attribution::service {
namespace {

nlohmann::ordered_json to_json(const YAML::Node& n) {
  switch (n.Type()) {
    case YAML::NodeType::Map: {
      nlohmann::ordered_json o = nlohmann::ordered_json::object();
      for (auto it = n.begin(); it != n.end(); ++it) o[it->first.as<std::string>()] = to_json(it->second);
      return o;
    }
    case YAML::NodeType::Sequence: {
      nlohmann::ordered_json a = nlohmann::ordered_json::array();
      for (const auto& e : n) a.push_back(to_json(e));
      return a;
    }
    case YAML::NodeType::Scalar: {
      const std::string& s = n.Scalar();
      if (n.Tag() != "?") return s;  // quoted: always a string
      static const std::regex int_re("-?(0|[1-9][0-9]*)");
      static const std::regex float_re("-?(0|[1-9][0-9]*)(\\.[0-9]+)?([eE][-+]?[0-9]+)?");
      if (s == "true") return true;
      if (s == "false") return false;
      if (s == "null" || s == "~") return nullptr;
      if (std::regex_match(s, int_re)) return std::stoll(s);
      if (std::regex_match(s, float_re)) return std::stod(s);
      return s;
    }
    default:
      return nullptr;
  }
}

}  // namespace

const std::string& openapi_json() {
  static const std::string json = [] {
    try {
      return to_json(YAML::Load(kOpenApiYaml)).dump();
    } catch (const std::exception& e) {
      return std::string("{\"error\":\"openapi document failed to convert\"}");
    }
  }();
  return json;
}

}  // namespace attribution::service
