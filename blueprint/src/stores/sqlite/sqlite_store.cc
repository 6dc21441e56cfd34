// SQLite verdict store (default): one file, WAL, migrations in schema_migrations, upsert per
// (cluster, scheduler, job_id, attempt). Schema: docs/store.md.
#include <sqlite3.h>

#include <fmt/format.h>

#include <filesystem>

#include "fabric/store_fabric.h"
#include "stores/store.h"

namespace attribution::blueprint {
namespace {

const std::vector<Migration>& sqlite_migrations() {
  static const std::vector<Migration> m = {
      {1,
       {R"(CREATE TABLE IF NOT EXISTS runs (
  id             INTEGER PRIMARY KEY,
  cluster        TEXT NOT NULL DEFAULT '',
  scheduler      TEXT NOT NULL,
  job_id         TEXT NOT NULL,
  attempt        INTEGER NOT NULL DEFAULT 0,
  name           TEXT, user_name TEXT, queue TEXT,
  state          TEXT,
  terminal_state TEXT,
  start_time     TEXT, end_time TEXT,
  end_ns         INTEGER,
  outcome        TEXT NOT NULL,
  domain         TEXT NOT NULL,
  quality        TEXT NOT NULL,
  root_symptom   TEXT,
  root_node      TEXT,
  affected_nodes TEXT NOT NULL DEFAULT '[]',
  verdict_json   TEXT NOT NULL,
  rules_digest   TEXT,
  analyzed_at    TEXT NOT NULL,
  UNIQUE (cluster, scheduler, job_id, attempt)
))",
        "CREATE INDEX IF NOT EXISTS runs_end ON runs (end_ns DESC, id DESC)",
        "CREATE INDEX IF NOT EXISTS runs_outcome ON runs (outcome)",
        "CREATE INDEX IF NOT EXISTS runs_domain ON runs (domain)",
        "CREATE INDEX IF NOT EXISTS runs_root_node ON runs (root_node)",
        R"(CREATE TABLE IF NOT EXISTS run_nodes (
  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  node   TEXT NOT NULL,
  gpu    TEXT NOT NULL DEFAULT '',
  role   TEXT NOT NULL,
  PRIMARY KEY (run_id, node, gpu, role)
))",
        "CREATE INDEX IF NOT EXISTS run_nodes_node ON run_nodes (node)",
        "CREATE TABLE IF NOT EXISTS cursors (name TEXT PRIMARY KEY, value TEXT NOT NULL, updated_at TEXT NOT NULL)"}},
      {2, fabric_sqlite_migration()},  // docs/fabric.md §4
  };
  return m;
}

class Stmt {
 public:
  Stmt(sqlite3* db, const char* sql, std::string& error) {
    if (sqlite3_prepare_v2(db, sql, -1, &s_, nullptr) != SQLITE_OK) {
      error = sqlite3_errmsg(db);
      s_ = nullptr;
    }
  }
  ~Stmt() { sqlite3_finalize(s_); }
  Stmt(const Stmt&) = delete;
  Stmt& operator=(const Stmt&) = delete;
  explicit operator bool() const { return s_ != nullptr; }
  sqlite3_stmt* get() { return s_; }
  void text(int i, const std::string& v) { sqlite3_bind_text(s_, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT); }
  void text_or_null(int i, const std::string& v) {
    if (v.empty()) sqlite3_bind_null(s_, i); else text(i, v);
  }
  void i64(int i, int64_t v) { sqlite3_bind_int64(s_, i, v); }
  void null(int i) { sqlite3_bind_null(s_, i); }

 private:
  sqlite3_stmt* s_ = nullptr;
};

class SqliteStore : public VerdictStore {
 public:
  explicit SqliteStore(std::string path) : path_(std::move(path)) {}
  ~SqliteStore() override { sqlite3_close_v2(db_); }

  bool open(std::string& error) {
    std::error_code ec;
    auto parent = std::filesystem::path(path_).parent_path();
    if (!parent.empty()) std::filesystem::create_directories(parent, ec);
    if (sqlite3_open_v2(path_.c_str(), &db_, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX,
                        nullptr) != SQLITE_OK) {
      error = fmt::format("{}: {}", path_, db_ ? sqlite3_errmsg(db_) : "cannot open");
      return false;
    }
    sqlite3_busy_timeout(db_, 10000);
    if (!exec("PRAGMA journal_mode=WAL", error) || !exec("PRAGMA synchronous=NORMAL", error) ||
        !exec("PRAGMA foreign_keys=ON", error))
      return fail(error);
    return migrate(error) || fail(error);
  }

  std::string name() const override { return "sqlite:" + path_; }
  bool supports_cursors() const override { return true; }

  bool put(const RunRecord& record, int64_t& run_id, std::string& error) override {
    RunRow r = make_run_row(record);
    if (!exec("BEGIN IMMEDIATE", error)) return fail(error);
    bool ok = put_locked(r, run_id, error) && sqlite_put_run_fabric(db_, run_id, record, error);
    std::string e2;
    if (!exec(ok ? "COMMIT" : "ROLLBACK", e2) && ok) {
      error = e2;
      ok = false;
    }
    return ok || fail(error);
  }

  bool get_cursor(const std::string& name, std::optional<std::string>& value, std::string& error) override {
    value.reset();
    Stmt s(db_, "SELECT value FROM cursors WHERE name = ?1", error);
    if (!s) return fail(error);
    s.text(1, name);
    int rc = sqlite3_step(s.get());
    if (rc == SQLITE_ROW) {
      value = reinterpret_cast<const char*>(sqlite3_column_text(s.get(), 0));
      return true;
    }
    if (rc == SQLITE_DONE) return true;
    error = sqlite3_errmsg(db_);
    return fail(error);
  }

  bool set_cursor(const std::string& name, const std::string& value, std::string& error) override {
    Stmt s(db_,
           "INSERT INTO cursors (name, value, updated_at) VALUES (?1, ?2, ?3) "
           "ON CONFLICT(name) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at",
           error);
    if (!s) return fail(error);
    s.text(1, name);
    s.text(2, value);
    s.text(3, now_rfc3339());
    if (sqlite3_step(s.get()) != SQLITE_DONE) {
      error = sqlite3_errmsg(db_);
      return fail(error);
    }
    return true;
  }

  bool has_run(const std::string& cluster, const std::string& scheduler, const std::string& job_id, int attempt,
               bool& found, std::string& error) override {
    found = false;
    Stmt s(db_, "SELECT 1 FROM runs WHERE cluster = ?1 AND scheduler = ?2 AND job_id = ?3 AND attempt = ?4", error);
    if (!s) return fail(error);
    s.text(1, cluster);
    s.text(2, scheduler);
    s.text(3, job_id);
    s.i64(4, attempt);
    int rc = sqlite3_step(s.get());
    if (rc == SQLITE_ROW) found = true;
    else if (rc != SQLITE_DONE) {
      error = sqlite3_errmsg(db_);
      return fail(error);
    }
    return true;
  }

 private:
  bool fail(std::string& error) {
    if (error.rfind(path_, 0) != 0) error = fmt::format("{}: {}", path_, error);
    return false;
  }

  bool exec(const char* sql, std::string& error) {
    char* msg = nullptr;
    if (sqlite3_exec(db_, sql, nullptr, nullptr, &msg) != SQLITE_OK) {
      error = msg ? msg : sqlite3_errmsg(db_);
      sqlite3_free(msg);
      return false;
    }
    return true;
  }

  bool migrate(std::string& error) {
    if (!exec("CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, applied_at TEXT NOT NULL)",
              error))
      return false;
    for (const auto& m : sqlite_migrations()) {
      if (!exec("BEGIN IMMEDIATE", error)) return false;
      bool applied = false;
      {
        Stmt s(db_, "SELECT 1 FROM schema_migrations WHERE version = ?1", error);
        if (!s) return exec("ROLLBACK", error), false;
        s.i64(1, m.version);
        applied = sqlite3_step(s.get()) == SQLITE_ROW;
      }
      if (!applied) {
        for (const auto& sql : m.statements) {
          if (!exec(sql.c_str(), error)) {
            std::string e2;
            exec("ROLLBACK", e2);
            error = fmt::format("migration {}: {}", m.version, error);
            return false;
          }
        }
        Stmt ins(db_, "INSERT INTO schema_migrations (version, applied_at) VALUES (?1, ?2)", error);
        if (!ins) return false;
        ins.i64(1, m.version);
        ins.text(2, now_rfc3339());
        if (sqlite3_step(ins.get()) != SQLITE_DONE) {
          error = sqlite3_errmsg(db_);
          std::string e2;
          exec("ROLLBACK", e2);
          return false;
        }
      }
      if (!exec("COMMIT", error)) return false;
    }
    return true;
  }

  bool put_locked(const RunRow& r, int64_t& run_id, std::string& error) {
    Stmt s(db_, R"(INSERT INTO runs (cluster, scheduler, job_id, attempt, name, user_name, queue, state,
  terminal_state, start_time, end_time, end_ns, outcome, domain, quality, root_symptom, root_node,
  affected_nodes, verdict_json, rules_digest, analyzed_at)
VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20, ?21)
ON CONFLICT (cluster, scheduler, job_id, attempt) DO UPDATE SET
  name = excluded.name, user_name = excluded.user_name, queue = excluded.queue, state = excluded.state,
  terminal_state = excluded.terminal_state, start_time = excluded.start_time, end_time = excluded.end_time,
  end_ns = excluded.end_ns, outcome = excluded.outcome, domain = excluded.domain, quality = excluded.quality,
  root_symptom = excluded.root_symptom, root_node = excluded.root_node, affected_nodes = excluded.affected_nodes,
  verdict_json = excluded.verdict_json, rules_digest = excluded.rules_digest, analyzed_at = excluded.analyzed_at
RETURNING id)",
           error);
    if (!s) return false;
    s.text(1, r.cluster);
    s.text(2, r.scheduler);
    s.text(3, r.job_id);
    s.i64(4, r.attempt);
    s.text_or_null(5, r.name);
    s.text_or_null(6, r.user_name);
    s.text_or_null(7, r.queue);
    s.text_or_null(8, r.state);
    s.text_or_null(9, r.terminal_state);
    s.text_or_null(10, r.start_time);
    s.text_or_null(11, r.end_time);
    if (r.end_ns) s.i64(12, *r.end_ns); else s.null(12);
    s.text(13, r.outcome);
    s.text(14, r.domain);
    s.text(15, r.quality);
    s.text_or_null(16, r.root_symptom);
    s.text_or_null(17, r.root_node);
    s.text(18, r.affected_nodes_json);
    s.text(19, r.verdict_json);
    s.text_or_null(20, r.rules_digest);
    s.text(21, r.analyzed_at);
    if (sqlite3_step(s.get()) != SQLITE_ROW) {
      error = sqlite3_errmsg(db_);
      return false;
    }
    run_id = sqlite3_column_int64(s.get(), 0);
    {
      Stmt del(db_, "DELETE FROM run_nodes WHERE run_id = ?1", error);
      if (!del) return false;
      del.i64(1, run_id);
      if (sqlite3_step(del.get()) != SQLITE_DONE) {
        error = sqlite3_errmsg(db_);
        return false;
      }
    }
    for (const auto& n : r.nodes) {
      Stmt ins(db_, "INSERT OR IGNORE INTO run_nodes (run_id, node, gpu, role) VALUES (?1, ?2, ?3, ?4)", error);
      if (!ins) return false;
      ins.i64(1, run_id);
      ins.text(2, n.node);
      ins.text(3, n.gpu);
      ins.text(4, n.role);
      if (sqlite3_step(ins.get()) != SQLITE_DONE) {
        error = sqlite3_errmsg(db_);
        return false;
      }
    }
    return true;
  }

  std::string path_;
  sqlite3* db_ = nullptr;
};

StoreRegistrar sqlite_registrar("sqlite", [](const YAML::Node& config, const std::string& key,
                                             std::string& error) -> std::unique_ptr<VerdictStore> {
  std::string path;
  if (config.IsMap() && config["path"]) path = config["path"].as<std::string>("");
  else if (config.IsScalar()) path = config.as<std::string>("");
  if (path.empty()) {
    error = key + ".path: required (the SQLite file)";
    return nullptr;
  }
  auto store = std::make_unique<SqliteStore>(path);
  if (!store->open(error)) {
    error = key + ": " + error;
    return nullptr;
  }
  return store;
});

}  // namespace
}  // namespace attribution::blueprint
