#include "connectors/connector.h"

#include <algorithm>
#include <chrono>
#include <tuple>

namespace attribution::blueprint {

std::map<std::string, AdapterFactory>& adapter_registry() {
  static std::map<std::string, AdapterFactory> registry;
  return registry;
}

std::map<std::string, CollectorFactory>& collector_registry() {
  static std::map<std::string, CollectorFactory> registry;
  return registry;
}

TimeNs Adapter::now() const {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

bool Adapter::ended_between_limited(TimeNs from, TimeNs to, size_t limit, std::vector<WorkloadAttempt>& out,
                                    bool& more, std::string& error) {
  std::vector<WorkloadAttempt> all;
  more = false;
  if (!ended_between(from, to, all, error)) return false;
  std::stable_sort(all.begin(), all.end(), [this](const WorkloadAttempt& a, const WorkloadAttempt& b) {
    TimeNs ea = reported_end(a), eb = reported_end(b);
    return std::tie(ea, a.context.id, a.context.attempt) < std::tie(eb, b.context.id, b.context.attempt);
  });
  if (all.size() > limit) {
    more = true;
    all.resize(limit);
  }
  for (auto& a : all) out.push_back(std::move(a));
  return true;
}

}  // namespace attribution::blueprint
