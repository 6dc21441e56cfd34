#include "connectors/connector.h"

namespace attribution::blueprint {

std::map<std::string, AdapterFactory>& adapter_registry() {
  static std::map<std::string, AdapterFactory> registry;
  return registry;
}

std::map<std::string, CollectorFactory>& collector_registry() {
  static std::map<std::string, CollectorFactory> registry;
  return registry;
}

}  // namespace attribution::blueprint
