// The fabric tables of the verdict store (docs/fabric.md §4) on SQLite and PostgreSQL: topology
// versions, one run_fabric row per stored run (written by the stores' put() in the same
// transaction), and the findings of the fleet analysis.
// Thread-safety: a FabricStore is used by one thread at a time.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "fabric/fleet.h"
#include "fabric/topology.h"
#include "stores/store.h"

struct sqlite3;

namespace attribution::blueprint {

// The run_fabric columns of a run (derived from its context and verdict).
struct RunFabricRow {
  std::string job_id, user_name, hosts, outcome, evidence;
  std::optional<int64_t> end_ns;
  bool failed = false, fabric = false;
};
RunFabricRow make_run_fabric_row(const RunRecord& record);

// Migration 2 of each store (the tables of docs/fabric.md §4).
const std::vector<std::string>& fabric_sqlite_migration();
const std::vector<std::string>& fabric_pg_migration();
// Writes (replaces) the run's run_fabric row inside the caller's open transaction.
bool sqlite_put_run_fabric(sqlite3* db, int64_t run_id, const RunRecord& record, std::string& error);

class FabricStore {
 public:
  virtual ~FabricStore() = default;
  virtual std::string describe() const = 0;
  // Stores a topology version; sets its id.
  virtual bool put_topology(fabric::Topology& topology, std::string& error) = 0;
  // The version valid at `at_ns` (the newest with valid_from ≤ at; when every version starts
  // later, the oldest); nullopt with error empty when none is stored.
  virtual std::optional<fabric::Topology> topology_at(int64_t at_ns, std::string& error) = 0;
  // The valid_from times of the versions that start inside (from_ns, to_ns], ascending, distinct.
  virtual bool topology_starts(int64_t from_ns, int64_t to_ns, std::vector<int64_t>& out, std::string& error) = 0;
  // Newest stored run end (nullopt: no runs).
  virtual std::optional<int64_t> newest_end(std::string& error) = 0;
  // Streams the run_fabric rows with end in [from, to] (only fabric failures with
  // `only_fabric`); evidence only for fabric failures.
  virtual bool scan_runs(int64_t from_ns, int64_t to_ns, const std::function<void(const fabric::FabricRunRow&)>& f,
                         std::string& error, bool only_fabric = false) = 0;
  // (component, id) of open findings.
  virtual bool open_findings(std::vector<std::pair<std::string, std::string>>& out, std::string& error) = 0;
  // Upserts the findings of `doc` (ids assigned) and closes `closed`.
  virtual bool save_findings(const nlohmann::json& doc, const std::vector<std::string>& closed, std::string& error) = 0;
  // Stored findings (status "open" or "" for all), open first, by confidence.
  virtual bool list_findings(const std::string& status, nlohmann::json& out, std::string& error) = 0;
};

// `db` (SQLite file) or `postgres` (DSN); the store's migrations run first (a fresh file gets the
// full schema), except `read_only` (the dashboard: SQLite opened read-only, PostgreSQL sessions
// read-only; writes fail). Throws std::runtime_error naming the store when it cannot be opened.
std::unique_ptr<FabricStore> open_fabric_store(const std::string& db, const std::string& postgres,
                                               bool read_only = false);

// The runs (newest first, at most `limit`) of [from, to] whose fabric evidence touches
// `component` under the topology valid at `to`: {"component", "runs": [...]} (docs/fabric.md §6).
bool component_runs(FabricStore& store, const std::string& component, int64_t from_ns, int64_t to_ns, int limit,
                    nlohmann::json& out, std::string& error);

// The fleet analysis over a store: the window [to − since, to] (to = `to_ns` or the newest run),
// the topology valid at `to`; stores the findings unless `dry_run`. Returns the findings
// document (ids and status assigned).
bool run_fleet_fabric(FabricStore& store, int64_t since_ns, std::optional<int64_t> to_ns, bool dry_run,
                      nlohmann::json& doc, std::string& error);

// Fleet context for one job (docs/fabric.md §3): the open findings whose component one of `hosts`
// attaches to, as node_report lines ("attribution fleet: open fabric finding …"), one per (host,
// finding), sorted. Empty when the store has no topology or no open finding.
struct FleetContextLine {
  std::string host, text;
};
std::vector<FleetContextLine> fleet_context(FabricStore& store, const std::vector<std::string>& hosts,
                                            int64_t at_ns, std::string& error);

}  // namespace attribution::blueprint
