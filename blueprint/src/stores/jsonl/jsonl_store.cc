// JSON lines writer: one verdict document per line (stdout with path "-", else appended to a file).
// Each line is {"cluster","scheduler","job_id","attempt","run":{…row columns…},"verdict":{…}}.
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <fstream>
#include <iostream>

#include "stores/store.h"

namespace attribution::blueprint {
namespace {

class JsonlStore : public VerdictStore {
 public:
  explicit JsonlStore(std::string path) : path_(std::move(path)) {}
  std::string name() const override { return "jsonl:" + path_; }
  bool open(std::string& error) {
    if (path_ == "-") return true;
    file_.open(path_, std::ios::app | std::ios::binary);
    if (!file_) {
      error = fmt::format("{}: cannot open for appending", path_);
      return false;
    }
    return true;
  }
  bool put(const RunRecord& record, int64_t& run_id, std::string& error) override {
    run_id = 0;
    RunRow r = make_run_row(record);
    nlohmann::json j;
    j["cluster"] = r.cluster;
    j["scheduler"] = r.scheduler;
    j["job_id"] = r.job_id;
    j["attempt"] = r.attempt;
    j["state"] = r.state;
    j["terminal_state"] = r.terminal_state;
    j["start_time"] = r.start_time;
    j["end_time"] = r.end_time;
    j["outcome"] = r.outcome;
    j["domain"] = r.domain;
    j["quality"] = r.quality;
    j["root_symptom"] = r.root_symptom;
    j["root_node"] = r.root_node;
    j["analyzed_at"] = r.analyzed_at;
    j["rules_digest"] = r.rules_digest;
    j["verdict"] = nlohmann::json::parse(r.verdict_json, nullptr, false);
    std::string line = j.dump() + "\n";
    if (path_ == "-") {
      std::cout << line << std::flush;
      return static_cast<bool>(std::cout) || (error = "stdout: write failed", false);
    }
    file_ << line;
    file_.flush();
    if (!file_) {
      error = fmt::format("{}: write failed", path_);
      return false;
    }
    return true;
  }

 private:
  std::string path_;
  std::ofstream file_;
};

StoreRegistrar jsonl_registrar("jsonl", [](const YAML::Node& config, const std::string& key,
                                           std::string& error) -> std::unique_ptr<VerdictStore> {
  std::string path = "-";
  if (config.IsMap() && config["path"]) path = config["path"].as<std::string>("-");
  else if (config.IsScalar()) path = config.as<std::string>("-");
  if (path.empty()) path = "-";
  auto s = std::make_unique<JsonlStore>(path);
  if (!s->open(error)) {
    error = key + ".path: " + error;
    return nullptr;
  }
  return s;
});

}  // namespace
}  // namespace attribution::blueprint
