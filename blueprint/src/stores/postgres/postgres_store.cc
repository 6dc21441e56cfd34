// PostgreSQL verdict store (shared by many blueprints): the docs/store.md tables with native
// types (BIGSERIAL, TIMESTAMPTZ, JSONB for affected_nodes; verdict_json stays TEXT: bytes matter).
// Migrations run under an advisory lock; upsert per (cluster, scheduler, job_id, attempt).
#ifdef ATTRIBUTION_HAVE_PQXX
#include <fmt/format.h>

#include <pqxx/pqxx>

#include "fabric/store_fabric.h"
#include "stores/store.h"

namespace attribution::blueprint {
namespace {

const std::vector<Migration>& pg_migrations() {
  static const std::vector<Migration> m = {
      {1,
       {R"(CREATE TABLE IF NOT EXISTS runs (
  id             BIGSERIAL PRIMARY KEY,
  cluster        TEXT NOT NULL DEFAULT '',
  scheduler      TEXT NOT NULL,
  job_id         TEXT NOT NULL,
  attempt        INTEGER NOT NULL DEFAULT 0,
  name           TEXT, user_name TEXT, queue TEXT,
  state          TEXT,
  terminal_state TEXT,
  start_time     TIMESTAMPTZ, end_time TIMESTAMPTZ,
  end_ns         BIGINT,
  outcome        TEXT NOT NULL,
  domain         TEXT NOT NULL,
  quality        TEXT NOT NULL,
  root_symptom   TEXT,
  root_node      TEXT,
  affected_nodes JSONB NOT NULL DEFAULT '[]',
  verdict_json   TEXT NOT NULL,
  rules_digest   TEXT,
  analyzed_at    TIMESTAMPTZ NOT NULL,
  UNIQUE (cluster, scheduler, job_id, attempt)
))",
        "CREATE INDEX IF NOT EXISTS runs_end ON runs (end_ns DESC, id DESC)",
        "CREATE INDEX IF NOT EXISTS runs_outcome ON runs (outcome)",
        "CREATE INDEX IF NOT EXISTS runs_domain ON runs (domain)",
        "CREATE INDEX IF NOT EXISTS runs_root_node ON runs (root_node)",
        R"(CREATE TABLE IF NOT EXISTS run_nodes (
  run_id BIGINT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  node   TEXT NOT NULL,
  gpu    TEXT NOT NULL DEFAULT '',
  role   TEXT NOT NULL,
  PRIMARY KEY (run_id, node, gpu, role)
))",
        "CREATE INDEX IF NOT EXISTS run_nodes_node ON run_nodes (node)",
        "CREATE TABLE IF NOT EXISTS cursors (name TEXT PRIMARY KEY, value TEXT NOT NULL, updated_at TIMESTAMPTZ NOT NULL)"}},
      {2, fabric_pg_migration()},  // docs/fabric.md §4
  };
  return m;
}

// Empty string → SQL NULL.
const char* opt(const std::string& s) { return s.empty() ? nullptr : s.c_str(); }

class PostgresStore : public VerdictStore {
 public:
  explicit PostgresStore(std::string dsn) : dsn_(std::move(dsn)) {}

  bool open(std::string& error) {
    try {
      conn_ = std::make_unique<pqxx::connection>(dsn_);
      pqxx::work tx(*conn_);
      tx.exec("SELECT pg_advisory_xact_lock(7262616)");  // serialize concurrent migrators
      tx.exec0("CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, applied_at TEXT NOT NULL)");
      for (const auto& m : pg_migrations()) {
        auto r = tx.exec_params("SELECT 1 FROM schema_migrations WHERE version = $1", m.version);
        if (!r.empty()) continue;
        for (const auto& sql : m.statements) tx.exec0(sql);
        tx.exec_params0("INSERT INTO schema_migrations (version, applied_at) VALUES ($1, $2)", m.version, now_rfc3339());
      }
      tx.commit();
      return true;
    } catch (const std::exception& e) {
      error = e.what();
      while (!error.empty() && error.back() == '\n') error.pop_back();
      return false;
    }
  }

  std::string name() const override { return "postgres"; }
  bool supports_cursors() const override { return true; }

  bool put(const RunRecord& record, int64_t& run_id, std::string& error) override {
    RunRow r = make_run_row(record);
    return guarded(error, [&] {
      pqxx::work tx(*conn_);
      auto row = tx.exec_params1(
          R"(INSERT INTO runs (cluster, scheduler, job_id, attempt, name, user_name, queue, state, terminal_state,
  start_time, end_time, end_ns, outcome, domain, quality, root_symptom, root_node, affected_nodes, verdict_json,
  rules_digest, analyzed_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10::timestamptz, $11::timestamptz, $12, $13, $14, $15, $16, $17,
  $18::jsonb, $19, $20, $21::timestamptz)
ON CONFLICT (cluster, scheduler, job_id, attempt) DO UPDATE SET
  name = EXCLUDED.name, user_name = EXCLUDED.user_name, queue = EXCLUDED.queue, state = EXCLUDED.state,
  terminal_state = EXCLUDED.terminal_state, start_time = EXCLUDED.start_time, end_time = EXCLUDED.end_time,
  end_ns = EXCLUDED.end_ns, outcome = EXCLUDED.outcome, domain = EXCLUDED.domain, quality = EXCLUDED.quality,
  root_symptom = EXCLUDED.root_symptom, root_node = EXCLUDED.root_node, affected_nodes = EXCLUDED.affected_nodes,
  verdict_json = EXCLUDED.verdict_json, rules_digest = EXCLUDED.rules_digest, analyzed_at = EXCLUDED.analyzed_at
RETURNING id)",
          r.cluster, r.scheduler, r.job_id, r.attempt, opt(r.name), opt(r.user_name), opt(r.queue), opt(r.state),
          opt(r.terminal_state), opt(r.start_time), opt(r.end_time),
          r.end_ns ? std::optional<int64_t>(*r.end_ns) : std::optional<int64_t>(), r.outcome, r.domain, r.quality,
          opt(r.root_symptom), opt(r.root_node), r.affected_nodes_json, r.verdict_json, opt(r.rules_digest),
          r.analyzed_at);
      run_id = row[0].as<int64_t>();
      tx.exec_params0("DELETE FROM run_nodes WHERE run_id = $1", run_id);
      for (const auto& n : r.nodes)
        tx.exec_params0("INSERT INTO run_nodes (run_id, node, gpu, role) VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING",
                        run_id, n.node, n.gpu, n.role);
      RunFabricRow f = make_run_fabric_row(record);
      tx.exec_params0(
          "INSERT INTO run_fabric (run_id, end_ns, job_id, user_name, hosts, failed, fabric, outcome, evidence) "
          "VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) ON CONFLICT (run_id) DO UPDATE SET end_ns = EXCLUDED.end_ns, "
          "job_id = EXCLUDED.job_id, user_name = EXCLUDED.user_name, hosts = EXCLUDED.hosts, failed = EXCLUDED.failed, "
          "fabric = EXCLUDED.fabric, outcome = EXCLUDED.outcome, evidence = EXCLUDED.evidence",
          run_id, f.end_ns, f.job_id, f.user_name, f.hosts, f.failed, f.fabric, f.outcome, f.evidence);
      tx.commit();
    });
  }

  bool get_cursor(const std::string& name, std::optional<std::string>& value, std::string& error) override {
    value.reset();
    return guarded(error, [&] {
      pqxx::work tx(*conn_);
      auto r = tx.exec_params("SELECT value FROM cursors WHERE name = $1", name);
      if (!r.empty()) value = r[0][0].as<std::string>();
      tx.commit();
    });
  }

  bool set_cursor(const std::string& name, const std::string& value, std::string& error) override {
    return guarded(error, [&] {
      pqxx::work tx(*conn_);
      tx.exec_params0(
          "INSERT INTO cursors (name, value, updated_at) VALUES ($1, $2, now()) "
          "ON CONFLICT (name) DO UPDATE SET value = EXCLUDED.value, updated_at = EXCLUDED.updated_at",
          name, value);
      tx.commit();
    });
  }

  bool has_run(const std::string& cluster, const std::string& scheduler, const std::string& job_id, int attempt,
               bool& found, std::string& error) override {
    found = false;
    return guarded(error, [&] {
      pqxx::work tx(*conn_);
      auto r = tx.exec_params("SELECT 1 FROM runs WHERE cluster = $1 AND scheduler = $2 AND job_id = $3 AND attempt = $4",
                              cluster, scheduler, job_id, attempt);
      found = !r.empty();
      tx.commit();
    });
  }

 private:
  template <class F>
  bool guarded(std::string& error, F&& f) {
    for (int attempt = 0; attempt < 2; ++attempt) {
      try {
        if (!conn_ || !conn_->is_open()) conn_ = std::make_unique<pqxx::connection>(dsn_);
        f();
        return true;
      } catch (const pqxx::broken_connection& e) {
        error = e.what();
        conn_.reset();  // reconnect once
      } catch (const std::exception& e) {
        error = e.what();
        break;
      }
    }
    while (!error.empty() && error.back() == '\n') error.pop_back();
    return false;
  }

  std::string dsn_;
  std::unique_ptr<pqxx::connection> conn_;
};

StoreRegistrar postgres_registrar("postgres", [](const YAML::Node& config, const std::string& key,
                                                 std::string& error) -> std::unique_ptr<VerdictStore> {
  std::string dsn;
  if (config.IsScalar()) dsn = config.as<std::string>("");
  else if (config.IsMap()) {
    for (const auto& kv : config) {
      std::string k = kv.first.as<std::string>("");
      if (k != "dsn" && k != "enabled") {
        error = fmt::format("{}.{}: unknown key (expected: dsn)", key, k);
        return nullptr;
      }
    }
    if (config["dsn"] && !config["dsn"].IsScalar()) {
      error = key + ".dsn: must be a string";
      return nullptr;
    }
    dsn = config["dsn"] ? config["dsn"].as<std::string>("") : "";
  }
  if (dsn.empty()) {
    error = key + ".dsn: required (e.g. postgresql://user@host/db or \"host=/run/postgresql dbname=attribution\")";
    return nullptr;
  }
  auto s = std::make_unique<PostgresStore>(dsn);
  if (!s->open(error)) {
    error = fmt::format("{}.dsn: cannot connect or migrate: {}", key, error);
    return nullptr;
  }
  return s;
});

}  // namespace
}  // namespace attribution::blueprint
#endif  // ATTRIBUTION_HAVE_PQXX
