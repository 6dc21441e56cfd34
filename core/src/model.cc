#include <algorithm>
#include <array>
#include <cctype>

#include "attribution/engine.h"
#include "attribution/model.h"

namespace attribution {
namespace {
constexpr std::array<std::string_view, kObservationKindCount> kKindNames = {
    "applog", "syslog", "node_metrics", "node_report", "scheduler", "k8s_event"};
}

std::string_view to_string(ObservationKind kind) {
  return kKindNames[static_cast<size_t>(kind)];
}

std::optional<ObservationKind> parse_observation_kind(std::string_view name) {
  for (size_t i = 0; i < kKindNames.size(); ++i) {
    if (kKindNames[i] == name) return static_cast<ObservationKind>(i);
  }
  return std::nullopt;
}

std::string normalize_terminal_state(std::string_view native) {
  std::string s;
  for (char c : native) {
    if (c == ' ' || c == '+') break;  // "CANCELLED by 1000", "CANCELLED+"
    s += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  }
  static const std::array<std::pair<std::string_view, std::string_view>, 24> kMap = {{
      {"COMPLETED", "COMPLETED"}, {"SUCCEEDED", "COMPLETED"},   {"SUCCESS", "COMPLETED"},
      {"FAILED", "FAILED"},       {"FAILURE", "FAILED"},        {"ERROR", "FAILED"},
      {"BOOT_FAIL", "FAILED"},    {"DEADLINE", "TIMEOUT"},      {"CANCELLED", "CANCELLED"},
      {"CANCELED", "CANCELLED"},  {"TIMEOUT", "TIMEOUT"},       {"PREEMPTED", "PREEMPTED"},
      {"NODE_FAIL", "NODE_FAIL"}, {"OUT_OF_MEMORY", "OUT_OF_MEMORY"}, {"OOMKILLED", "OUT_OF_MEMORY"},
      {"EVICTED", "EVICTED"},     {"RUNNING", "RUNNING"},       {"PENDING", "PENDING"},
      {"REQUEUED", "PENDING"},    {"SUSPENDED", "RUNNING"},     {"REVOKED", "CANCELLED"},
      {"RESIZING", "RUNNING"},    {"SPECIAL_EXIT", "FAILED"},   {"UNKNOWN", "UNKNOWN"},
  }};
  for (const auto& [from, to] : kMap) {
    if (s == from) return std::string(to);
  }
  return s.empty() ? "UNKNOWN" : s;
}

std::string_view engine_version() { return ATTRIBUTION_VERSION; }

}  // namespace attribution
