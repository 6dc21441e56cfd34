#include "store.h"

#include <sqlite3.h>

#include <cstring>

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

std::unique_ptr<Store> Store::open(const std::string& path, std::string& error) {
  std::unique_ptr<Store> st(new Store());
  if (sqlite3_open_v2(path.c_str(), &st->db_,
                      SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX,
                      nullptr) != SQLITE_OK) {
    error = st->db_ ? sqlite3_errmsg(st->db_) : "cannot open database";
    return nullptr;
  }
  sqlite3_busy_timeout(st->db_, 5000);
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
  if (!st->exec(schema)) {
    error = st->last_error_;
    return nullptr;
  }
  return st;
}

Store::~Store() {
  if (db_) sqlite3_close_v2(db_);
}

bool Store::exec(const char* sql) {
  char* err = nullptr;
  if (sqlite3_exec(db_, sql, nullptr, nullptr, &err) != SQLITE_OK) {
    last_error_ = err ? err : "sqlite error";
    sqlite3_free(err);
    return false;
  }
  return true;
}

std::string Store::last_error() {
  std::lock_guard lock(mu_);
  return last_error_;
}

bool Store::create_session(const std::string& id, std::string_view context_json, int64_t now_ns) {
  std::lock_guard lock(mu_);
  Stmt s(db_, "INSERT INTO sessions(id, context, created_ns, updated_ns) VALUES(?,?,?,?)");
  if (!s) { last_error_ = sqlite3_errmsg(db_); return false; }
  s.text(1, id);
  s.text(2, context_json);
  s.i64(3, now_ns);
  s.i64(4, now_ns);
  if (s.step() != SQLITE_DONE) { last_error_ = sqlite3_errmsg(db_); return false; }
  return true;
}

bool Store::append_batch(const std::string& id, BatchKind kind, std::string_view blob,
                         uint64_t count, int64_t now_ns) {
  std::lock_guard lock(mu_);
  if (!exec("BEGIN IMMEDIATE")) return false;
  bool ok = false;
  {
    Stmt s(db_, "INSERT INTO batches(session_id, kind, count, payload) VALUES(?,?,?,?)");
    Stmt u(db_, "UPDATE sessions SET updated_ns = ? WHERE id = ?");
    if (s && u) {
      s.text(1, id);
      s.i64(2, static_cast<int>(kind));
      s.i64(3, static_cast<int64_t>(count));
      s.blob(4, blob);
      u.i64(1, now_ns);
      u.text(2, id);
      ok = s.step() == SQLITE_DONE && u.step() == SQLITE_DONE;
    }
    if (!ok) last_error_ = sqlite3_errmsg(db_);
  }
  if (!ok) {
    exec("ROLLBACK");
    return false;
  }
  return exec("COMMIT");
}

bool Store::add_verdict(const std::string& id, const StoredVerdict& v) {
  std::lock_guard lock(mu_);
  Stmt s(db_, "INSERT OR REPLACE INTO verdicts(session_id, seq, created_ns, observations, json) VALUES(?,?,?,?,?)");
  if (!s) { last_error_ = sqlite3_errmsg(db_); return false; }
  s.text(1, id);
  s.i64(2, v.seq);
  s.i64(3, v.created_ns);
  s.i64(4, static_cast<int64_t>(v.observations));
  s.text(5, v.json);
  if (s.step() != SQLITE_DONE) { last_error_ = sqlite3_errmsg(db_); return false; }
  return true;
}

bool Store::close_session(const std::string& id, int64_t now_ns) {
  std::lock_guard lock(mu_);
  if (!exec("BEGIN IMMEDIATE")) return false;
  bool ok;
  {
    Stmt a(db_, "DELETE FROM batches WHERE session_id = ?");
    Stmt b(db_, "DELETE FROM verdicts WHERE session_id = ?");
    Stmt c(db_, "UPDATE sessions SET closed = 1, updated_ns = ?, context = '{}' WHERE id = ?");
    ok = a && b && c;
    if (ok) {
      a.text(1, id);
      b.text(1, id);
      c.i64(1, now_ns);
      c.text(2, id);
      ok = a.step() == SQLITE_DONE && b.step() == SQLITE_DONE && c.step() == SQLITE_DONE;
    }
    if (!ok) last_error_ = sqlite3_errmsg(db_);
  }
  if (!ok) {
    exec("ROLLBACK");
    return false;
  }
  return exec("COMMIT");
}

bool Store::purge_closed(int64_t before_ns) {
  std::lock_guard lock(mu_);
  Stmt s(db_, "DELETE FROM sessions WHERE closed = 1 AND updated_ns < ?");
  if (!s) return false;
  s.i64(1, before_ns);
  return s.step() == SQLITE_DONE;
}

std::vector<StoredSession> Store::sessions() {
  std::lock_guard lock(mu_);
  std::vector<StoredSession> out;
  Stmt s(db_, "SELECT id, context, created_ns, updated_ns, closed FROM sessions ORDER BY created_ns, id");
  if (!s) return out;
  while (s.step() == SQLITE_ROW) {
    StoredSession ss;
    ss.id = s.col_text(0);
    ss.context_json = s.col_text(1);
    ss.created_ns = s.col_i64(2);
    ss.updated_ns = s.col_i64(3);
    ss.closed = s.col_i64(4) != 0;
    out.push_back(std::move(ss));
  }
  return out;
}

bool Store::for_each_batch(const std::string& id,
                           const std::function<void(BatchKind, std::string_view)>& fn) {
  std::lock_guard lock(mu_);
  Stmt s(db_, "SELECT kind, payload FROM batches WHERE session_id = ? ORDER BY seq");
  if (!s) return false;
  s.text(1, id);
  int rc;
  while ((rc = s.step()) == SQLITE_ROW) fn(static_cast<BatchKind>(s.col_i64(0)), s.col_blob(1));
  return rc == SQLITE_DONE;
}

std::vector<StoredVerdict> Store::verdicts(const std::string& id) {
  std::lock_guard lock(mu_);
  std::vector<StoredVerdict> out;
  Stmt s(db_, "SELECT seq, created_ns, observations, json FROM verdicts WHERE session_id = ? ORDER BY seq");
  if (!s) return out;
  s.text(1, id);
  while (s.step() == SQLITE_ROW) {
    StoredVerdict v;
    v.seq = s.col_i64(0);
    v.created_ns = s.col_i64(1);
    v.observations = static_cast<uint64_t>(s.col_i64(2));
    v.json = s.col_text(3);
    out.push_back(std::move(v));
  }
  return out;
}

bool Store::writable() {
  std::lock_guard lock(mu_);
  if (!exec("BEGIN IMMEDIATE")) return false;
  bool ok = exec("INSERT OR REPLACE INTO meta(key, value) VALUES('probe', 'ok')");
  exec(ok ? "COMMIT" : "ROLLBACK");
  return ok;
}

}  // namespace attribution::service
