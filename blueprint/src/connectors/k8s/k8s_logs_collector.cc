#include "connectors/k8s/k8s_logs_collector.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>
#include <sstream>

#include "connectors/files/template.h"
#include "connectors/k8s/process.h"
#include "attribution/text.h"

namespace attribution::blueprint {
namespace {

template <class T>
void read(const YAML::Node& n, const char* key, T& out) {
  if (n[key]) out = n[key].as<T>();
}

std::string str(const nlohmann::json& o, const char* k) {
  return o.is_object() && o.contains(k) && o[k].is_string() ? o[k].get<std::string>() : std::string();
}


}  // namespace

bool parse_k8s_logs_config(const YAML::Node& config, K8sLogsConfig& out, std::string& error) {
  try {
    if (!config || !config.IsMap()) {
      error = "k8s_logs: the collector block must be a map";
      return false;
    }
    read(config, "name", out.name);
    read(config, "kubectl", out.kubectl.binary);
    read(config, "context", out.kubectl.context);
    read(config, "kubeconfig", out.kubectl.kubeconfig);
    read(config, "timeout_s", out.kubectl.timeout_s);
    read(config, "max_bytes_per_container", out.kubectl.max_output);
    read(config, "namespace", out.namespace_template);
    read(config, "selector", out.selector);
    read(config, "previous", out.previous);
    read(config, "timestamps", out.timestamps);
    read(config, "pod_status", out.pod_status);
    read(config, "events", out.events);
    if (config["kind"]) {
      auto k = parse_observation_kind(config["kind"].as<std::string>());
      if (!k || *k == ObservationKind::kNodeMetrics) {
        error = "k8s_logs.kind: must be a text kind";
        return false;
      }
      out.kind = *k;
    }
    return true;
  } catch (const YAML::Exception& e) {
    error = fmt::format("k8s_logs: {}", e.what());
    return false;
  }
}

ConnectorReport K8sLogsCollector::collect(const WorkloadAttempt& attempt, EvidenceSink& sink) {
  ConnectorReport report;
  report.connector = config_.name;
  const ExecutionContext& ctx = attempt.context;
  std::string err;
  TemplateBinding none;
  std::string ns = expand_template(config_.namespace_template, ctx, none, TemplateEscape::kNone, err).value_or("");
  if (ns.empty()) {
    report.status = "error";
    report.reason = "no namespace (set `namespace:` or use an adapter that labels the context with it)";
    return report;
  }
  std::vector<std::string> errors;
  nlohmann::json pods = nlohmann::json::array();
  {
    std::vector<std::string> args = {"get", "pods", "-n", ns};
    std::string selector;
    if (!config_.selector.empty())
      selector = expand_template(config_.selector, ctx, none, TemplateEscape::kNone, err).value_or("");
    if (!selector.empty()) {
      args.push_back("-l");
      args.push_back(selector);
    }
    std::set<std::string> wanted;
    if (selector.empty()) {
      auto it = ctx.labels.find("pods");
      if (it == ctx.labels.end() || it->second.empty()) {
        report.status = "error";
        report.reason = "no pods to read (set `selector:` or use an adapter that names the pods)";
        return report;
      }
      std::stringstream ss(it->second);
      std::string p;
      while (std::getline(ss, p, ',')) wanted.insert(p);
    }
    nlohmann::json list;
    if (!kubectl_get_json(config_.kubectl, args, list, err)) {
      report.status = "error";
      report.reason = err;
      return report;
    }
    if (list.contains("items") && list["items"].is_array())
      for (const auto& p : list["items"])
        if (wanted.empty() || wanted.count(str(p["metadata"], "name"))) pods.push_back(p);
  }
  uint64_t lines = 0, containers = 0, previous = 0;
  std::set<std::string> pod_names;
  for (const auto& pod : pods) {
    const std::string pod_name = str(pod["metadata"], "name");
    pod_names.insert(pod_name);
    const std::string node = pod.contains("spec") ? str(pod["spec"], "nodeName") : "";
    std::vector<std::pair<std::string, bool>> todo;  // container, previous
    std::map<std::string, int> restarts;
    if (pod.contains("status")) {
      for (const char* key : {"initContainerStatuses", "containerStatuses"}) {
        if (!pod["status"].contains(key)) continue;
        for (const auto& cs : pod["status"][key]) {
          int rc = cs.contains("restartCount") && cs["restartCount"].is_number() ? cs["restartCount"].get<int>() : 0;
          bool has_last = cs.contains("lastState") && cs["lastState"].contains("terminated");
          restarts[str(cs, "name")] = (rc > 0 || has_last) ? 1 : 0;
        }
      }
    }
    if (pod.contains("spec") && pod["spec"].contains("containers"))
      for (const auto& c : pod["spec"]["containers"]) todo.emplace_back(str(c, "name"), false);
    for (const auto& [c, prev] : std::vector<std::pair<std::string, bool>>(todo))
      if (config_.previous && restarts[c]) todo.emplace_back(c, true);
    for (const auto& [container, prev] : todo) {
      std::vector<std::string> argv = kubectl_argv(config_.kubectl);
      for (const char* a : {"logs", "-n"}) argv.push_back(a);
      argv.push_back(ns);
      argv.push_back(pod_name);
      argv.push_back("-c");
      argv.push_back(container);
      if (config_.timestamps) argv.push_back("--timestamps");
      if (prev) argv.push_back("--previous");
      ProcessResult r = run_process(argv, config_.kubectl.timeout_s, config_.kubectl.max_output);
      if (!r.started || r.timed_out || r.truncated || r.exit_code != 0) {
        errors.push_back(r.describe(fmt::format("kubectl logs {}/{} -c {}{}", ns, pod_name, container, prev ? " --previous" : "")));
        continue;
      }
      ++containers;
      if (prev) ++previous;
      if (r.out.empty()) continue;
      TextSource ts;
      ts.name = fmt::format("pod/{}/{}/{}{}", ns, pod_name, container, prev ? " (previous)" : "");
      ts.kind = config_.kind;
      ts.node = node;
      sink.text(ts, r.out, 1);
      lines += count_lines(r.out);
      report.bytes += r.out.size();
    }
    if (config_.pod_status) {
      TextSource ts;
      ts.name = fmt::format("pod/{}/{} status", ns, pod_name);
      ts.kind = ObservationKind::kK8sEvent;
      ts.node = node;
      std::string line = pod.dump() + "\n";
      sink.text(ts, line, 1);
      ++lines;
      report.bytes += line.size();
    }
  }
  if (config_.events) {
    nlohmann::json evs;
    if (!kubectl_get_json(config_.kubectl, {"get", "events", "-n", ns}, evs, err, &report.bytes)) {
      errors.push_back(err);
    } else if (evs.contains("items")) {
      std::set<std::string> nodes(ctx.nodes.begin(), ctx.nodes.end());
      std::string block;
      for (const auto& e : evs["items"]) {
        std::string name = e.contains("involvedObject") ? str(e["involvedObject"], "name") : "";
        if (!pod_names.count(name) && !nodes.count(name) && name != ctx.id) continue;
        block += render_event(e) + "\n";
        ++lines;
      }
      if (!block.empty()) {
        TextSource ts;
        ts.name = fmt::format("events/{}", ns);
        ts.kind = ObservationKind::kK8sEvent;
        sink.text(ts, block, 1);
      }
    }
  }
  report.observations = lines;
  std::string detail = fmt::format("{} pods, {} container logs ({} previous), {} lines", pods.size(), containers,
                                   previous, lines);
  if (!errors.empty()) {
    report.status = "error";
    report.reason = errors.front() + (errors.size() > 1 ? fmt::format(" (and {} more errors)", errors.size() - 1) : "") +
                    "; " + detail;
  } else if (lines == 0) {
    report.status = "empty";
    report.reason = pods.empty() ? "no pod found in namespace " + ns : "no log lines; " + detail;
  } else {
    report.reason = detail;
  }
  return report;
}

namespace {
const CollectorRegistrar kK8sRegistrar("k8s_logs", [](const YAML::Node& config, std::string& error)
                                                       -> std::unique_ptr<Collector> {
  K8sLogsConfig c;
  if (!parse_k8s_logs_config(config, c, error)) return nullptr;
  return std::make_unique<K8sLogsCollector>(std::move(c));
});
}  // namespace

}  // namespace attribution::blueprint

extern "C" void attribution_connector_k8s_logs_anchor() {}
