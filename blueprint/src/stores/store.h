// Verdict stores (SPEC §9 "Writers"): where the run pipeline puts one row per workload attempt.
// The schema is docs/store.md; SQLite (default) and PostgreSQL hold it, JSON lines and webhooks
// only emit. Stores are registered by name like connectors ("sqlite", "postgres", "jsonl",
// "webhook") and built from their YAML block (errors name the key).
// Thread-safety: a store instance is used by one run at a time.
#pragma once

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "attribution/engine.h"

namespace attribution::blueprint {

// One analysed attempt, as handed to every store.
struct RunRecord {
  ExecutionContext context;
  Verdict verdict;
  std::string rules_digest;
  std::string analyzed_at;  // RFC 3339
};

// The derived columns of a run row (docs/store.md), computed once from a RunRecord.
struct RunRow {
  std::string cluster, scheduler, job_id;
  int attempt = 0;
  std::string name, user_name, queue, state, terminal_state, start_time, end_time;
  std::optional<int64_t> end_ns;
  std::string outcome, domain, quality, root_symptom, root_node;
  std::string affected_nodes_json;  // JSON array
  std::string verdict_json;
  std::string rules_digest, analyzed_at;
  struct Node {
    std::string node, gpu, role;  // role: root_cause | affected | candidate
  };
  std::vector<Node> nodes;
};
RunRow make_run_row(const RunRecord& record);

// Migrations shared by SQL stores: version → statements (dialect-specific text is chosen by the store).
struct Migration {
  int version;
  std::vector<std::string> statements;
};

class VerdictStore {
 public:
  virtual ~VerdictStore() = default;
  virtual std::string name() const = 0;  // "sqlite:/path", "postgres", "jsonl:-", "webhook:url"
  // Writes (upserts) one attempt; `run_id` gets the row id where the store has one (else 0).
  virtual bool put(const RunRecord& record, int64_t& run_id, std::string& error) = 0;
  // Persistent cursors (watch mode). Stores without a table return false from supports_cursors().
  virtual bool supports_cursors() const { return false; }
  virtual bool get_cursor(const std::string& /*name*/, std::optional<std::string>& value, std::string& error) {
    value.reset();
    error = "this store keeps no cursors";
    return false;
  }
  virtual bool set_cursor(const std::string& /*name*/, const std::string& /*value*/, std::string& error) {
    error = "this store keeps no cursors";
    return false;
  }
  // Whether an attempt is already stored (watch uses it to never process a job twice).
  virtual bool has_run(const std::string& /*cluster*/, const std::string& /*scheduler*/,
                       const std::string& /*job_id*/, int /*attempt*/, bool& found, std::string& error) {
    found = false;
    error.clear();
    return true;
  }
};

// `key` is the config path of the block ("stores.postgres"), used to prefix errors.
using StoreFactory =
    std::function<std::unique_ptr<VerdictStore>(const YAML::Node& config, const std::string& key, std::string& error)>;
std::map<std::string, StoreFactory>& store_registry();
struct StoreRegistrar {
  StoreRegistrar(const char* name, StoreFactory f) { store_registry()[name] = std::move(f); }
};

// Current UTC time as RFC 3339 with milliseconds (the only clock the stores read).
std::string now_rfc3339();

}  // namespace attribution::blueprint
