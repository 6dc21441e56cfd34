#include "connectors/kueue/kueue_adapter.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>

#include "attribution/codec.h"

namespace attribution::blueprint {
namespace {

namespace fs = std::filesystem;

template <class T>
void read(const YAML::Node& n, const char* key, T& out) {
  if (n[key]) out = n[key].as<T>();
}

std::string str(const nlohmann::json& o, const char* k) {
  return o.is_object() && o.contains(k) && o[k].is_string() ? o[k].get<std::string>() : std::string();
}

const nlohmann::json* condition(const nlohmann::json& wl, const char* type) {
  if (!wl.contains("status") || !wl["status"].contains("conditions")) return nullptr;
  for (const auto& c : wl["status"]["conditions"])
    if (str(c, "type") == type) return &c;
  return nullptr;
}

bool is_true(const nlohmann::json* c) { return c && str(*c, "status") == "True"; }

// When the workload ended (Finished or Evicted), else kNoTime.
TimeNs ended_at(const nlohmann::json& wl) {
  for (const char* t : {"Finished", "Evicted"}) {
    const nlohmann::json* c = condition(wl, t);
    if (is_true(c)) return json_time(*c, "lastTransitionTime");
  }
  return kNoTime;
}

std::string sanitize(std::string s) {
  for (char& c : s)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.')) c = '_';
  return s;
}

}  // namespace

bool parse_kueue_config(const YAML::Node& config, KueueAdapterConfig& out, std::string& error) {
  try {
    if (config && !config.IsMap()) {
      error = "adapters.kueue: must be a map";
      return false;
    }
    if (!config) return true;
    read(config, "kubectl", out.kubectl.binary);
    read(config, "context", out.kubectl.context);
    read(config, "kubeconfig", out.kubectl.kubeconfig);
    read(config, "timeout_s", out.kubectl.timeout_s);
    read(config, "namespace", out.namespace_);
    read(config, "cluster", out.cluster);
    read(config, "evidence_dir", out.evidence_dir);
    if (config["pod_owner_labels"]) out.pod_owner_labels = config["pod_owner_labels"].as<std::vector<std::string>>();
    return true;
  } catch (const YAML::Exception& e) {
    error = fmt::format("adapters.kueue: {}", e.what());
    return false;
  }
}

bool KueueAdapter::list(std::vector<nlohmann::json>& workloads, std::string& error) {
  std::vector<std::string> args = {"get", "workloads.kueue.x-k8s.io"};
  if (config_.namespace_.empty()) {
    args.push_back("-A");
  } else {
    args.push_back("-n");
    args.push_back(config_.namespace_);
  }
  nlohmann::json doc;
  if (!kubectl_get_json(config_.kubectl, args, doc, error)) return false;
  if (doc.contains("items") && doc["items"].is_array())
    for (const auto& w : doc["items"]) workloads.push_back(w);
  return true;
}

bool KueueAdapter::attempt_for(const nlohmann::json& wl, WorkloadAttempt& out, std::string& error) {
  const auto& meta = wl["metadata"];
  const std::string name = str(meta, "name");
  const std::string ns = str(meta, "namespace");
  std::string owner;
  if (meta.contains("ownerReferences") && meta["ownerReferences"].is_array() && !meta["ownerReferences"].empty())
    owner = str(meta["ownerReferences"][0], "name");

  ExecutionContext& ctx = out.context;
  ctx.id = name;
  ctx.scheduler = "kueue";
  ctx.cluster = config_.cluster;
  ctx.name = owner.empty() ? name : owner;
  if (wl.contains("spec")) ctx.queue = str(wl["spec"], "queueName");
  if (wl.contains("status") && wl["status"].contains("requeueState") &&
      wl["status"]["requeueState"].contains("count") && wl["status"]["requeueState"]["count"].is_number())
    ctx.attempt = wl["status"]["requeueState"]["count"].get<int>();
  ctx.labels["namespace"] = ns;
  if (!ctx.queue.empty()) ctx.labels["kueue.x-k8s.io/queue-name"] = ctx.queue;
  if (wl.contains("status") && wl["status"].contains("admission"))
    if (auto cq = str(wl["status"]["admission"], "clusterQueue"); !cq.empty()) ctx.labels["cluster_queue"] = cq;

  for (const char* t : {"Admitted", "QuotaReserved"}) {
    const nlohmann::json* c = condition(wl, t);
    if (is_true(c)) {
      ctx.start = json_time(*c, "lastTransitionTime");
      break;
    }
  }
  ctx.end = ended_at(wl);
  const nlohmann::json* evicted = condition(wl, "Evicted");
  const nlohmann::json* finished = condition(wl, "Finished");
  if (is_true(evicted)) {
    ctx.state = "Evicted";
    ctx.reason = str(*evicted, "reason");
  } else if (is_true(finished)) {
    ctx.state = str(*finished, "reason") == "Succeeded" ? "Succeeded" : "Failed";
    ctx.reason = str(*finished, "reason");
  } else if (is_true(condition(wl, "Admitted"))) {
    ctx.state = "Admitted";
  } else {
    ctx.state = "Pending";
  }
  if (ctx.state == "Succeeded") ctx.terminal_state = "COMPLETED";

  // Pods and events of the namespace.
  nlohmann::json pods, events;
  if (!kubectl_get_json(config_.kubectl, {"get", "pods", "-n", ns}, pods, error)) return false;
  std::string events_error;
  bool have_events = kubectl_get_json(config_.kubectl, {"get", "events", "-n", ns}, events, events_error);
  std::vector<nlohmann::json> mine;
  std::set<std::string> nodes;
  TimeNs first_start = kNoTime, last_finish = kNoTime;
  std::string term_reason;
  if (pods.contains("items")) {
    for (const auto& p : pods["items"]) {
      const auto& pm = p["metadata"];
      bool match = false;
      if (pm.contains("labels")) {
        if (str(pm["labels"], "kueue.x-k8s.io/workload-name") == name) match = true;
        if (!owner.empty())
          for (const auto& l : config_.pod_owner_labels)
            if (str(pm["labels"], l.c_str()) == owner) match = true;
      }
      if (pm.contains("annotations") && str(pm["annotations"], "kueue.x-k8s.io/workload") == name) match = true;
      if (!owner.empty() && pm.contains("ownerReferences"))
        for (const auto& o : pm["ownerReferences"])
          if (str(o, "name") == owner) match = true;
      if (!match) continue;
      mine.push_back(p);
      if (p.contains("spec") && !str(p["spec"], "nodeName").empty()) nodes.insert(str(p["spec"], "nodeName"));
      if (!p.contains("status")) continue;
      TimeNs st = json_time(p["status"], "startTime");
      if (st != kNoTime && (first_start == kNoTime || st < first_start)) first_start = st;
      if (!p["status"].contains("containerStatuses")) continue;
      for (const auto& cs : p["status"]["containerStatuses"]) {
        for (const char* where : {"state", "lastState"}) {
          if (!cs.contains(where) || !cs[where].contains("terminated")) continue;
          const auto& t = cs[where]["terminated"];
          TimeNs f = json_time(t, "finishedAt");
          if (f != kNoTime && (last_finish == kNoTime || f > last_finish)) last_finish = f;
          int code = t.contains("exitCode") && t["exitCode"].is_number() ? t["exitCode"].get<int>() : 0;
          if (code != 0 && ctx.exit_code.empty()) {
            ctx.exit_code = std::to_string(code);
            term_reason = str(t, "reason");
          }
          if (str(t, "reason") == "OOMKilled" && term_reason != "OOMKilled") {
            term_reason = "OOMKilled";  // the most telling container outcome wins
            ctx.exit_code = std::to_string(code);
          }
        }
      }
    }
  }
  ctx.nodes.assign(nodes.begin(), nodes.end());
  if (ctx.start == kNoTime) ctx.start = first_start;
  if (ctx.end == kNoTime) ctx.end = last_finish;
  if (ctx.reason.empty() || ctx.reason == "Failed") ctx.reason = term_reason.empty() ? ctx.reason : term_reason;
  std::string pod_list;
  for (const auto& p : mine) pod_list += (pod_list.empty() ? "" : ",") + str(p["metadata"], "name");
  if (!pod_list.empty()) ctx.labels["pods"] = pod_list;

  // Evidence files.
  fs::path dir = config_.evidence_dir.empty() ? fs::temp_directory_path() / "attribution-kueue" : fs::path(config_.evidence_dir);
  dir = dir / sanitize(ns) / sanitize(name);
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) {
    error = fmt::format("{}: {}", dir.string(), ec.message());
    return false;
  }
  auto write = [&](const std::string& file, const std::string& content, const std::string& note) {
    fs::path p = dir / file;
    std::ofstream(p, std::ios::binary | std::ios::trunc) << content;
    TextSource ts;
    ts.name = fmt::format("kueue/{}/{}/{}", ns, name, file);
    ts.kind = ObservationKind::kK8sEvent;
    ts.note = note;
    out.evidence_files.emplace_back(p.string(), ts);
  };
  write("workload.json", wl.dump() + "\n", "kubectl get workload -o json");
  std::string pod_lines;
  for (const auto& p : mine) pod_lines += p.dump() + "\n";
  if (!pod_lines.empty()) write("pods.jsonl", pod_lines, "pod status JSON, one pod per line");
  if (have_events && events.contains("items")) {
    std::set<std::string> names(nodes.begin(), nodes.end());
    names.insert(name);
    for (const auto& p : mine) names.insert(str(p["metadata"], "name"));
    std::vector<std::pair<TimeNs, std::string>> lines;
    for (const auto& e : events["items"])
      if (e.contains("involvedObject") && names.count(str(e["involvedObject"], "name")))
        lines.emplace_back(event_time(e), render_event(e));
    std::stable_sort(lines.begin(), lines.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    std::string text;
    for (const auto& [t, l] : lines) text += l + "\n";
    if (!text.empty()) write("events.txt", text, "kubectl get events");
  }
  return true;
}

bool KueueAdapter::by_job(const std::string& job_id, std::vector<WorkloadAttempt>& out, std::string& error) {
  std::vector<nlohmann::json> workloads;
  if (!list(workloads, error)) return false;
  for (const auto& wl : workloads) {
    const auto& meta = wl["metadata"];
    bool match = str(meta, "name") == job_id || str(meta, "uid") == job_id;
    if (meta.contains("ownerReferences"))
      for (const auto& o : meta["ownerReferences"]) match |= str(o, "name") == job_id;
    if (!match) continue;
    WorkloadAttempt a;
    if (!attempt_for(wl, a, error)) return false;
    out.push_back(std::move(a));
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.context.attempt < b.context.attempt; });
  if (out.empty()) {
    error = fmt::format("kueue: no Workload named {} (or owned by it){}", job_id,
                        config_.namespace_.empty() ? "" : " in namespace " + config_.namespace_);
    return false;
  }
  return true;
}

bool KueueAdapter::ended_between(TimeNs from, TimeNs to, std::vector<WorkloadAttempt>& out, std::string& error) {
  std::vector<nlohmann::json> workloads;
  if (!list(workloads, error)) return false;
  for (const auto& wl : workloads) {
    TimeNs end = ended_at(wl);
    if (end == kNoTime || end < from || end > to) continue;
    WorkloadAttempt a;
    if (!attempt_for(wl, a, error)) return false;
    out.push_back(std::move(a));
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.context.end < b.context.end; });
  return true;
}

namespace {
const AdapterRegistrar kKueueRegistrar("kueue", [](const YAML::Node& config, std::string& error)
                                                    -> std::unique_ptr<Adapter> {
  KueueAdapterConfig c;
  if (!parse_kueue_config(config, c, error)) return nullptr;
  return std::make_unique<KueueAdapter>(std::move(c));
});
}  // namespace

}  // namespace attribution::blueprint

extern "C" void attribution_connector_kueue_anchor() {}
