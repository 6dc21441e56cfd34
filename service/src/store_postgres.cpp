// The PostgreSQL store (`--store postgres://...`): the same contract as the SQLite store (store.h),
// shared by every replica. libpq, a bounded connection pool, one transaction per write.
//
// Tables (created if missing, under an advisory lock so replicas starting together do not race):
//   service_meta(key, value)
//   service_sessions(id, create_key UNIQUE, context, created_ns, updated_ns, closed,
//                    batches, observations, reports, verdicts)
//   service_batches(session_id, batch_no, batch_key, kind, count, payload, ack)
//                    PRIMARY KEY(session_id, batch_no), UNIQUE(session_id, batch_key)
//   service_verdicts(session_id, seq, verdict_key, created_ns, observations, json)
//                    PRIMARY KEY(session_id, seq), UNIQUE(session_id, verdict_key)
// Every write of a session first takes its row lock (SELECT ... FOR UPDATE), so batch numbers
// and verdict seqs are dense and in commit order, and a key is checked and inserted atomically.
#include <endian.h>
#include <libpq-fe.h>
#include <poll.h>

#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>

#include "store.h"

namespace attribution::service {
namespace {

using Clock = std::chrono::steady_clock;

const char* kSchema =
    "SELECT pg_advisory_xact_lock(7270541131);"
    "CREATE TABLE IF NOT EXISTS service_meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);"
    "INSERT INTO service_meta(key, value) VALUES('schema', '2') ON CONFLICT (key) DO NOTHING;"
    "CREATE TABLE IF NOT EXISTS service_sessions("
    "  id TEXT PRIMARY KEY, create_key TEXT UNIQUE, context TEXT NOT NULL,"
    "  created_ns BIGINT NOT NULL, updated_ns BIGINT NOT NULL, closed BOOLEAN NOT NULL DEFAULT false,"
    "  batches BIGINT NOT NULL DEFAULT 0, observations BIGINT NOT NULL DEFAULT 0,"
    "  reports BIGINT NOT NULL DEFAULT 0, verdicts BIGINT NOT NULL DEFAULT 0);"
    "CREATE INDEX IF NOT EXISTS service_sessions_open ON service_sessions(closed, updated_ns);"
    "CREATE TABLE IF NOT EXISTS service_batches("
    "  session_id TEXT NOT NULL, batch_no BIGINT NOT NULL, batch_key TEXT, kind SMALLINT NOT NULL,"
    "  count BIGINT NOT NULL, payload BYTEA NOT NULL, ack TEXT NOT NULL,"
    "  PRIMARY KEY(session_id, batch_no), UNIQUE(session_id, batch_key));"
    "CREATE TABLE IF NOT EXISTS service_verdicts("
    "  session_id TEXT NOT NULL, seq BIGINT NOT NULL, verdict_key TEXT, created_ns BIGINT NOT NULL,"
    "  observations BIGINT NOT NULL, json TEXT NOT NULL,"
    "  PRIMARY KEY(session_id, seq), UNIQUE(session_id, verdict_key));";

// Connection settings every pooled connection gets: a lock or statement that waits longer than
// this fails (kBusy) instead of holding the request.
const char* kSessionSettings = "SET lock_timeout = '5s'; SET statement_timeout = '30s'";

// Parameters of one statement (text, or binary for a BYTEA).
struct Params {
  std::vector<std::string> values;
  std::vector<bool> is_null, binary;
  Params& text(std::string_view v) {
    values.emplace_back(v);
    is_null.push_back(false);
    binary.push_back(false);
    return *this;
  }
  Params& opt(const std::string& v) {
    text(v);
    is_null.back() = v.empty();
    return *this;
  }
  Params& i64(int64_t v) { return text(std::to_string(v)); }
  Params& bytes(std::string_view v) {
    text(v);
    binary.back() = true;
    return *this;
  }
};

// An owned PGresult.
struct Result {
  PGresult* r = nullptr;
  explicit Result(PGresult* p) : r(p) {}
  Result(Result&& o) noexcept : r(o.r) { o.r = nullptr; }
  ~Result() {
    if (r) PQclear(r);
  }
  ExecStatusType status() const { return r ? PQresultStatus(r) : PGRES_FATAL_ERROR; }
  bool ok() const { return status() == PGRES_COMMAND_OK || status() == PGRES_TUPLES_OK; }
  int rows() const { return r ? PQntuples(r) : 0; }
  std::string text(int row, int col) const { return std::string(PQgetvalue(r, row, col), PQgetlength(r, row, col)); }
  int64_t i64(int row, int col) const { return std::strtoll(PQgetvalue(r, row, col), nullptr, 10); }
  bool boolean(int row, int col) const { return PQgetvalue(r, row, col)[0] == 't'; }
  std::string sqlstate() const {
    const char* s = r ? PQresultErrorField(r, PG_DIAG_SQLSTATE) : nullptr;
    return s ? s : "";
  }
};

// A connection lent by the pool; returned (or dropped when broken) on destruction.
class Pool;
class Lease {
 public:
  Lease() = default;
  Lease(Pool* pool, PGconn* conn) : pool_(pool), conn_(conn) {}
  Lease(Lease&& o) noexcept : pool_(o.pool_), conn_(o.conn_), broken_(o.broken_) { o.conn_ = nullptr; }
  ~Lease();
  explicit operator bool() const { return conn_ != nullptr; }

  Result exec(const char* sql, const Params& p = {}, bool binary_result = false) {
    Result r = exec_once(sql, p, binary_result);
    if (!r.ok() && retry_on_fresh_connection()) return exec_once(sql, p, binary_result);
    return r;
  }
  bool run(const char* sql) {
    if (run_once(sql)) return true;
    return retry_on_fresh_connection() && run_once(sql);
  }
  // The status a failed statement maps to: a lock or statement timeout is kBusy, anything else kError.
  StoreStatus failure_status() const { return busy_ ? StoreStatus::kBusy : StoreStatus::kError; }
  // Rolls back an open transaction after a failed or refused statement (errors ignored).
  void rollback() {
    if (conn_ && PQstatus(conn_) == CONNECTION_OK && PQtransactionStatus(conn_) != PQTRANS_IDLE) {
      PGresult* r = PQexec(conn_, "ROLLBACK");
      if (r) PQclear(r);
    }
  }

 private:
  // A pooled connection the server closed while it was idle (a restart) fails its first
  // statement: nothing was done on it, so the statement is run again once on a new connection.
  // Any later failure is reported (the caller answers 503; the client retries with its key).
  bool retry_on_fresh_connection();
  Result exec_once(const char* sql, const Params& p, bool binary_result) {
    was_first_ = first_;
    first_ = false;
    std::vector<const char*> values(p.values.size());
    std::vector<int> lengths(p.values.size()), formats(p.values.size());
    for (size_t i = 0; i < p.values.size(); ++i) {
      values[i] = p.is_null[i] ? nullptr : p.values[i].data();
      lengths[i] = static_cast<int>(p.values[i].size());
      formats[i] = p.binary[i] ? 1 : 0;
    }
    Result r(PQexecParams(conn_, sql, static_cast<int>(values.size()), nullptr, values.data(), lengths.data(),
                          formats.data(), binary_result ? 1 : 0));
    if (!r.ok()) note_failure(r);
    return r;
  }
  bool run_once(const char* sql) {
    was_first_ = first_;
    first_ = false;
    Result r(PQexec(conn_, sql));
    if (!r.ok()) {
      note_failure(r);
      return false;
    }
    return true;
  }
  void note_failure(const Result& r) {
    std::string msg = PQerrorMessage(conn_);
    while (!msg.empty() && (msg.back() == '\n' || msg.back() == ' ')) msg.pop_back();
    std::string state = r.sqlstate();
    busy_ = state == "55P03" || state == "57014" || state == "40P01" || state == "40001";
    set_store_error("postgres: " + (msg.empty() ? std::string(PQresStatus(r.status())) : msg) +
                    (state.empty() ? "" : " [" + state + "]"));
    if (PQstatus(conn_) != CONNECTION_OK) broken_ = true;
  }
  Pool* pool_ = nullptr;
  PGconn* conn_ = nullptr;
  bool broken_ = false;
  bool busy_ = false;
  bool first_ = true;      // no statement run yet on this lease
  bool was_first_ = false; // the statement that just ran was the lease's first
  bool retried_ = false;   // the first statement was already re-run on a new connection
};

// At most `size` connections; acquire() waits up to `wait` for one and gives up (kBusy) after.
class Pool {
 public:
  Pool(std::string uri, size_t size, std::chrono::milliseconds wait)
      : uri_(std::move(uri)), size_(std::max<size_t>(1, size)), wait_(wait) {}
  ~Pool() {
    for (auto* c : idle_) PQfinish(c);
  }

  // A connection, or an empty lease with `status` kBusy (pool exhausted) or kError (cannot connect).
  Lease acquire(StoreStatus& status) {
    std::unique_lock lock(mu_);
    auto deadline = Clock::now() + wait_;
    for (;;) {
      while (!idle_.empty()) {
        PGconn* c = idle_.front();
        idle_.pop_front();
        if (alive(c)) return Lease(this, c);
        PQfinish(c);  // the server closed it (restart, idle timeout): open a new one instead
        open_--;
      }
      if (open_ < size_) {
        open_++;
        lock.unlock();
        std::string error;
        PGconn* c = connect(uri_, error);
        if (c) return Lease(this, c);
        lock.lock();
        open_--;
        cv_.notify_one();
        set_store_error(error);
        status = StoreStatus::kError;
        return {};
      }
      if (cv_.wait_until(lock, deadline) == std::cv_status::timeout && idle_.empty() && open_ >= size_) {
        set_store_error("postgres: all " + std::to_string(size_) + " pooled connections busy for " +
                        std::to_string(wait_.count()) + " ms");
        status = StoreStatus::kBusy;
        return {};
      }
    }
  }

  const std::string& uri() const { return uri_; }

  void release(PGconn* c, bool broken) {
    {
      std::lock_guard lock(mu_);
      if (broken || PQstatus(c) != CONNECTION_OK || PQtransactionStatus(c) != PQTRANS_IDLE) {
        PQfinish(c);
        open_--;
      } else {
        idle_.push_back(c);
      }
    }
    cv_.notify_one();
  }

  static PGconn* connect(const std::string& uri, std::string& error) {
    const char* keys[] = {"dbname", "connect_timeout", "application_name", nullptr};
    const char* values[] = {uri.c_str(), "5", "attribution-service", nullptr};
    PGconn* c = PQconnectdbParams(keys, values, 1);
    if (!c || PQstatus(c) != CONNECTION_OK) {
      error = "postgres: cannot connect: " + std::string(c ? PQerrorMessage(c) : "out of memory");
      while (!error.empty() && (error.back() == '\n' || error.back() == ' ')) error.pop_back();
      if (c) PQfinish(c);
      return nullptr;
    }
    PQsetNoticeProcessor(c, [](void*, const char*) {}, nullptr);  // server notices are not logged
    PGresult* r = PQexec(c, kSessionSettings);
    bool ok = r && PQresultStatus(r) == PGRES_COMMAND_OK;
    if (r) PQclear(r);
    if (!ok) {
      error = "postgres: session settings failed: " + std::string(PQerrorMessage(c));
      PQfinish(c);
      return nullptr;
    }
    return c;
  }

  // False when an idle connection has been closed by the server (its socket reads EOF or a
  // termination notice): checked without blocking before the connection is lent.
  static bool alive(PGconn* c) {
    if (PQstatus(c) != CONNECTION_OK) return false;
    // A server shutting down sends a notice and then closes: read until nothing more is pending.
    for (int i = 0; i < 8; ++i) {
      pollfd p{PQsocket(c), POLLIN, 0};
      if (p.fd < 0) return false;
      if (::poll(&p, 1, 0) <= 0) return PQstatus(c) == CONNECTION_OK;
      if (!PQconsumeInput(c) || PQstatus(c) != CONNECTION_OK) return false;
      while (!PQisBusy(c)) {
        PGresult* r = PQgetResult(c);
        if (!r) break;
        PQclear(r);
      }
    }
    return PQstatus(c) == CONNECTION_OK;
  }

 private:
  std::string uri_;
  size_t size_;
  std::chrono::milliseconds wait_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<PGconn*> idle_;
  size_t open_ = 0;
};

bool Lease::retry_on_fresh_connection() {
  if (!broken_ || !was_first_ || retried_) return false;
  retried_ = true;
  std::string error;
  PGconn* fresh = Pool::connect(pool_->uri(), error);
  if (!fresh) {
    set_store_error(error);
    return false;
  }
  PQfinish(conn_);  // the pool still counts this slot as open: the new connection takes it
  conn_ = fresh;
  broken_ = busy_ = false;
  return true;
}

Lease::~Lease() {
  if (conn_) {
    rollback();
    pool_->release(conn_, broken_);
  }
}

// "postgres://user:secret@host:5432/db?x=y" → "postgres://user@host:5432/db" for logs.
std::string redact_uri(const std::string& uri) {
  auto scheme = uri.find("://");
  if (scheme == std::string::npos) return "postgres://";
  std::string rest = uri.substr(scheme + 3);
  rest = rest.substr(0, rest.find('?'));
  auto at = rest.rfind('@');
  if (at != std::string::npos) {
    std::string user = rest.substr(0, at);
    user = user.substr(0, user.find(':'));
    rest = user + "@" + rest.substr(at + 1);
  }
  return uri.substr(0, scheme + 3) + rest;
}

#define SESSION_COLUMNS "id, context, created_ns, updated_ns, closed, batches, observations, reports, verdicts"

StoredSession read_session(const Result& r, int row) {
  StoredSession s;
  s.id = r.text(row, 0);
  s.context_json = r.text(row, 1);
  s.created_ns = r.i64(row, 2);
  s.updated_ns = r.i64(row, 3);
  s.closed = r.boolean(row, 4);
  s.batches = r.i64(row, 5);
  s.observations = static_cast<uint64_t>(r.i64(row, 6));
  s.reports = static_cast<uint64_t>(r.i64(row, 7));
  s.verdicts = r.i64(row, 8);
  return s;
}

class PostgresStore : public Store {
 public:
  PostgresStore(std::string uri, const StoreOptions& o)
      : uri_(std::move(uri)), pool_(uri_, o.pool_size, std::chrono::milliseconds(o.pool_wait_ms)) {}
  ~PostgresStore() override {
    if (probe_) PQfinish(probe_);
  }

  bool init(std::string& error) {
    StoreStatus st = StoreStatus::kOk;
    auto c = pool_.acquire(st);
    if (!c) {
      error = last_error();
      return false;
    }
    if (!c.run("BEGIN") || !c.run(kSchema) || !c.run("COMMIT")) {
      error = "creating the schema: " + last_error();
      return false;
    }
    return true;
  }

  bool shared() const override { return true; }
  std::string describe() const override { return redact_uri(uri_); }

  StoreStatus create_session(const std::string& id, std::string_view context_json, int64_t now_ns,
                             const std::string& key, StoredSession& out) override {
    StoreStatus st = StoreStatus::kOk;
    auto c = pool_.acquire(st);
    if (!c) return st;
    // With a key: insert unless the key exists; a concurrent insert with the same key waits for
    // the first to commit and then finds its row.
    auto r = c.exec(
        "INSERT INTO service_sessions(id, create_key, context, created_ns, updated_ns) VALUES($1,$2,$3,$4,$4) "
        "ON CONFLICT (create_key) DO NOTHING RETURNING id",
        Params().text(id).opt(key).text(context_json).i64(now_ns));
    if (!r.ok()) return c.failure_status();
    if (r.rows() == 1) {
      out = {};
      out.id = id;
      out.context_json = std::string(context_json);
      out.created_ns = out.updated_ns = now_ns;
      return StoreStatus::kOk;
    }
    auto q = c.exec("SELECT " SESSION_COLUMNS " FROM service_sessions WHERE create_key = $1", Params().text(key));
    if (!q.ok()) return c.failure_status();
    if (q.rows() != 1) {
      set_store_error("postgres: session key conflict without a session");
      return StoreStatus::kError;
    }
    out = read_session(q, 0);
    return StoreStatus::kReplayed;
  }

  StoreStatus get_session(const std::string& id, StoredSession& out) override {
    StoreStatus st = StoreStatus::kOk;
    auto c = pool_.acquire(st);
    if (!c) return st;
    auto r = c.exec("SELECT " SESSION_COLUMNS " FROM service_sessions WHERE id = $1", Params().text(id));
    if (!r.ok()) return c.failure_status();
    if (r.rows() == 0) return StoreStatus::kNotFound;
    out = read_session(r, 0);
    return StoreStatus::kOk;
  }

  StoreStatus list_sessions(size_t limit, std::vector<StoredSession>& out, uint64_t& total) override {
    StoreStatus st = StoreStatus::kOk;
    auto c = pool_.acquire(st);
    if (!c) return st;
    auto n = c.exec("SELECT count(*) FROM service_sessions WHERE NOT closed");
    if (!n.ok()) return c.failure_status();
    total = static_cast<uint64_t>(n.i64(0, 0));
    auto r = c.exec("SELECT " SESSION_COLUMNS " FROM service_sessions WHERE NOT closed ORDER BY created_ns, id LIMIT $1",
                    Params().i64(static_cast<int64_t>(limit)));
    if (!r.ok()) return c.failure_status();
    out.clear();
    for (int i = 0; i < r.rows(); ++i) out.push_back(read_session(r, i));
    return StoreStatus::kOk;
  }

  StoreStatus append_batch(const std::string& id, BatchKind kind, std::string_view blob, uint64_t count,
                           const std::string& key, int64_t now_ns, uint64_t max_observations,
                           const std::function<std::string(uint64_t)>& make_ack, BatchAck& out) override {
    StoreStatus st = StoreStatus::kOk;
    auto c = pool_.acquire(st);
    if (!c) return st;
    if (!c.run("BEGIN")) return c.failure_status();
    StoredSession ss;
    if (auto l = lock_session(c, id, ss); l != StoreStatus::kOk) return l;
    if (!key.empty()) {
      auto q = c.exec("SELECT batch_no, ack FROM service_batches WHERE session_id = $1 AND batch_key = $2",
                      Params().text(id).text(key));
      if (!q.ok()) return c.failure_status();
      if (q.rows() == 1) {
        out.batch_no = q.i64(0, 0);
        out.ack = q.text(0, 1);
        out.session_observations = ss.observations;
        return StoreStatus::kReplayed;  // the lease rolls back
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
    auto ins = c.exec(
        "INSERT INTO service_batches(session_id, batch_no, batch_key, kind, count, payload, ack) "
        "VALUES($1,$2,$3,$4,$5,$6,$7)",
        Params().text(id).i64(out.batch_no).opt(key).i64(static_cast<int>(kind)).i64(static_cast<int64_t>(count))
            .bytes(blob).text(out.ack));
    if (!ins.ok()) return c.failure_status();
    auto up = c.exec(
        "UPDATE service_sessions SET updated_ns = $2, batches = $3, observations = $4, reports = reports + $5 "
        "WHERE id = $1",
        Params().text(id).i64(now_ns).i64(out.batch_no).i64(static_cast<int64_t>(out.session_observations))
            .i64(static_cast<int64_t>(is_reports ? count : 0)));
    if (!up.ok()) return c.failure_status();
    // A failed COMMIT (connection lost) leaves the outcome unknown: the caller answers 503 and a
    // retry with the same key finds the batch if it was stored.
    if (!c.run("COMMIT")) return c.failure_status();
    return StoreStatus::kOk;
  }

  StoreStatus batches_after(const std::string& id, int64_t after,
                            const std::function<void(int64_t, BatchKind, std::string_view)>& fn) override {
    StoreStatus st = StoreStatus::kOk;
    auto c = pool_.acquire(st);
    if (!c) return st;
    auto r = c.exec(
        "SELECT batch_no, kind, payload FROM service_batches WHERE session_id = $1 AND batch_no > $2 "
        "ORDER BY batch_no",
        Params().text(id).i64(after), /*binary_result=*/true);
    if (!r.ok()) return c.failure_status();
    for (int i = 0; i < r.rows(); ++i) {
      uint64_t no_be;
      uint16_t kind_be;
      if (PQgetlength(r.r, i, 0) != 8 || PQgetlength(r.r, i, 1) != 2) {
        set_store_error("postgres: unexpected column sizes in service_batches");
        return StoreStatus::kError;
      }
      std::memcpy(&no_be, PQgetvalue(r.r, i, 0), 8);
      std::memcpy(&kind_be, PQgetvalue(r.r, i, 1), 2);
      fn(static_cast<int64_t>(be64toh(no_be)), static_cast<BatchKind>(be16toh(kind_be)),
         std::string_view(PQgetvalue(r.r, i, 2), static_cast<size_t>(PQgetlength(r.r, i, 2))));
    }
    return StoreStatus::kOk;
  }

  StoreStatus add_verdict(const std::string& id, const std::string& key, int64_t now_ns, uint64_t observations,
                          const std::string& json, StoredVerdict& out) override {
    StoreStatus st = StoreStatus::kOk;
    auto c = pool_.acquire(st);
    if (!c) return st;
    if (!c.run("BEGIN")) return c.failure_status();
    StoredSession ss;
    if (auto l = lock_session(c, id, ss); l != StoreStatus::kOk) return l;
    if (!key.empty()) {
      auto f = find_with(c, id, key, out);
      if (f != StoreStatus::kNotFound) return f == StoreStatus::kOk ? StoreStatus::kReplayed : f;
    }
    out = {ss.verdicts + 1, now_ns, observations, json};
    auto ins = c.exec(
        "INSERT INTO service_verdicts(session_id, seq, verdict_key, created_ns, observations, json) "
        "VALUES($1,$2,$3,$4,$5,$6)",
        Params().text(id).i64(out.seq).opt(key).i64(now_ns).i64(static_cast<int64_t>(observations)).text(json));
    if (!ins.ok()) return c.failure_status();
    auto up = c.exec("UPDATE service_sessions SET verdicts = $2 WHERE id = $1", Params().text(id).i64(out.seq));
    if (!up.ok()) return c.failure_status();
    if (!c.run("COMMIT")) return c.failure_status();
    return StoreStatus::kOk;
  }

  StoreStatus find_verdict(const std::string& id, const std::string& key, StoredVerdict& out) override {
    StoreStatus st = StoreStatus::kOk;
    auto c = pool_.acquire(st);
    if (!c) return st;
    return find_with(c, id, key, out);
  }

  StoreStatus verdicts(const std::string& id, std::vector<StoredVerdict>& out) override {
    StoreStatus st = StoreStatus::kOk;
    auto c = pool_.acquire(st);
    if (!c) return st;
    auto r = c.exec("SELECT seq, created_ns, observations, json FROM service_verdicts WHERE session_id = $1 ORDER BY seq",
                    Params().text(id));
    if (!r.ok()) return c.failure_status();
    out.clear();
    for (int i = 0; i < r.rows(); ++i)
      out.push_back({r.i64(i, 0), r.i64(i, 1), static_cast<uint64_t>(r.i64(i, 2)), r.text(i, 3)});
    return StoreStatus::kOk;
  }

  StoreStatus close_session(const std::string& id, int64_t now_ns) override {
    StoreStatus st = StoreStatus::kOk;
    auto c = pool_.acquire(st);
    if (!c) return st;
    if (!c.run("BEGIN")) return c.failure_status();
    StoredSession ss;
    if (auto l = lock_session(c, id, ss); l != StoreStatus::kOk) return l;
    Params p;
    p.text(id);
    if (!c.exec("DELETE FROM service_batches WHERE session_id = $1", p).ok() ||
        !c.exec("DELETE FROM service_verdicts WHERE session_id = $1", p).ok() ||
        !c.exec("UPDATE service_sessions SET closed = true, updated_ns = $2, context = '{}', create_key = NULL "
                "WHERE id = $1",
                Params().text(id).i64(now_ns))
             .ok() ||
        !c.run("COMMIT"))
      return c.failure_status();
    return StoreStatus::kOk;
  }

  StoreStatus close_idle(int64_t before_ns, std::vector<std::string>& closed) override {
    std::vector<std::string> ids;
    {
      StoreStatus st = StoreStatus::kOk;
      auto c = pool_.acquire(st);
      if (!c) return st;
      auto r = c.exec("SELECT id FROM service_sessions WHERE NOT closed AND updated_ns < $1", Params().i64(before_ns));
      if (!r.ok()) return c.failure_status();
      for (int i = 0; i < r.rows(); ++i) ids.push_back(r.text(i, 0));
    }
    for (const auto& id : ids)
      if (close_session(id, before_ns) == StoreStatus::kOk) closed.push_back(id);
    return StoreStatus::kOk;
  }

  bool purge_closed(int64_t before_ns) override {
    StoreStatus st = StoreStatus::kOk;
    auto c = pool_.acquire(st);
    if (!c) return false;
    return c.exec("DELETE FROM service_sessions WHERE closed AND updated_ns < $1", Params().i64(before_ns)).ok();
  }

  // On a connection of its own, so that a busy pool does not make the replica unready.
  bool writable() override {
    std::lock_guard lock(probe_mu_);
    for (int attempt = 0; attempt < 2; ++attempt) {
      if (!probe_ || !Pool::alive(probe_)) {
        if (probe_) PQfinish(probe_);
        std::string error;
        probe_ = Pool::connect(uri_, error);
        if (!probe_) {
          set_store_error(error);
          return false;
        }
      }
      PGresult* r = PQexec(probe_,
                           "INSERT INTO service_meta(key, value) VALUES('probe', now()::text) "
                           "ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value");
      bool ok = r && PQresultStatus(r) == PGRES_COMMAND_OK;
      if (!ok) set_store_error("postgres: " + std::string(PQerrorMessage(probe_)));
      if (r) PQclear(r);
      if (ok) return true;
      if (PQstatus(probe_) == CONNECTION_OK) return false;  // the server answered: not a stale connection
    }
    return false;
  }

 private:
  // Locks the session's row for this transaction. kNotFound / kClosed / kOk.
  StoreStatus lock_session(Lease& c, const std::string& id, StoredSession& ss) {
    auto r = c.exec("SELECT " SESSION_COLUMNS " FROM service_sessions WHERE id = $1 FOR UPDATE", Params().text(id));
    if (!r.ok()) return c.failure_status();
    if (r.rows() == 0) return StoreStatus::kNotFound;
    ss = read_session(r, 0);
    return ss.closed ? StoreStatus::kClosed : StoreStatus::kOk;
  }
  StoreStatus find_with(Lease& c, const std::string& id, const std::string& key, StoredVerdict& out) {
    auto r = c.exec("SELECT seq, created_ns, observations, json FROM service_verdicts WHERE session_id = $1 AND verdict_key = $2",
                    Params().text(id).text(key));
    if (!r.ok()) return c.failure_status();
    if (r.rows() == 0) return StoreStatus::kNotFound;
    out = {r.i64(0, 0), r.i64(0, 1), static_cast<uint64_t>(r.i64(0, 2)), r.text(0, 3)};
    return StoreStatus::kOk;
  }

  std::string uri_;
  Pool pool_;
  std::mutex probe_mu_;
  PGconn* probe_ = nullptr;
};

}  // namespace

std::unique_ptr<Store> open_postgres_store(const std::string& uri, const StoreOptions& options, std::string& error) {
  auto st = std::make_unique<PostgresStore>(uri, options);
  if (!st->init(error)) {
    error = st->describe() + ": " + error;
    return nullptr;
  }
  return st;
}

}  // namespace attribution::service
