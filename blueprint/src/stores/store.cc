#include "stores/store.h"

#include <nlohmann/json.hpp>

#include <chrono>
#include <set>

#include "attribution/codec.h"

namespace attribution::blueprint {

std::map<std::string, StoreFactory>& store_registry() {
  static std::map<std::string, StoreFactory> registry;
  return registry;
}

std::string now_rfc3339() {
  auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                std::chrono::system_clock::now().time_since_epoch())
                .count();
  return format_rfc3339(static_cast<TimeNs>(ns));
}

namespace {
std::string str_or_empty(const nlohmann::json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_string()) return "";
  return it->get<std::string>();
}
}  // namespace

RunRow make_run_row(const RunRecord& record) {
  const auto& c = record.context;
  const auto& v = record.verdict;
  RunRow r;
  r.cluster = c.cluster;
  r.scheduler = c.scheduler;
  r.job_id = c.id;
  r.attempt = c.attempt;
  r.name = c.name;
  r.user_name = c.user;
  r.queue = c.queue;
  r.state = c.state;
  r.terminal_state = c.terminal_state.empty() ? normalize_terminal_state(c.state) : c.terminal_state;
  if (c.start != kNoTime) r.start_time = format_rfc3339(c.start);
  if (c.end != kNoTime) {
    r.end_time = format_rfc3339(c.end);
    r.end_ns = c.end;
  }
  r.outcome = v.outcome;
  r.domain = v.domain;
  r.quality = v.quality;
  r.root_symptom = v.root_symptom;
  r.root_node = v.root_node;
  r.affected_nodes_json = nlohmann::json(v.affected_nodes).dump();
  r.verdict_json = v.json;
  r.rules_digest = record.rules_digest;
  r.analyzed_at = record.analyzed_at.empty() ? now_rfc3339() : record.analyzed_at;

  std::set<std::tuple<std::string, std::string, std::string>> seen;
  auto add = [&](const std::string& node, const std::string& gpu, const char* role) {
    if (node.empty()) return;
    if (seen.emplace(node, gpu, role).second) r.nodes.push_back({node, gpu, role});
  };
  nlohmann::json doc = nlohmann::json::parse(v.json, nullptr, false);
  if (doc.is_object()) {
    if (r.terminal_state.empty()) r.terminal_state = str_or_empty(doc, "terminal_state");
    if (r.rules_digest.empty() && doc.contains("engine") && doc["engine"].is_object())
      r.rules_digest = str_or_empty(doc["engine"], "rules_digest");
    auto rc = doc.find("root_cause");
    if (rc != doc.end() && rc->is_object()) {
      std::string gpu;
      auto g = rc->find("gpu");
      if (g != rc->end()) gpu = g->is_string() ? g->get<std::string>() : (g->is_number() ? g->dump() : "");
      add(str_or_empty(*rc, "node"), gpu, "root_cause");
    }
    auto q = doc.find("quality");
    if (q != doc.end() && q->is_object()) {
      auto cands = q->find("candidates");
      if (cands != q->end() && cands->is_array()) {
        for (const auto& cand : *cands) {
          if (cand.is_string()) continue;  // a symptom id, no node
          if (cand.is_object()) {
            std::string gpu;
            auto g = cand.find("gpu");
            if (g != cand.end()) gpu = g->is_string() ? g->get<std::string>() : (g->is_number() ? g->dump() : "");
            add(str_or_empty(cand, "node"), gpu, "candidate");
          }
        }
      }
    }
  }
  if (r.nodes.empty() || r.nodes.front().role != "root_cause") add(v.root_node, "", "root_cause");
  for (const auto& n : v.affected_nodes) add(n, "", "affected");
  return r;
}

}  // namespace attribution::blueprint
