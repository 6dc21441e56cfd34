#include "connectors/k8s/kube.h"

#include <fmt/format.h>

#include "attribution/codec.h"
#include "connectors/k8s/process.h"

namespace attribution::blueprint {

std::vector<std::string> kubectl_argv(const KubectlOptions& o) {
  std::vector<std::string> argv = {o.binary};
  if (!o.context.empty()) argv.push_back("--context=" + o.context);
  if (!o.kubeconfig.empty()) argv.push_back("--kubeconfig=" + o.kubeconfig);
  return argv;
}

bool kubectl_get_json(const KubectlOptions& o, const std::vector<std::string>& args, nlohmann::json& out,
                      std::string& error, uint64_t* bytes) {
  std::vector<std::string> argv = kubectl_argv(o);
  argv.insert(argv.end(), args.begin(), args.end());
  argv.push_back("-o");
  argv.push_back("json");
  std::string what = "kubectl";
  for (const auto& a : args) what += " " + a;
  ProcessResult r = run_process(argv, o.timeout_s, o.max_output);
  if (bytes) *bytes += r.out.size();
  if (!r.started || r.timed_out || r.truncated || r.exit_code != 0) {
    error = r.describe(what);
    return false;
  }
  out = nlohmann::json::parse(r.out, nullptr, false);
  if (out.is_discarded() || !out.is_object()) {
    error = what + ": output is not a JSON object";
    return false;
  }
  return true;
}

TimeNs json_time(const nlohmann::json& object, const char* key) {
  if (!object.is_object() || !object.contains(key) || !object[key].is_string()) return kNoTime;
  auto t = parse_rfc3339(object[key].get<std::string>());
  return t.ok() ? t.value : kNoTime;
}

TimeNs event_time(const nlohmann::json& e) {
  for (const char* k : {"lastTimestamp", "eventTime", "firstTimestamp"}) {
    TimeNs t = json_time(e, k);
    if (t != kNoTime) return t;
  }
  if (e.contains("metadata")) return json_time(e["metadata"], "creationTimestamp");
  return kNoTime;
}

std::string render_event(const nlohmann::json& e) {
  auto str = [](const nlohmann::json& o, const char* k) {
    return o.is_object() && o.contains(k) && o[k].is_string() ? o[k].get<std::string>() : std::string();
  };
  TimeNs t = event_time(e);
  std::string obj;
  if (e.contains("involvedObject")) {
    std::string kind = str(e["involvedObject"], "kind");
    for (char& c : kind) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    obj = kind + "/" + str(e["involvedObject"], "name");
  }
  std::string reason = str(e, "reason");
  if (e.contains("count") && e["count"].is_number_integer() && e["count"].get<int64_t>() > 1)
    reason += fmt::format(" (x{})", e["count"].get<int64_t>());
  std::string msg = str(e, "message");
  for (char& c : msg)
    if (c == '\n' || c == '\r') c = ' ';
  return fmt::format("{} {} {} {} {}", t == kNoTime ? "-" : format_rfc3339(t), str(e, "type"), reason, obj, msg);
}

}  // namespace attribution::blueprint
