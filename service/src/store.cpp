#include "store.h"

#include <sqlite3.h>

#include <cstring>
#include <mutex>

namespace attribution::service {
namespace {

constexpr char kObsFormat = 1;
constexpr char kReportFormat = 1;

void put_u64(std::string& out, uint64_t v) {
  char b[8];
  std::memcpy(b, &v, 8);
  out.append(b, 8);
}
void put_str(std::string& out, std::string_view s) {
  put_u64(out, s.size());
  out.append(s);
}
struct Reader {
  std::string_view in;
  size_t pos = 0;
  bool ok = true;
  uint64_t u64() {
    if (pos + 8 > in.size()) { ok = false; return 0; }
    uint64_t v;
    std::memcpy(&v, in.data() + pos, 8);
    pos += 8;
    return v;
  }
  std::string str() {
    uint64_t n = u64();
    if (!ok || n > in.size() - pos) { ok = false; return {}; }
    std::string s(in.substr(pos, n));
    pos += n;
    return s;
  }
  uint8_t u8() {
    if (pos >= in.size()) { ok = false; return 0; }
    return static_cast<uint8_t>(in[pos++]);
  }
};

// RAII statement.
struct Stmt {
  sqlite3_stmt* s = nullptr;
  Stmt(sqlite3* db, const char* sql) { sqlite3_prepare_v2(db, sql, -1, &s, nullptr); }
  ~Stmt() { sqlite3_finalize(s); }
  explicit operator bool() const { return s != nullptr; }
  void text(int i, std::string_view v) { sqlite3_bind_text(s, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT); }
  void blob(int i, std::string_view v) { sqlite3_bind_blob(s, i, v.data(), static_cast<int>(v.size()), SQLITE_STATIC); }
  void i64(int i, int64_t v) { sqlite3_bind_int64(s, i, v); }
  void null(int i) { sqlite3_bind_null(s, i); }
  int step() { return sqlite3_step(s); }
  std::string col_text(int i) {
    auto p = sqlite3_column_text(s, i);
    return p ? std::string(reinterpret_cast<const char*>(p), sqlite3_column_bytes(s, i)) : std::string();
  }
  std::string_view col_blob(int i) {
    auto p = sqlite3_column_blob(s, i);
    return p ? std::string_view(static_cast<const char*>(p), sqlite3_column_bytes(s, i)) : std::string_view();
  }
  int64_t col_i64(int i) { return sqlite3_column_int64(s, i); }
};

}  // namespace

std::string encode_observations(const std::vector<Observation>& observations) {
  std::string out;
  out.push_back(kObsFormat);
  put_u64(out, observations.size());
  for (const auto& o : observations) {
    out.push_back(static_cast<char>(o.kind));
    put_str(out, o.node);
    put_u64(out, static_cast<uint64_t>(static_cast<int64_t>(o.rank)));
    put_str(out, o.gpu);
    put_u64(out, static_cast<uint64_t>(o.observed_at));
    put_str(out, o.source.source);
    put_u64(out, o.source.line);
    put_str(out, o.text);
    out.push_back(o.metric ? 1 : 0);
    if (o.metric) {
      put_str(out, o.metric->name);
      put_u64(out, o.metric->labels.size());
      for (const auto& [k, v] : o.metric->labels) {
        put_str(out, k);
        put_str(out, v);
      }
      uint64_t bits;
      std::memcpy(&bits, &o.metric->value, 8);
      put_u64(out, bits);
      put_u64(out, static_cast<uint64_t>(o.metric->t));
    }
  }
  return out;
}

bool decode_observations(std::string_view blob, std::vector<Observation>& out) {
  Reader r{blob};
  if (r.u8() != kObsFormat) return false;
  uint64_t n = r.u64();
  if (!r.ok || n > blob.size()) return false;
  out.reserve(out.size() + n);
  for (uint64_t i = 0; i < n && r.ok; ++i) {
    Observation o;
    uint8_t kind = r.u8();
    if (kind >= kObservationKindCount) return false;
    o.kind = static_cast<ObservationKind>(kind);
    o.node = r.str();
    o.rank = static_cast<int>(static_cast<int64_t>(r.u64()));
    o.gpu = r.str();
    o.observed_at = static_cast<int64_t>(r.u64());
    o.source.source = r.str();
    o.source.line = r.u64();
    o.text = r.str();
    if (r.u8()) {
      MetricSample m;
      m.name = r.str();
      uint64_t nl = r.u64();
      for (uint64_t k = 0; k < nl && r.ok; ++k) {
        auto key = r.str();
        m.labels[key] = r.str();
      }
      uint64_t bits = r.u64();
      std::memcpy(&m.value, &bits, 8);
      m.t = static_cast<int64_t>(r.u64());
      o.metric = std::move(m);
    }
    if (r.ok) out.push_back(std::move(o));
  }
  return r.ok && r.pos == blob.size();
}

std::string encode_reports(const std::vector<ConnectorReport>& reports) {
  std::string out;
  out.push_back(kReportFormat);
  put_u64(out, reports.size());
  for (const auto& r : reports) {
    put_str(out, r.connector);
    put_str(out, r.status);
    put_str(out, r.reason);
    put_u64(out, r.observations);
    put_u64(out, r.bytes);
  }
  return out;
}

bool decode_reports(std::string_view blob, std::vector<ConnectorReport>& out) {
  Reader r{blob};
  if (r.u8() != kReportFormat) return false;
  uint64_t n = r.u64();
  if (!r.ok || n > blob.size()) return false;
  for (uint64_t i = 0; i < n && r.ok; ++i) {
    ConnectorReport c;
    c.connector = r.str();
    c.status = r.str();
    c.reason = r.str();
    c.observations = r.u64();
    c.bytes = r.u64();
    if (r.ok) out.push_back(std::move(c));
  }
  return r.ok && r.pos == blob.size();
}

std::string encode_text(const TextBatch& b) {
  std::string out;
  out.push_back(1);
  put_str(out, b.source.name);
  out.push_back(static_cast<char>(b.source.kind));
  put_str(out, b.source.node);
  put_u64(out, static_cast<uint64_t>(static_cast<int64_t>(b.source.rank)));
  put_str(out, b.source.gpu);
  put_u64(out, static_cast<uint64_t>(b.source.boot_time));
  put_u64(out, static_cast<uint64_t>(b.source.utc_offset_s));
  put_u64(out, static_cast<uint64_t>(static_cast<int64_t>(b.source.default_year)));
  put_str(out, b.source.note);
  put_u64(out, b.first_line);
  put_str(out, b.text);
  return out;
}

bool decode_text(std::string_view blob, TextBatch& b) {
  Reader r{blob};
  if (r.u8() != 1) return false;
  b.source.name = r.str();
  uint8_t kind = r.u8();
  if (kind >= kObservationKindCount) return false;
  b.source.kind = static_cast<ObservationKind>(kind);
  b.source.node = r.str();
  b.source.rank = static_cast<int>(static_cast<int64_t>(r.u64()));
  b.source.gpu = r.str();
  b.source.boot_time = static_cast<int64_t>(r.u64());
  b.source.utc_offset_s = static_cast<int64_t>(r.u64());
  b.source.default_year = static_cast<int>(static_cast<int64_t>(r.u64()));
  b.source.note = r.str();
  b.first_line = r.u64();
  b.text = r.str();
  return r.ok && r.pos == blob.size();
}

namespace {

thread_local std::string t_store_error;

#define SESSION_COLUMNS "id, context, created_ns, updated_ns, closed, batches, observations, reports, verdicts"

// SQLite: one connection behind a mutex (SQLite serializes writers anyway).
class SqliteStore : public Store {
 public:
  ~SqliteStore() override {
    if (db_) sqlite3_close_v2(db_);
  }
  bool init(const std::string& path, std::string& error) {
    path_ = path;
    if (sqlite3_open_v2(path.c_str(), &db_, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX,
                        nullptr) != SQLITE_OK) {
      error = db_ ? sqlite3_errmsg(db_) : "cannot open database";
      return false;
    }
    sqlite3_busy_timeout(db_, 5000);
    const char* schema =
        "PRAGMA journal_mode=WAL;"
        "PRAGMA synchronous=NORMAL;"
        "PRAGMA foreign_keys=ON;"
        "CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);"
        "INSERT OR IGNORE INTO meta(key, value) VALUES('schema', '1');"
        "CREATE TABLE IF NOT EXISTS sessions("
        "  id TEXT PRIMARY KEY, context TEXT NOT NULL, created_ns INTEGER NOT NULL,"
        "  updated_ns INTEGER NOT NULL, closed INTEGER NOT NULL DEFAULT 0);"
        "CREATE TABLE IF NOT EXISTS batches("
        "  seq INTEGER PRIMARY KEY AUTOINCREMENT, session_id TEXT NOT NULL,"
        "  kind INTEGER NOT NULL, count INTEGER NOT NULL, payload BLOB NOT NULL);"
        "CREATE INDEX IF NOT EXISTS batches_session ON batches(session_id, seq);"
        "CREATE TABLE IF NOT EXISTS verdicts("
        "  session_id TEXT NOT NULL, seq INTEGER NOT NULL, created_ns INTEGER NOT NULL,"
        "  observations INTEGER NOT NULL, json TEXT NOT NULL, PRIMARY KEY(session_id, seq));";
    if (!exec(schema)) {
      error = t_store_error;
      return false;
    }
    // Schema 2: counters on the session row, batch numbers, idempotency keys.
    std::string version;
    {
      Stmt s(db_, "SELECT value FROM meta WHERE key = 'schema'");
      if (s && s.step() == SQLITE_ROW) version = s.col_text(0);
    }
    if (version == "1") {
      const char* migrate =
          "BEGIN IMMEDIATE;"
          "ALTER TABLE sessions ADD COLUMN create_key TEXT;"
          "ALTER TABLE sessions ADD COLUMN batches INTEGER NOT NULL DEFAULT 0;"
          "ALTER TABLE sessions ADD COLUMN observations INTEGER NOT NULL DEFAULT 0;"
          "ALTER TABLE sessions ADD COLUMN reports INTEGER NOT NULL DEFAULT 0;"
          "ALTER TABLE sessions ADD COLUMN verdicts INTEGER NOT NULL DEFAULT 0;"
          "ALTER TABLE batches ADD COLUMN batch_no INTEGER;"
          "ALTER TABLE batches ADD COLUMN batch_key TEXT;"
          "ALTER TABLE batches ADD COLUMN ack TEXT;"
          "ALTER TABLE verdicts ADD COLUMN verdict_key TEXT;"
          "UPDATE batches SET batch_no = (SELECT count(*) FROM batches b WHERE b.session_id = batches.session_id"
          "  AND b.seq <= batches.seq);"
          "UPDATE sessions SET"
          "  batches = (SELECT count(*) FROM batches b WHERE b.session_id = sessions.id),"
          "  observations = (SELECT coalesce(sum(count), 0) FROM batches b WHERE b.session_id = sessions.id AND b.kind <> 1),"
          "  reports = (SELECT coalesce(sum(count), 0) FROM batches b WHERE b.session_id = sessions.id AND b.kind = 1),"
          "  verdicts = (SELECT coalesce(max(seq), 0) FROM verdicts v WHERE v.session_id = sessions.id);"
          "CREATE UNIQUE INDEX sessions_create_key ON sessions(create_key) WHERE create_key IS NOT NULL;"
          "CREATE UNIQUE INDEX batches_key ON batches(session_id, batch_key) WHERE batch_key IS NOT NULL;"
          "CREATE UNIQUE INDEX verdicts_key ON verdicts(session_id, verdict_key) WHERE verdict_key IS NOT NULL;"
          "UPDATE meta SET value = '2' WHERE key = 'schema';"
          "COMMIT;";
      if (!exec(migrate)) {
        exec("ROLLBACK");
        error = "migrating " + path + " to schema 2: " + t_store_error;
        return false;
      }
    }
    return true;
  }

  bool shared() const override { return false; }
  std::string describe() const override { return "sqlite:" + path_; }

  StoreStatus create_session(const std::string& id, std::string_view context_json, int64_t now_ns,
                             const std::string& key, StoredSession& out) override {
    std::lock_guard lock(mu_);
    if (!key.empty()) {
      Stmt q(db_, "SELECT id FROM sessions WHERE create_key = ?");
      if (!q) return fail();
      q.text(1, key);
      if (q.step() == SQLITE_ROW) return get_locked(q.col_text(0), out) == StoreStatus::kOk ? StoreStatus::kReplayed : fail();
    }
    Stmt s(db_, "INSERT INTO sessions(id, context, created_ns, updated_ns, create_key) VALUES(?,?,?,?,?)");
    if (!s) return fail();
    s.text(1, id);
    s.text(2, context_json);
    s.i64(3, now_ns);
    s.i64(4, now_ns);
    if (key.empty()) s.null(5);
    else s.text(5, key);
    if (s.step() != SQLITE_DONE) return fail();
    out = {};
    out.id = id;
    out.context_json = std::string(context_json);
    out.created_ns = out.updated_ns = now_ns;
    return StoreStatus::kOk;
  }

  StoreStatus get_session(const std::string& id, StoredSession& out) override {
    std::lock_guard lock(mu_);
    return get_locked(id, out);
  }

  StoreStatus list_sessions(size_t limit, std::vector<StoredSession>& out, uint64_t& total) override {
    std::lock_guard lock(mu_);
    out.clear();
    {
      Stmt c(db_, "SELECT count(*) FROM sessions WHERE closed = 0");
      if (!c || c.step() != SQLITE_ROW) return fail();
      total = static_cast<uint64_t>(c.col_i64(0));
    }
    Stmt s(db_, "SELECT " SESSION_COLUMNS " FROM sessions WHERE closed = 0 ORDER BY created_ns, id LIMIT ?");
    if (!s) return fail();
    s.i64(1, static_cast<int64_t>(limit));
    int rc;
    while ((rc = s.step()) == SQLITE_ROW) out.push_back(read_session(s));
    return rc == SQLITE_DONE ? StoreStatus::kOk : fail();
  }

  StoreStatus append_batch(const std::string& id, BatchKind kind, std::string_view blob, uint64_t count,
                           const std::string& key, int64_t now_ns, uint64_t max_observations,
                           const std::function<std::string(uint64_t)>& make_ack, BatchAck& out) override {
    std::lock_guard lock(mu_);
    if (!exec("BEGIN IMMEDIATE")) return StoreStatus::kError;
    StoreStatus st = append_locked(id, kind, blob, count, key, now_ns, max_observations, make_ack, out);
    if (st != StoreStatus::kOk) {
      exec("ROLLBACK");
      return st;
    }
    return exec("COMMIT") ? StoreStatus::kOk : (exec("ROLLBACK"), StoreStatus::kError);
  }

  StoreStatus batches_after(const std::string& id, int64_t after,
                            const std::function<void(int64_t, BatchKind, std::string_view)>& fn) override {
    std::lock_guard lock(mu_);
    Stmt s(db_, "SELECT batch_no, kind, payload FROM batches WHERE session_id = ? AND batch_no > ? ORDER BY batch_no");
    if (!s) return fail();
    s.text(1, id);
    s.i64(2, after);
    int rc;
    while ((rc = s.step()) == SQLITE_ROW) fn(s.col_i64(0), static_cast<BatchKind>(s.col_i64(1)), s.col_blob(2));
    return rc == SQLITE_DONE ? StoreStatus::kOk : fail();
  }

  StoreStatus add_verdict(const std::string& id, const std::string& key, int64_t now_ns, uint64_t observations,
                          const std::string& json, StoredVerdict& out) override {
    std::lock_guard lock(mu_);
    if (!exec("BEGIN IMMEDIATE")) return StoreStatus::kError;
    auto st = [&]() -> StoreStatus {
      StoredSession ss;
      if (auto g = get_locked(id, ss); g != StoreStatus::kOk) return g;
      if (ss.closed) return StoreStatus::kClosed;
      if (!key.empty() && find_locked(id, key, out) == StoreStatus::kOk) return StoreStatus::kReplayed;
      Stmt s(db_, "INSERT INTO verdicts(session_id, seq, created_ns, observations, json, verdict_key) VALUES(?,?,?,?,?,?)");
      Stmt u(db_, "UPDATE sessions SET verdicts = ? WHERE id = ?");
      if (!s || !u) return fail();
      out = {ss.verdicts + 1, now_ns, observations, json};
      s.text(1, id);
      s.i64(2, out.seq);
      s.i64(3, now_ns);
      s.i64(4, static_cast<int64_t>(observations));
      s.text(5, json);
      if (key.empty()) s.null(6);
      else s.text(6, key);
      u.i64(1, out.seq);
      u.text(2, id);
      if (s.step() != SQLITE_DONE || u.step() != SQLITE_DONE) return fail();
      return StoreStatus::kOk;
    }();
    if (st != StoreStatus::kOk) {
      exec("ROLLBACK");
      return st;
    }
    return exec("COMMIT") ? StoreStatus::kOk : (exec("ROLLBACK"), StoreStatus::kError);
  }

  StoreStatus find_verdict(const std::string& id, const std::string& key, StoredVerdict& out) override {
    std::lock_guard lock(mu_);
    return find_locked(id, key, out);
  }

  StoreStatus verdicts(const std::string& id, std::vector<StoredVerdict>& out) override {
    std::lock_guard lock(mu_);
    out.clear();
    Stmt s(db_, "SELECT seq, created_ns, observations, json FROM verdicts WHERE session_id = ? ORDER BY seq");
    if (!s) return fail();
    s.text(1, id);
    int rc;
    while ((rc = s.step()) == SQLITE_ROW)
      out.push_back({s.col_i64(0), s.col_i64(1), static_cast<uint64_t>(s.col_i64(2)), s.col_text(3)});
    return rc == SQLITE_DONE ? StoreStatus::kOk : fail();
  }

  StoreStatus close_session(const std::string& id, int64_t now_ns) override {
    std::lock_guard lock(mu_);
    if (!exec("BEGIN IMMEDIATE")) return StoreStatus::kError;
    auto st = close_locked(id, now_ns);
    if (st != StoreStatus::kOk) {
      exec("ROLLBACK");
      return st;
    }
    return exec("COMMIT") ? StoreStatus::kOk : (exec("ROLLBACK"), StoreStatus::kError);
  }

  StoreStatus close_idle(int64_t before_ns, std::vector<std::string>& closed) override {
    std::vector<std::string> ids;
    {
      std::lock_guard lock(mu_);
      Stmt s(db_, "SELECT id FROM sessions WHERE closed = 0 AND updated_ns < ?");
      if (!s) return fail();
      s.i64(1, before_ns);
      while (s.step() == SQLITE_ROW) ids.push_back(s.col_text(0));
    }
    for (const auto& id : ids)
      if (close_session(id, before_ns) == StoreStatus::kOk) closed.push_back(id);
    return StoreStatus::kOk;
  }

  bool purge_closed(int64_t before_ns) override {
    std::lock_guard lock(mu_);
    Stmt s(db_, "DELETE FROM sessions WHERE closed = 1 AND updated_ns < ?");
    if (!s) return false;
    s.i64(1, before_ns);
    return s.step() == SQLITE_DONE;
  }

  bool writable() override {
    std::lock_guard lock(mu_);
    if (!exec("BEGIN IMMEDIATE")) return false;
    bool ok = exec("INSERT OR REPLACE INTO meta(key, value) VALUES('probe', 'ok')");
    exec(ok ? "COMMIT" : "ROLLBACK");
    return ok;
  }

 private:
  static StoredSession read_session(Stmt& s) {
    StoredSession ss;
    ss.id = s.col_text(0);
    ss.context_json = s.col_text(1);
    ss.created_ns = s.col_i64(2);
    ss.updated_ns = s.col_i64(3);
    ss.closed = s.col_i64(4) != 0;
    ss.batches = s.col_i64(5);
    ss.observations = static_cast<uint64_t>(s.col_i64(6));
    ss.reports = static_cast<uint64_t>(s.col_i64(7));
    ss.verdicts = s.col_i64(8);
    return ss;
  }
  StoreStatus fail() {
    t_store_error = sqlite3_errmsg(db_);
    return StoreStatus::kError;
  }
  bool exec(const char* sql) {
    char* err = nullptr;
    if (sqlite3_exec(db_, sql, nullptr, nullptr, &err) != SQLITE_OK) {
      t_store_error = err ? err : "sqlite error";
      sqlite3_free(err);
      return false;
    }
    return true;
  }
  StoreStatus get_locked(const std::string& id, StoredSession& out) {
    Stmt s(db_, "SELECT " SESSION_COLUMNS " FROM sessions WHERE id = ?");
    if (!s) return fail();
    s.text(1, id);
    int rc = s.step();
    if (rc == SQLITE_DONE) return StoreStatus::kNotFound;
    if (rc != SQLITE_ROW) return fail();
    out = read_session(s);
    return StoreStatus::kOk;
  }
  StoreStatus find_locked(const std::string& id, const std::string& key, StoredVerdict& out) {
    Stmt s(db_, "SELECT seq, created_ns, observations, json FROM verdicts WHERE session_id = ? AND verdict_key = ?");
    if (!s) return fail();
    s.text(1, id);
    s.text(2, key);
    int rc = s.step();
    if (rc == SQLITE_DONE) return StoreStatus::kNotFound;
    if (rc != SQLITE_ROW) return fail();
    out = {s.col_i64(0), s.col_i64(1), static_cast<uint64_t>(s.col_i64(2)), s.col_text(3)};
    return StoreStatus::kOk;
  }
  StoreStatus append_locked(const std::string& id, BatchKind kind, std::string_view blob, uint64_t count,
                            const std::string& key, int64_t now_ns, uint64_t max_observations,
                            const std::function<std::string(uint64_t)>& make_ack, BatchAck& out) {
    StoredSession ss;
    if (auto g = get_locked(id, ss); g != StoreStatus::kOk) return g;
    if (ss.closed) return StoreStatus::kClosed;
    if (!key.empty()) {
      Stmt q(db_, "SELECT batch_no, ack FROM batches WHERE session_id = ? AND batch_key = ?");
      if (!q) return fail();
      q.text(1, id);
      q.text(2, key);
      if (q.step() == SQLITE_ROW) {
        out.batch_no = q.col_i64(0);
        out.ack = q.col_text(1);
        out.session_observations = ss.observations;
        return StoreStatus::kReplayed;
      }
    }
    bool is_reports = kind == BatchKind::kReports;
    if (!is_reports && ss.observations + count > max_observations) {
      out.session_observations = ss.observations;
      return StoreStatus::kLimit;
    }
    out.batch_no = ss.batches + 1;
    out.session_observations = ss.observations + (is_reports ? 0 : count);
    out.ack = make_ack(out.session_observations);
    Stmt s(db_, "INSERT INTO batches(session_id, kind, count, payload, batch_no, batch_key, ack) VALUES(?,?,?,?,?,?,?)");
    Stmt u(db_, "UPDATE sessions SET updated_ns = ?, batches = ?, observations = ?, reports = reports + ? WHERE id = ?");
    if (!s || !u) return fail();
    s.text(1, id);
    s.i64(2, static_cast<int>(kind));
    s.i64(3, static_cast<int64_t>(count));
    s.blob(4, blob);
    s.i64(5, out.batch_no);
    if (key.empty()) s.null(6);
    else s.text(6, key);
    s.text(7, out.ack);
    u.i64(1, now_ns);
    u.i64(2, out.batch_no);
    u.i64(3, static_cast<int64_t>(out.session_observations));
    u.i64(4, static_cast<int64_t>(is_reports ? count : 0));
    u.text(5, id);
    if (s.step() != SQLITE_DONE || u.step() != SQLITE_DONE) return fail();
    return StoreStatus::kOk;
  }
  StoreStatus close_locked(const std::string& id, int64_t now_ns) {
    StoredSession ss;
    if (auto g = get_locked(id, ss); g != StoreStatus::kOk) return g;
    if (ss.closed) return StoreStatus::kClosed;
    Stmt a(db_, "DELETE FROM batches WHERE session_id = ?");
    Stmt b(db_, "DELETE FROM verdicts WHERE session_id = ?");
    Stmt c(db_, "UPDATE sessions SET closed = 1, updated_ns = ?, context = '{}', create_key = NULL WHERE id = ?");
    if (!a || !b || !c) return fail();
    a.text(1, id);
    b.text(1, id);
    c.i64(1, now_ns);
    c.text(2, id);
    if (a.step() != SQLITE_DONE || b.step() != SQLITE_DONE || c.step() != SQLITE_DONE) return fail();
    return StoreStatus::kOk;
  }
#undef SESSION_COLUMNS

  std::mutex mu_;
  sqlite3* db_ = nullptr;
  std::string path_;
};

}  // namespace

std::unique_ptr<Store> open_postgres_store(const std::string& uri, const StoreOptions& options, std::string& error);

void set_store_error(std::string message) { t_store_error = std::move(message); }
std::string Store::last_error() { return t_store_error; }

std::unique_ptr<Store> Store::open(const std::string& spec, const std::string& default_sqlite_path,
                                   const StoreOptions& options, std::string& error) {
  if (spec.rfind("postgres://", 0) == 0 || spec.rfind("postgresql://", 0) == 0)
    return open_postgres_store(spec, options, error);
  std::string path = default_sqlite_path;
  if (spec.rfind("sqlite:", 0) == 0) path = spec.substr(7);
  else if (!spec.empty()) {
    error = "store: expected sqlite:PATH or postgres://..., got \"" + spec.substr(0, spec.find(':')) + ":...\"";
    return nullptr;
  }
  if (path.empty()) {
    error = "store: sqlite: empty path";
    return nullptr;
  }
  auto st = std::make_unique<SqliteStore>();
  if (!st->init(path, error)) return nullptr;
  return st;
}

}  // namespace attribution::service
