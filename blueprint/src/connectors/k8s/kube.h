// kubectl helpers shared by the k8s pod-logs collector and the Kueue adapter: running
// `kubectl ... -o json`, and rendering objects as the one-line evidence the rules read
// (compact pod/workload JSON; events as "TIME TYPE REASON KIND/NAME MESSAGE").
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "attribution/model.h"

namespace attribution::blueprint {

struct KubectlOptions {
  std::string binary = "kubectl";
  std::string context;     // --context
  std::string kubeconfig;  // --kubeconfig
  int timeout_s = 60;
  uint64_t max_output = 256ull << 20;
};

// The command prefix: binary plus --context/--kubeconfig.
std::vector<std::string> kubectl_argv(const KubectlOptions& o);

// Runs kubectl with `args` (+ "-o json") and parses the output. False with a report-ready error.
bool kubectl_get_json(const KubectlOptions& o, const std::vector<std::string>& args, nlohmann::json& out,
                      std::string& error, uint64_t* bytes = nullptr);

// An event as one line: "<time> <type> <reason> <kind>/<name> <message>" (the time is the event's
// lastTimestamp, eventTime or firstTimestamp; "x<count>" follows the reason when count > 1).
std::string render_event(const nlohmann::json& event);
TimeNs event_time(const nlohmann::json& event);

// Parses an RFC 3339 field; kNoTime when absent or malformed.
TimeNs json_time(const nlohmann::json& object, const char* key);

}  // namespace attribution::blueprint
