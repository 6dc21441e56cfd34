// Fabric tables on SQLite and PostgreSQL (docs/fabric.md §4) and the fleet analysis / fleet
// context over them.
#include "fabric/store_fabric.h"

#include <fmt/format.h>
#include <sqlite3.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <set>
#include <stdexcept>

#ifdef ATTRIBUTION_HAVE_PQXX
#include <pqxx/pqxx>
#endif

#include "attribution/codec.h"

namespace attribution::blueprint {

using nlohmann::json;

RunFabricRow make_run_fabric_row(const RunRecord& record) {
  const ExecutionContext& c = record.context;
  RunFabricRow r;
  r.job_id = c.attempt > 0 ? fmt::format("{}#{}", c.id, c.attempt) : c.id;
  r.user_name = c.user;
  std::vector<std::string> hosts = c.nodes;
  std::sort(hosts.begin(), hosts.end());
  hosts.erase(std::unique(hosts.begin(), hosts.end()), hosts.end());
  r.hosts = fmt::format("{}", fmt::join(hosts, " "));
  r.outcome = record.verdict.outcome;
  if (c.end != kNoTime) r.end_ns = c.end;
  r.failed = record.verdict.domain != "none";
  json doc = json::parse(record.verdict.json, nullptr, false);
  json evidence = json::array();
  bool located_cause = false;
  if (doc.is_object()) {
    auto f = doc.find("fabric");
    if (f != doc.end() && f->is_object() && f->contains("evidence") && (*f)["evidence"].is_array()) {
      for (const auto& e : (*f)["evidence"]) {
        std::string role = e.value("role", "");
        if (role == "root_cause" || role == "candidate") located_cause = true;
        json kept = {{"node", e.value("node", "")}, {"symptom", e.value("symptom", "")}, {"role", role},
                     {"location", e.value("location", json::object())}};
        if (e.contains("source")) kept["source"] = e["source"];
        if (e.contains("line")) kept["line"] = e["line"];
        if (e.contains("text")) kept["text"] = e["text"].get<std::string>().substr(0, 300);
        evidence.push_back(std::move(kept));
      }
    }
  }
  const std::string& d = record.verdict.domain;
  r.fabric = r.failed && (d == "network" || record.verdict.outcome == "gpu.nvlink" || located_cause);
  if (r.fabric && evidence.empty()) {
    // A network verdict whose evidence names no location: the nodes it implicates.
    std::vector<std::string> nodes = record.verdict.affected_nodes;
    if (!record.verdict.root_node.empty()) nodes.push_back(record.verdict.root_node);
    std::sort(nodes.begin(), nodes.end());
    nodes.erase(std::unique(nodes.begin(), nodes.end()), nodes.end());
    for (const auto& n : nodes)
      evidence.push_back({{"node", n}, {"symptom", record.verdict.root_symptom}, {"role", "root_cause"},
                          {"location", json::object()}});
  }
  r.evidence = evidence.dump();
  return r;
}

const std::vector<std::string>& fabric_sqlite_migration() {
  static const std::vector<std::string> m = {
      R"(CREATE TABLE IF NOT EXISTS fabric_topologies (
  id INTEGER PRIMARY KEY, valid_from_ns INTEGER NOT NULL, imported_at TEXT NOT NULL,
  sources TEXT NOT NULL, digest TEXT NOT NULL, topology_json TEXT NOT NULL))",
      "CREATE INDEX IF NOT EXISTS fabric_topologies_valid ON fabric_topologies (valid_from_ns)",
      R"(CREATE TABLE IF NOT EXISTS run_fabric (
  run_id INTEGER PRIMARY KEY REFERENCES runs(id) ON DELETE CASCADE, end_ns INTEGER,
  job_id TEXT NOT NULL, user_name TEXT NOT NULL DEFAULT '', hosts TEXT NOT NULL,
  failed INTEGER NOT NULL, fabric INTEGER NOT NULL, outcome TEXT NOT NULL, evidence TEXT NOT NULL DEFAULT '[]'))",
      "CREATE INDEX IF NOT EXISTS run_fabric_end ON run_fabric (end_ns)",
      "CREATE INDEX IF NOT EXISTS run_fabric_fabric_end ON run_fabric (fabric, end_ns)",
      R"(CREATE TABLE IF NOT EXISTS fabric_findings (
  id TEXT PRIMARY KEY, component TEXT NOT NULL, kind TEXT NOT NULL, status TEXT NOT NULL,
  opened_at TEXT NOT NULL, updated_at TEXT NOT NULL, window_from_ns INTEGER NOT NULL, window_to_ns INTEGER NOT NULL,
  failed_runs INTEGER NOT NULL, crossing_runs INTEGER NOT NULL, confidence REAL NOT NULL, finding_json TEXT NOT NULL))",
      "CREATE INDEX IF NOT EXISTS fabric_findings_status ON fabric_findings (status, component)",
      // Runs stored before this migration: their rows, from the stored verdicts.
      R"(INSERT OR IGNORE INTO run_fabric (run_id, end_ns, job_id, user_name, hosts, failed, fabric, outcome, evidence)
  SELECT id, end_ns, job_id || CASE WHEN attempt > 0 THEN '#' || attempt ELSE '' END, coalesce(user_name, ''),
    coalesce((SELECT group_concat(value, ' ') FROM (SELECT value FROM json_each(verdict_json, '$.workload.nodes') ORDER BY value)), ''),
    domain != 'none', domain = 'network' OR outcome = 'gpu.nvlink', outcome,
    coalesce(json_extract(verdict_json, '$.fabric.evidence'), '[]')
  FROM runs)"};
  return m;
}

const std::vector<std::string>& fabric_pg_migration() {
  static const std::vector<std::string> m = {
      R"(CREATE TABLE IF NOT EXISTS fabric_topologies (
  id BIGSERIAL PRIMARY KEY, valid_from_ns BIGINT NOT NULL, imported_at TEXT NOT NULL,
  sources TEXT NOT NULL, digest TEXT NOT NULL, topology_json TEXT NOT NULL))",
      "CREATE INDEX IF NOT EXISTS fabric_topologies_valid ON fabric_topologies (valid_from_ns)",
      R"(CREATE TABLE IF NOT EXISTS run_fabric (
  run_id BIGINT PRIMARY KEY REFERENCES runs(id) ON DELETE CASCADE, end_ns BIGINT,
  job_id TEXT NOT NULL, user_name TEXT NOT NULL DEFAULT '', hosts TEXT NOT NULL,
  failed BOOLEAN NOT NULL, fabric BOOLEAN NOT NULL, outcome TEXT NOT NULL, evidence TEXT NOT NULL DEFAULT '[]'))",
      "CREATE INDEX IF NOT EXISTS run_fabric_end ON run_fabric (end_ns)",
      "CREATE INDEX IF NOT EXISTS run_fabric_fabric_end ON run_fabric (fabric, end_ns)",
      R"(CREATE TABLE IF NOT EXISTS fabric_findings (
  id TEXT PRIMARY KEY, component TEXT NOT NULL, kind TEXT NOT NULL, status TEXT NOT NULL,
  opened_at TEXT NOT NULL, updated_at TEXT NOT NULL, window_from_ns BIGINT NOT NULL, window_to_ns BIGINT NOT NULL,
  failed_runs BIGINT NOT NULL, crossing_runs BIGINT NOT NULL, confidence DOUBLE PRECISION NOT NULL, finding_json TEXT NOT NULL))",
      "CREATE INDEX IF NOT EXISTS fabric_findings_status ON fabric_findings (status, component)",
      R"(INSERT INTO run_fabric (run_id, end_ns, job_id, user_name, hosts, failed, fabric, outcome, evidence)
  SELECT id, end_ns, job_id || CASE WHEN attempt > 0 THEN '#' || attempt ELSE '' END, coalesce(user_name, ''),
    coalesce((SELECT string_agg(n, ' ' ORDER BY n) FROM jsonb_array_elements_text(verdict_json::jsonb #> '{workload,nodes}') AS n), ''),
    domain <> 'none', domain = 'network' OR outcome = 'gpu.nvlink', outcome,
    coalesce(verdict_json::jsonb #>> '{fabric,evidence}', '[]')
  FROM runs ON CONFLICT DO NOTHING)"};
  return m;
}

bool sqlite_put_run_fabric(sqlite3* db, int64_t run_id, const RunRecord& record, std::string& error) {
  RunFabricRow r = make_run_fabric_row(record);
  sqlite3_stmt* s = nullptr;
  const char* sql =
      "INSERT OR REPLACE INTO run_fabric (run_id, end_ns, job_id, user_name, hosts, failed, fabric, outcome, evidence) "
      "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)";
  if (sqlite3_prepare_v2(db, sql, -1, &s, nullptr) != SQLITE_OK) {
    error = sqlite3_errmsg(db);
    return false;
  }
  auto text = [&](int i, const std::string& v) { sqlite3_bind_text(s, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT); };
  sqlite3_bind_int64(s, 1, run_id);
  if (r.end_ns) sqlite3_bind_int64(s, 2, *r.end_ns);
  else sqlite3_bind_null(s, 2);
  text(3, r.job_id);
  text(4, r.user_name);
  text(5, r.hosts);
  sqlite3_bind_int(s, 6, r.failed ? 1 : 0);
  sqlite3_bind_int(s, 7, r.fabric ? 1 : 0);
  text(8, r.outcome);
  text(9, r.evidence);
  bool ok = sqlite3_step(s) == SQLITE_DONE;
  if (!ok) error = sqlite3_errmsg(db);
  sqlite3_finalize(s);
  return ok;
}

namespace {

// Finding row values shared by both stores.
struct FindingRow {
  std::string id, component, kind, status, json_text;
  int64_t from = 0, to = 0, failed = 0, crossing = 0;
  double confidence = 0;
};
std::vector<FindingRow> finding_rows(const json& doc) {
  std::vector<FindingRow> rows;
  for (const auto& f : doc["findings"]) {
    FindingRow r;
    r.id = f.value("id", "");
    r.component = f.value("component", "");
    r.kind = f.value("kind", "");
    r.status = f.value("status", "open");
    r.from = doc["window"].value("from_ns", int64_t{0});
    r.to = doc["window"].value("to_ns", int64_t{0});
    r.failed = f.value("failed_runs", int64_t{0});
    r.crossing = f.value("crossing_runs", int64_t{0});
    r.confidence = f.value("confidence", 0.0);
    r.json_text = f.dump();
    rows.push_back(std::move(r));
  }
  return rows;
}

class SqliteFabricStore : public FabricStore {
 public:
  SqliteFabricStore(std::string path, bool read_only) : path_(std::move(path)) {
    if (read_only) {
      if (sqlite3_open_v2(path_.c_str(), &db_, SQLITE_OPEN_READONLY | SQLITE_OPEN_FULLMUTEX, nullptr) != SQLITE_OK)
        throw std::runtime_error(fmt::format("{}: {}", path_, db_ ? sqlite3_errmsg(db_) : "cannot open"));
      sqlite3_busy_timeout(db_, 10000);
      return;
    }
    // The verdict store's own migrations create the tables (a fresh file gets everything).
    std::string error;
    YAML::Node cfg;
    cfg["path"] = path_;
    auto factory = store_registry().find("sqlite");
    if (factory == store_registry().end()) throw std::runtime_error("no sqlite store in this build");
    auto store = factory->second(cfg, "sqlite", error);
    if (!store) throw std::runtime_error(error);
    store.reset();
    if (sqlite3_open_v2(path_.c_str(), &db_, SQLITE_OPEN_READWRITE | SQLITE_OPEN_FULLMUTEX, nullptr) != SQLITE_OK)
      throw std::runtime_error(fmt::format("{}: {}", path_, db_ ? sqlite3_errmsg(db_) : "cannot open"));
    sqlite3_busy_timeout(db_, 10000);
  }
  ~SqliteFabricStore() override { sqlite3_close_v2(db_); }
  std::string describe() const override { return "sqlite:" + path_; }

  bool put_topology(fabric::Topology& t, std::string& error) override {
    Q q(db_, "INSERT INTO fabric_topologies (valid_from_ns, imported_at, sources, digest, topology_json) "
             "VALUES (?1, ?2, ?3, ?4, ?5) RETURNING id", error);
    if (!q) return false;
    q.i64(1, t.valid_from_ns);
    q.text(2, t.imported_at);
    q.text(3, json(t.sources).dump());
    q.text(4, t.digest);
    q.text(5, t.to_json(false).dump());
    if (sqlite3_step(q.s) != SQLITE_ROW) return fail(error);
    t.id = sqlite3_column_int64(q.s, 0);
    return true;
  }

  std::optional<fabric::Topology> topology_at(int64_t at, std::string& error) override {
    error.clear();
    for (const char* sql : {"SELECT id, topology_json FROM fabric_topologies WHERE valid_from_ns <= ?1 "
                            "ORDER BY valid_from_ns DESC, id DESC LIMIT 1",
                            "SELECT id, topology_json FROM fabric_topologies ORDER BY valid_from_ns, id LIMIT 1"}) {
      Q q(db_, sql, error);
      if (!q) return std::nullopt;
      q.i64(1, at);
      int rc = sqlite3_step(q.s);
      if (rc == SQLITE_ROW) return decode(sqlite3_column_int64(q.s, 0), col(q.s, 1), error);
      if (rc != SQLITE_DONE) {
        fail(error);
        return std::nullopt;
      }
    }
    return std::nullopt;
  }

  bool topology_starts(int64_t from, int64_t to, std::vector<int64_t>& out, std::string& error) override {
    error.clear();
    out.clear();
    Q q(db_, "SELECT DISTINCT valid_from_ns FROM fabric_topologies WHERE valid_from_ns > ?1 AND valid_from_ns <= ?2 "
             "ORDER BY valid_from_ns", error);
    if (!q) return false;
    q.i64(1, from);
    q.i64(2, to);
    int rc;
    while ((rc = sqlite3_step(q.s)) == SQLITE_ROW) out.push_back(sqlite3_column_int64(q.s, 0));
    return rc == SQLITE_DONE || fail(error);
  }

  std::optional<int64_t> newest_end(std::string& error) override {
    Q q(db_, "SELECT max(end_ns) FROM run_fabric", error);
    if (!q || sqlite3_step(q.s) != SQLITE_ROW || sqlite3_column_type(q.s, 0) == SQLITE_NULL) return std::nullopt;
    return sqlite3_column_int64(q.s, 0);
  }

  bool scan_runs(int64_t from, int64_t to, const std::function<void(const fabric::FabricRunRow&)>& f,
                 std::string& error, bool only_fabric) override {
    Q q(db_, only_fabric ? "SELECT run_id, end_ns, job_id, user_name, hosts, failed, fabric, outcome, evidence "
                           "FROM run_fabric WHERE fabric = 1 AND end_ns BETWEEN ?1 AND ?2"
                         : "SELECT run_id, end_ns, job_id, user_name, hosts, failed, fabric, outcome, "
                           "CASE WHEN fabric THEN evidence ELSE '' END FROM run_fabric WHERE end_ns BETWEEN ?1 AND ?2",
        error);
    if (!q) return false;
    q.i64(1, from);
    q.i64(2, to);
    int rc;
    fabric::FabricRunRow row;
    while ((rc = sqlite3_step(q.s)) == SQLITE_ROW) {
      row.run_id = sqlite3_column_int64(q.s, 0);
      row.end_ns = sqlite3_column_int64(q.s, 1);
      row.job_id = col(q.s, 2);
      row.user = col(q.s, 3);
      row.hosts = col(q.s, 4);
      row.failed = sqlite3_column_int(q.s, 5) != 0;
      row.fabric = sqlite3_column_int(q.s, 6) != 0;
      row.outcome = col(q.s, 7);
      row.evidence = col(q.s, 8);
      f(row);
    }
    return rc == SQLITE_DONE || fail(error);
  }

  bool open_findings(std::vector<std::pair<std::string, std::string>>& out, std::string& error) override {
    Q q(db_, "SELECT component, id FROM fabric_findings WHERE status = 'open' ORDER BY component", error);
    if (!q) return false;
    int rc;
    while ((rc = sqlite3_step(q.s)) == SQLITE_ROW) out.emplace_back(std::string(col(q.s, 0)), std::string(col(q.s, 1)));
    return rc == SQLITE_DONE || fail(error);
  }

  bool save_findings(const json& doc, const std::vector<std::string>& closed, std::string& error) override {
    if (!exec("BEGIN IMMEDIATE", error)) return false;
    std::string now = now_rfc3339();
    bool ok = true;
    for (const auto& r : finding_rows(doc)) {
      Q q(db_, R"(INSERT INTO fabric_findings (id, component, kind, status, opened_at, updated_at, window_from_ns,
  window_to_ns, failed_runs, crossing_runs, confidence, finding_json) VALUES (?1, ?2, ?3, ?4, ?5, ?5, ?6, ?7, ?8, ?9, ?10, ?11)
ON CONFLICT (id) DO UPDATE SET status = excluded.status, updated_at = excluded.updated_at,
  window_from_ns = excluded.window_from_ns, window_to_ns = excluded.window_to_ns, failed_runs = excluded.failed_runs,
  crossing_runs = excluded.crossing_runs, confidence = excluded.confidence, finding_json = excluded.finding_json)",
            error);
      if (!q) {
        ok = false;
        break;
      }
      q.text(1, r.id);
      q.text(2, r.component);
      q.text(3, r.kind);
      q.text(4, r.status);
      q.text(5, now);
      q.i64(6, r.from);
      q.i64(7, r.to);
      q.i64(8, r.failed);
      q.i64(9, r.crossing);
      sqlite3_bind_double(q.s, 10, r.confidence);
      q.text(11, r.json_text);
      if (sqlite3_step(q.s) != SQLITE_DONE) {
        ok = fail(error);
        break;
      }
    }
    for (const auto& id : closed) {
      if (!ok) break;
      Q q(db_, "UPDATE fabric_findings SET status = 'closed', updated_at = ?2, "
               "finding_json = json_set(finding_json, '$.status', 'closed') WHERE id = ?1", error);
      if (!q) {
        ok = false;
        break;
      }
      q.text(1, id);
      q.text(2, now);
      if (sqlite3_step(q.s) != SQLITE_DONE) ok = fail(error);
    }
    std::string e2;
    exec(ok ? "COMMIT" : "ROLLBACK", e2);
    return ok;
  }

  bool list_findings(const std::string& status, json& out, std::string& error) override {
    Q q(db_, "SELECT finding_json, opened_at, updated_at FROM fabric_findings WHERE (?1 = '' OR status = ?1) "
             "ORDER BY status = 'open' DESC, confidence DESC, id LIMIT 1000", error);
    if (!q) return false;
    q.text(1, status);
    out = json::array();
    int rc;
    while ((rc = sqlite3_step(q.s)) == SQLITE_ROW) {
      json f = json::parse(col(q.s, 0), nullptr, false);
      if (!f.is_object()) continue;
      f["opened_at"] = std::string(col(q.s, 1));
      f["updated_at"] = std::string(col(q.s, 2));
      out.push_back(std::move(f));
    }
    return rc == SQLITE_DONE || fail(error);
  }

 private:
  struct Q {
    sqlite3_stmt* s = nullptr;
    Q(sqlite3* db, const char* sql, std::string& error) {
      if (sqlite3_prepare_v2(db, sql, -1, &s, nullptr) != SQLITE_OK) {
        error = sqlite3_errmsg(db);
        s = nullptr;
      }
    }
    ~Q() { sqlite3_finalize(s); }
    explicit operator bool() const { return s != nullptr; }
    void text(int i, const std::string& v) { sqlite3_bind_text(s, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT); }
    void i64(int i, int64_t v) { sqlite3_bind_int64(s, i, v); }
  };
  static std::string_view col(sqlite3_stmt* s, int i) {
    const unsigned char* p = sqlite3_column_text(s, i);
    return p ? std::string_view(reinterpret_cast<const char*>(p), static_cast<size_t>(sqlite3_column_bytes(s, i)))
             : std::string_view();
  }
  std::optional<fabric::Topology> decode(int64_t id, std::string_view text, std::string& error) {
    json j = json::parse(text, nullptr, false);
    fabric::Topology t;
    if (!fabric::Topology::from_json(j, t, error)) {
      error = fmt::format("{}: topology {}: {}", path_, id, error);
      return std::nullopt;
    }
    t.id = id;
    return t;
  }
  bool fail(std::string& error) {
    error = fmt::format("{}: {}", path_, sqlite3_errmsg(db_));
    return false;
  }
  bool exec(const char* sql, std::string& error) {
    char* msg = nullptr;
    if (sqlite3_exec(db_, sql, nullptr, nullptr, &msg) != SQLITE_OK) {
      error = fmt::format("{}: {}", path_, msg ? msg : sqlite3_errmsg(db_));
      sqlite3_free(msg);
      return false;
    }
    return true;
  }
  std::string path_;
  sqlite3* db_ = nullptr;
};

#ifdef ATTRIBUTION_HAVE_PQXX
class PgFabricStore : public FabricStore {
 public:
  PgFabricStore(std::string dsn, bool read_only) : dsn_(std::move(dsn)) {
    if (read_only) {
      conn_ = std::make_unique<pqxx::connection>(dsn_);
      pqxx::nontransaction tx(*conn_);
      tx.exec0("SET default_transaction_read_only = on");
      return;
    }
    std::string error;
    YAML::Node cfg;
    cfg["dsn"] = dsn_;
    auto factory = store_registry().find("postgres");
    if (factory == store_registry().end()) throw std::runtime_error("no postgres store in this build");
    auto store = factory->second(cfg, "postgres", error);
    if (!store) throw std::runtime_error(error);
    store.reset();
    conn_ = std::make_unique<pqxx::connection>(dsn_);
  }
  std::string describe() const override { return "postgres"; }

  bool put_topology(fabric::Topology& t, std::string& error) override {
    return guarded(error, [&] {
      pqxx::work tx(*conn_);
      auto r = tx.exec_params1("INSERT INTO fabric_topologies (valid_from_ns, imported_at, sources, digest, topology_json) "
                               "VALUES ($1, $2, $3, $4, $5) RETURNING id",
                               t.valid_from_ns, t.imported_at, json(t.sources).dump(), t.digest, t.to_json(false).dump());
      t.id = r[0].as<int64_t>();
      tx.commit();
    });
  }

  std::optional<fabric::Topology> topology_at(int64_t at, std::string& error) override {
    std::optional<fabric::Topology> out;
    error.clear();
    guarded(error, [&] {
      pqxx::read_transaction tx(*conn_);
      auto r = tx.exec_params("SELECT id, topology_json FROM fabric_topologies WHERE valid_from_ns <= $1 "
                              "ORDER BY valid_from_ns DESC, id DESC LIMIT 1", at);
      if (r.empty()) r = tx.exec("SELECT id, topology_json FROM fabric_topologies ORDER BY valid_from_ns, id LIMIT 1");
      if (r.empty()) return;
      fabric::Topology t;
      std::string e;
      if (!fabric::Topology::from_json(json::parse(r[0][1].c_str(), nullptr, false), t, e))
        throw std::runtime_error(fmt::format("topology {}: {}", r[0][0].c_str(), e));
      t.id = r[0][0].as<int64_t>();
      out = std::move(t);
    });
    return out;
  }

  bool topology_starts(int64_t from, int64_t to, std::vector<int64_t>& out, std::string& error) override {
    out.clear();
    return guarded(error, [&] {
      pqxx::read_transaction tx(*conn_);
      auto r = tx.exec_params("SELECT DISTINCT valid_from_ns FROM fabric_topologies WHERE valid_from_ns > $1 AND "
                              "valid_from_ns <= $2 ORDER BY valid_from_ns", from, to);
      for (const auto& row : r) out.push_back(row[0].as<int64_t>());
    });
  }

  std::optional<int64_t> newest_end(std::string& error) override {
    std::optional<int64_t> out;
    guarded(error, [&] {
      pqxx::read_transaction tx(*conn_);
      auto r = tx.exec("SELECT max(end_ns) FROM run_fabric");
      if (!r.empty() && !r[0][0].is_null()) out = r[0][0].as<int64_t>();
    });
    return out;
  }

  bool scan_runs(int64_t from, int64_t to, const std::function<void(const fabric::FabricRunRow&)>& f,
                 std::string& error, bool only_fabric) override {
    return guarded(error, [&] {
      pqxx::work tx(*conn_);
      fabric::FabricRunRow row;
      // A server-side cursor: one pass, the client holds one batch at a time.
      tx.exec0(fmt::format("DECLARE fabric_scan NO SCROLL CURSOR FOR SELECT run_id, end_ns, job_id, user_name, hosts, "
                           "failed, fabric, outcome, CASE WHEN fabric THEN evidence ELSE '' END FROM run_fabric "
                           "WHERE {}end_ns BETWEEN {} AND {}",
                           only_fabric ? "fabric AND " : "", from, to));
      for (;;) {
        pqxx::result batch = tx.exec("FETCH 20000 FROM fabric_scan");
        if (batch.empty()) break;
        for (const auto& r : batch) {
          row.run_id = r[0].as<int64_t>();
          row.end_ns = r[1].as<int64_t>();
          row.job_id = std::string_view(r[2].c_str(), r[2].size());
          row.user = std::string_view(r[3].c_str(), r[3].size());
          row.hosts = std::string_view(r[4].c_str(), r[4].size());
          row.failed = r[5].c_str()[0] == 't';
          row.fabric = r[6].c_str()[0] == 't';
          row.outcome = std::string_view(r[7].c_str(), r[7].size());
          row.evidence = std::string_view(r[8].c_str(), r[8].size());
          f(row);
        }
      }
      tx.exec0("CLOSE fabric_scan");
      tx.commit();
    });
  }

  bool open_findings(std::vector<std::pair<std::string, std::string>>& out, std::string& error) override {
    return guarded(error, [&] {
      pqxx::read_transaction tx(*conn_);
      for (const auto& r : tx.exec("SELECT component, id FROM fabric_findings WHERE status = 'open' ORDER BY component"))
        out.emplace_back(r[0].c_str(), r[1].c_str());
    });
  }

  bool save_findings(const json& doc, const std::vector<std::string>& closed, std::string& error) override {
    return guarded(error, [&] {
      pqxx::work tx(*conn_);
      std::string now = now_rfc3339();
      for (const auto& r : finding_rows(doc))
        tx.exec_params0(R"(INSERT INTO fabric_findings (id, component, kind, status, opened_at, updated_at, window_from_ns,
  window_to_ns, failed_runs, crossing_runs, confidence, finding_json) VALUES ($1, $2, $3, $4, $5, $5, $6, $7, $8, $9, $10, $11)
ON CONFLICT (id) DO UPDATE SET status = EXCLUDED.status, updated_at = EXCLUDED.updated_at,
  window_from_ns = EXCLUDED.window_from_ns, window_to_ns = EXCLUDED.window_to_ns, failed_runs = EXCLUDED.failed_runs,
  crossing_runs = EXCLUDED.crossing_runs, confidence = EXCLUDED.confidence, finding_json = EXCLUDED.finding_json)",
                        r.id, r.component, r.kind, r.status, now, r.from, r.to, r.failed, r.crossing, r.confidence,
                        r.json_text);
      for (const auto& id : closed)
        tx.exec_params0("UPDATE fabric_findings SET status = 'closed', updated_at = $2, "
                        "finding_json = jsonb_set(finding_json::jsonb, '{status}', '\"closed\"')::text WHERE id = $1",
                        id, now);
      tx.commit();
    });
  }

  bool list_findings(const std::string& status, json& out, std::string& error) override {
    out = json::array();
    return guarded(error, [&] {
      pqxx::read_transaction tx(*conn_);
      for (const auto& r : tx.exec_params("SELECT finding_json, opened_at, updated_at FROM fabric_findings WHERE ($1 = '' OR status = $1) "
                                          "ORDER BY status = 'open' DESC, confidence DESC, id LIMIT 1000",
                                          status)) {
        json f = json::parse(r[0].c_str(), nullptr, false);
        if (!f.is_object()) continue;
        f["opened_at"] = r[1].c_str();
        f["updated_at"] = r[2].c_str();
        out.push_back(std::move(f));
      }
    });
  }

 private:
  template <class F>
  bool guarded(std::string& error, F&& f) {
    try {
      if (!conn_ || !conn_->is_open()) conn_ = std::make_unique<pqxx::connection>(dsn_);
      f();
      return true;
    } catch (const std::exception& e) {
      error = fmt::format("postgres: {}", e.what());
      while (!error.empty() && error.back() == '\n') error.pop_back();
      return false;
    }
  }
  std::string dsn_;
  std::unique_ptr<pqxx::connection> conn_;
};
#endif

}  // namespace

std::unique_ptr<FabricStore> open_fabric_store(const std::string& db, const std::string& postgres, bool read_only) {
  if (!postgres.empty()) {
#ifdef ATTRIBUTION_HAVE_PQXX
    return std::make_unique<PgFabricStore>(postgres, read_only);
#else
    throw std::runtime_error("this build has no PostgreSQL support (libpqxx-dev)");
#endif
  }
  if (db.empty()) throw std::runtime_error("no verdict store: give --db FILE or --postgres DSN");
  return std::make_unique<SqliteFabricStore>(db, read_only);
}

namespace {
// The topology versions valid during [from, to]: the one valid at `from` and each one that starts
// inside the window (docs/fabric.md §3: each run is resolved against the version valid at its end).
struct WindowTopologies {
  std::vector<std::unique_ptr<fabric::TopologyIndex>> indexes;
  std::vector<fabric::TopologyEpoch> epochs;
  // The version valid at `t` (epochs are ascending by valid_from).
  const fabric::TopologyIndex& at(int64_t t) const { return *epochs[fabric::epoch_at(epochs, t)].index; }
};

bool window_topologies(FabricStore& store, int64_t from, int64_t to, WindowTopologies& out, std::string& error) {
  error.clear();
  std::vector<int64_t> starts;
  if (!store.topology_starts(from, to, starts, error)) return false;
  starts.insert(starts.begin(), from);
  for (int64_t at : starts) {
    auto topo = store.topology_at(at, error);
    if (!topo) {
      if (!error.empty()) return false;
      continue;
    }
    if (!out.indexes.empty() && out.indexes.back()->topology().id == topo->id) continue;
    int64_t valid_from = out.indexes.empty() ? INT64_MIN : topo->valid_from_ns;
    out.indexes.push_back(std::make_unique<fabric::TopologyIndex>(std::move(*topo)));
    out.epochs.push_back({valid_from, out.indexes.back().get()});
  }
  return true;
}
}  // namespace

bool component_runs(FabricStore& store, const std::string& component, int64_t from, int64_t to, int limit, json& out,
                    std::string& error) {
  error.clear();
  WindowTopologies topologies;
  if (!window_topologies(store, from, to, topologies, error)) return false;
  if (topologies.epochs.empty()) {
    error = "no topology stored";
    return false;
  }
  const fabric::TopologyIndex& newest = *topologies.epochs.back().index;
  std::string kind;
  for (const auto& e : topologies.epochs)
    if (int c = e.index->find(component); c >= 0) kind = e.index->components()[static_cast<size_t>(c)].kind;
  if (kind.empty()) {
    error = fmt::format("no component '{}' in topology {}", component, newest.topology().id);
    return false;
  }
  std::vector<json> runs;
  std::vector<int> touched;
  bool ok = store.scan_runs(
      from, to,
      [&](const fabric::FabricRunRow& r) {
        const fabric::TopologyIndex& index = topologies.at(r.end_ns);
        const int c = index.find(component);
        if (c < 0) return;
        json ev = json::parse(r.evidence.begin(), r.evidence.end(), nullptr, false);
        if (!ev.is_array()) return;
        json hits = json::array();
        for (const auto& e : ev) {
          if (!e.is_object()) continue;
          fabric::Location loc;
          loc.node = e.value("node", "");
          if (auto l = e.find("location"); l != e.end() && l->is_object())
            for (const auto& [k, v] : l->items())
              if (v.is_string()) loc.fields[k] = v.get<std::string>();
          touched.clear();
          index.touched(loc, touched);
          if (std::find(touched.begin(), touched.end(), c) != touched.end()) hits.push_back(e);
        }
        if (hits.empty()) return;
        runs.push_back({{"run_id", r.run_id}, {"job_id", std::string(r.job_id)}, {"user", std::string(r.user)},
                        {"end_ns", r.end_ns}, {"outcome", std::string(r.outcome)}, {"failed", r.failed},
                        {"fabric", r.fabric}, {"evidence", std::move(hits)}});
      },
      error, true);
  if (!ok) return false;
  std::sort(runs.begin(), runs.end(), [](const json& a, const json& b) {
    return std::make_pair(a["end_ns"].get<int64_t>(), a["run_id"].get<int64_t>()) >
           std::make_pair(b["end_ns"].get<int64_t>(), b["run_id"].get<int64_t>());
  });
  size_t total = runs.size();
  if (runs.size() > static_cast<size_t>(limit)) runs.resize(static_cast<size_t>(limit));
  out = {{"component", component}, {"kind", kind},
         {"runs", std::move(runs)}, {"runs_total", total}};
  return true;
}

bool run_fleet_fabric(FabricStore& store, int64_t since_ns, std::optional<int64_t> to_ns, bool dry_run, json& doc,
                      std::string& error) {
  error.clear();
  if (!to_ns) {
    to_ns = store.newest_end(error);
    if (!error.empty()) return false;
    if (!to_ns) {
      error = fmt::format("{}: no runs stored yet", store.describe());
      return false;
    }
  }
  fabric::FleetOptions opt;
  opt.from_ns = *to_ns - since_ns;
  opt.to_ns = *to_ns;
  WindowTopologies topologies;
  if (!window_topologies(store, opt.from_ns, opt.to_ns, topologies, error)) return false;
  if (topologies.epochs.empty()) {
    error = fmt::format("{}: no topology stored (attribution-blueprint topology import)", store.describe());
    return false;
  }
  fabric::FleetAnalysis analysis(topologies.epochs, opt);
  if (!store.scan_runs(opt.from_ns, opt.to_ns, [&](const fabric::FabricRunRow& r) { analysis.add(r); }, error)) return false;
  doc = analysis.finish();
  std::vector<std::pair<std::string, std::string>> open;
  if (!store.open_findings(open, error)) return false;
  std::vector<std::string> closed = fabric::assign_ids(doc, open);
  doc["closed"] = closed;
  if (!dry_run && !store.save_findings(doc, closed, error)) return false;
  return true;
}

std::vector<FleetContextLine> fleet_context(FabricStore& store, const std::vector<std::string>& hosts, int64_t at_ns,
                                            std::string& error) {
  std::vector<FleetContextLine> out;
  json findings;
  if (!store.list_findings("open", findings, error) || findings.empty()) return out;
  auto topo = store.topology_at(at_ns, error);
  if (!topo) return out;
  fabric::TopologyIndex index(std::move(*topo));
  std::set<std::pair<std::string, std::string>> seen;
  for (const auto& host : hosts) {
    std::vector<int> attached;
    index.attached(host, attached);
    std::set<std::string> ids;
    for (int c : attached) ids.insert(index.components()[static_cast<size_t>(c)].id);
    for (const auto& f : findings) {
      std::string comp = f.value("component", "");
      if (!ids.count(comp) || !seen.emplace(host, f.value("id", "")).second) continue;
      out.push_back({host, fmt::format("attribution fleet: open fabric finding {} on {} confidence {:.4f} failed_runs {} "
                                       "hosts {} since {}",
                                       f.value("id", ""), comp, f.value("confidence", 0.0), f.value("failed_runs", 0),
                                       f.value("hosts_total", 0), f["window"].value("from", ""))});
    }
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return std::tie(a.host, a.text) < std::tie(b.host, b.text); });
  return out;
}

}  // namespace attribution::blueprint
