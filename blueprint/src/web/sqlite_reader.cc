// SQLite implementation of StoreReader: read-only connections (SQLITE_OPEN_READONLY plus
// PRAGMA query_only), a small pool so concurrent requests do not serialize, keyset paging on
// the runs_end index.
#include <sqlite3.h>

#ifdef ATTRIBUTION_HAVE_PQXX
#include <pqxx/pqxx>
#endif

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <thread>
#include <charconv>
#include <map>
#include <variant>
#include <condition_variable>
#include <ctime>
#include <mutex>
#include <stdexcept>
#include <vector>

#include "web/reader.h"

namespace attribution::blueprint::web {

using nlohmann::json;

std::string format_cursor(const PageCursor& c) {
  return (c.end_ns ? std::to_string(*c.end_ns) : std::string("null")) + ":" + std::to_string(c.id);
}

namespace {

bool parse_i64(std::string_view s, int64_t& v) {
  if (s.empty()) return false;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  return ec == std::errc() && p == s.data() + s.size();
}

}  // namespace

bool parse_cursor(const std::string& text, PageCursor& c) {
  auto colon = text.find(':');
  if (colon == std::string::npos) return false;
  std::string_view a(text.data(), colon), b(text.data() + colon + 1, text.size() - colon - 1);
  if (!parse_i64(b, c.id)) return false;
  if (a == "null") {
    c.end_ns.reset();
    return true;
  }
  int64_t e = 0;
  if (!parse_i64(a, e)) return false;
  c.end_ns = e;
  return true;
}

bool parse_time_ns(const std::string& text, int64_t& ns) {
  if (text.empty()) return false;
  if (parse_i64(text, ns)) return true;
  int y = 0, mo = 0, d = 0, h = 0, mi = 0, s = 0;
  size_t pos = 0;
  auto num = [&](int digits, int& out) {
    if (pos + digits > text.size()) return false;
    out = 0;
    for (int i = 0; i < digits; ++i) {
      char ch = text[pos + i];
      if (ch < '0' || ch > '9') return false;
      out = out * 10 + (ch - '0');
    }
    pos += digits;
    return true;
  };
  auto lit = [&](char ch) { return pos < text.size() && text[pos] == ch ? (++pos, true) : false; };
  if (!num(4, y) || !lit('-') || !num(2, mo) || !lit('-') || !num(2, d)) return false;
  int64_t frac_ns = 0, offset_s = 0;
  if (pos < text.size()) {
    if (!(lit('T') || lit('t') || lit(' '))) return false;
    if (!num(2, h) || !lit(':') || !num(2, mi)) return false;
    if (lit(':') && !num(2, s)) return false;
    if (lit('.')) {
      int64_t scale = 100000000;
      size_t start = pos;
      while (pos < text.size() && text[pos] >= '0' && text[pos] <= '9') {
        frac_ns += (text[pos] - '0') * scale;
        scale /= 10;
        ++pos;
      }
      if (pos == start) return false;
    }
    if (lit('Z') || lit('z')) {
    } else if (pos < text.size() && (text[pos] == '+' || text[pos] == '-')) {
      int sign = text[pos] == '-' ? -1 : 1;
      ++pos;
      int oh = 0, om = 0;
      if (!num(2, oh)) return false;
      lit(':');
      if (!num(2, om)) return false;
      offset_s = sign * (oh * 3600 + om * 60);
    }
    if (pos != text.size()) return false;
  }
  if (mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || s > 60) return false;
  std::tm tm{};
  tm.tm_year = y - 1900;
  tm.tm_mon = mo - 1;
  tm.tm_mday = d;
  tm.tm_hour = h;
  tm.tm_min = mi;
  tm.tm_sec = s;
  int64_t secs = static_cast<int64_t>(timegm(&tm)) - offset_s;
  ns = secs * 1000000000 + frac_ns;
  return true;
}

namespace {

struct Db {
  sqlite3* h = nullptr;
  ~Db() {
    if (h) sqlite3_close_v2(h);
  }
};

class Stmt {
 public:
  Stmt(sqlite3* db, const std::string& sql) : db_(db) {
    if (sqlite3_prepare_v2(db, sql.c_str(), static_cast<int>(sql.size()), &s_, nullptr) != SQLITE_OK)
      throw std::runtime_error(std::string("sqlite prepare: ") + sqlite3_errmsg(db));
  }
  ~Stmt() { sqlite3_finalize(s_); }
  Stmt(const Stmt&) = delete;
  Stmt& operator=(const Stmt&) = delete;
  void bind(int i, const std::string& v) { sqlite3_bind_text(s_, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT); }
  void bind(int i, int64_t v) { sqlite3_bind_int64(s_, i, v); }
  void bind_null(int i) { sqlite3_bind_null(s_, i); }
  void reset() {
    sqlite3_reset(s_);
    sqlite3_clear_bindings(s_);
  }
  bool step() {
    int rc = sqlite3_step(s_);
    if (rc == SQLITE_ROW) return true;
    if (rc == SQLITE_DONE) return false;
    throw std::runtime_error(std::string("sqlite step: ") + sqlite3_errmsg(db_));
  }
  bool null(int c) const { return sqlite3_column_type(s_, c) == SQLITE_NULL; }
  int64_t i64(int c) const { return sqlite3_column_int64(s_, c); }
  std::string text(int c) const {
    auto p = reinterpret_cast<const char*>(sqlite3_column_text(s_, c));
    return p ? std::string(p, static_cast<size_t>(sqlite3_column_bytes(s_, c))) : std::string();
  }
  json text_or_null(int c) const { return null(c) ? json(nullptr) : json(text(c)); }

 private:
  sqlite3* db_;
  sqlite3_stmt* s_ = nullptr;
};

// A WHERE clause with positional parameters.
struct Where {
  std::vector<std::string> terms;
  std::vector<std::variant<std::string, int64_t>> params;
  void add(std::string term) { terms.push_back(std::move(term)); }
  template <class T>
  void add(std::string term, T p) {
    terms.push_back(std::move(term));
    params.emplace_back(p);
  }
  std::string sql() const {
    if (terms.empty()) return "";
    std::string out = " WHERE ";
    for (size_t i = 0; i < terms.size(); ++i) out += (i ? " AND " : "") + terms[i];
    return out;
  }
  void bind(Stmt& s, int first = 1) const {
    int i = first;
    for (const auto& p : params) {
      if (std::holds_alternative<std::string>(p))
        s.bind(i++, std::get<std::string>(p));
      else
        s.bind(i++, std::get<int64_t>(p));
    }
  }
};

// `nodes` is the table of (run_id, node) rows: node_runs in the summary, run_nodes in the store.
Where where_of(const RunFilter& f, bool with_domain, const char* alias = "", const char* nodes = "node_runs") {
  std::string a = alias;
  Where w;
  if (!f.outcome.empty()) w.add(a + "outcome = ?", f.outcome);
  if (with_domain && !f.domain.empty()) w.add(a + "domain = ?", f.domain);
  if (!f.quality.empty()) w.add(a + "quality = ?", f.quality);
  if (!f.cluster.empty()) w.add(a + "cluster = ?", f.cluster);
  if (!f.node.empty()) w.add(a + "id IN (SELECT run_id FROM " + nodes + " WHERE node = ?)", f.node);
  if (!f.q.empty()) {  // job id prefix: a range on the job_id index
    w.add(a + "job_id >= ?", f.q);
    w.add(a + "job_id < ?", f.q + "\xf4\x8f\xbf\xbf");
  }
  if (f.from_ns) w.add(a + "end_ns >= ?", *f.from_ns);
  if (f.to_ns) w.add(a + "end_ns < ?", *f.to_ns);
  return w;
}

// A pool of connections to one database.
class Pool {
 public:
  void add(std::unique_ptr<Db> d) {
    std::lock_guard lock(mu_);
    free_.push_back(std::move(d));
  }
  struct Lease {
    Pool* p;
    std::unique_ptr<Db> d;
    Lease(Pool* pool, std::unique_ptr<Db> db) : p(pool), d(std::move(db)) {}
    Lease(Lease&&) = default;
    ~Lease() {
      if (d) p->release(std::move(d));
    }
    sqlite3* db() const { return d->h; }
  };
  Lease lease() {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [&] { return !free_.empty(); });
    auto d = std::move(free_.back());
    free_.pop_back();
    return Lease(this, std::move(d));
  }

 private:
  void release(std::unique_ptr<Db> d) {
    {
      std::lock_guard lock(mu_);
      free_.push_back(std::move(d));
    }
    cv_.notify_one();
  }
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::unique_ptr<Db>> free_;
};

void exec(sqlite3* db, const std::string& sql) {
  char* msg = nullptr;
  if (sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &msg) != SQLITE_OK) {
    std::string m = msg ? msg : sqlite3_errmsg(db);
    sqlite3_free(msg);
    throw std::runtime_error(m);
  }
}

std::string uri_path(const std::string& path) {
  static const char* hex = "0123456789ABCDEF";
  std::string out = "file:";
  for (unsigned char c : path) {
    if (std::isalnum(c) || c == '/' || c == '.' || c == '-' || c == '_' || c == '~') {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += hex[c >> 4];
      out += hex[c & 15];
    }
  }
  return out + "?mode=ro";
}

// The list/filter/fleet columns of every run, copied into memory with the indexes the list
// needs (the store's rows are wide: each holds its verdict, ~20 KiB, so scanning or filtering the
// store itself reads the whole file). Rebuilt when the store changes (PRAGMA data_version).
// Read-only copies of it (sqlite3_deserialize), one per worker, so queries run in parallel.
const char* const kSummarySchema = R"sql(
CREATE TABLE runs AS SELECT id, cluster, scheduler, job_id, attempt, name, user_name, queue, state,
  terminal_state, start_time, end_time, end_ns, outcome, domain, quality, root_symptom, root_node,
  affected_nodes FROM s.runs ORDER BY id;
CREATE UNIQUE INDEX runs_id ON runs (id);
CREATE INDEX runs_end ON runs (end_ns DESC, id DESC);
CREATE INDEX runs_domain_end ON runs (domain, end_ns DESC, id DESC);
CREATE INDEX runs_outcome_end ON runs (outcome, end_ns DESC, id DESC);
CREATE INDEX runs_quality_end ON runs (quality, end_ns DESC, id DESC);
CREATE INDEX runs_cluster_end ON runs (cluster, end_ns DESC, id DESC);
CREATE INDEX runs_counts ON runs (domain, quality, end_ns);
CREATE INDEX runs_job ON runs (job_id);
CREATE TABLE node_runs AS SELECT rn.run_id AS run_id, rn.node AS node,
  max(rn.role = 'root_cause') AS is_root, max(rn.role = 'affected') AS is_affected,
  max(rn.role = 'candidate') AS is_candidate, r.end_ns AS end_ns, r.domain AS domain, r.outcome AS outcome,
  r.quality AS quality, r.cluster AS cluster, r.job_id AS job_id, r.id AS id
  FROM s.run_nodes rn JOIN runs r ON r.id = rn.run_id GROUP BY rn.run_id, rn.node;
CREATE INDEX node_runs_node ON node_runs (node, run_id);
CREATE INDEX node_runs_fleet ON node_runs (node, domain, end_ns, is_root, is_affected, is_candidate, outcome);
CREATE TABLE gpu_runs AS SELECT DISTINCT rn.run_id AS run_id, rn.node AS node, rn.gpu AS gpu, r.end_ns AS end_ns,
  r.domain AS domain, r.outcome AS outcome, r.quality AS quality, r.cluster AS cluster, r.job_id AS job_id, r.id AS id
  FROM s.run_nodes rn JOIN runs r ON r.id = rn.run_id WHERE rn.gpu != '';
CREATE TABLE port_runs AS SELECT * FROM (SELECT r.id AS id, r.root_node AS node, r.end_ns AS end_ns, r.domain AS domain,
  r.outcome AS outcome, r.quality AS quality, r.cluster AS cluster, r.job_id AS job_id,
  coalesce(json_extract(v.verdict_json, '$.root_cause.fields.switch_port'),
           json_extract(v.verdict_json, '$.root_cause.fields.port'),
           json_extract(v.verdict_json, '$.root_cause.fields.device')) AS port
  FROM runs r JOIN s.runs v ON v.id = r.id WHERE r.domain = 'network') WHERE port IS NOT NULL;
)sql";

struct Summary {
  Pool pool;
  std::mutex facets_mu;
  std::optional<nlohmann::json> facets;  // computed once per summary
  int64_t runs = 0;
  double build_ms = 0;
  Pool::Lease lease() { return pool.lease(); }
};

// The queries of every store: lists, counts, facets and the fleet run on the in-memory summary;
// a subclass fills the summary from its store and reads single runs and labels from it.
class SummaryReader : public StoreReader {
 public:
  explicit SummaryReader(int connections) : connections_(std::max(1, connections)) {}

 protected:
  // Creates and fills the summary tables (kSummarySchema's shape) in `builder`.
  virtual void fill_summary(sqlite3* builder) = 0;
  // Root-cause labels of the given run ids (a comma-separated list of integers).
  virtual std::map<int64_t, json> root_labels(const std::string& ids) = 0;
  // One run's columns and raw verdict.
  virtual std::optional<json> fetch_run(int64_t id, std::string* verdict_json) = 0;
  // Changes whenever the store changed (cheap; called at most every 2 s).
  virtual int64_t source_version() = 0;

  // Subclass constructors call start() once the store is open and stop() in their destructor.
  void start() {
    data_version_ = source_version();
    current_ = build_summary();
    last_check_ = std::chrono::steady_clock::now();
  }
  void stop() {
    std::unique_lock lock(refresh_mu_);
    stopped_ = true;
    if (rebuild_.joinable()) {
      auto t = std::move(rebuild_);
      lock.unlock();
      t.join();
    }
  }

 public:
  std::optional<json> get_run(int64_t id, std::string* verdict_json) override { return fetch_run(id, verdict_json); }

  json list_runs(const RunFilter& f, const std::optional<PageCursor>& after, int limit) override {
    Where w = where_of(f, true);
    if (after) {
      if (after->end_ns) {
        w.add("(end_ns < ? OR (end_ns = ? AND id < ?) OR end_ns IS NULL)");
        w.params.emplace_back(*after->end_ns);
        w.params.emplace_back(*after->end_ns);
        w.params.emplace_back(after->id);
      } else {
        w.add("end_ns IS NULL AND id < ?", after->id);
      }
    }
    std::string sql =
        "SELECT id, cluster, scheduler, job_id, attempt, name, user_name, queue, state, terminal_state, "
        "start_time, end_time, end_ns, outcome, domain, quality, root_symptom, root_node, affected_nodes "
        "FROM runs" +
        w.sql() + " ORDER BY end_ns DESC, id DESC LIMIT ?";
    auto sum = summary();
    auto c = sum->lease();
    Stmt s(c.db(), sql);
    w.bind(s);
    s.bind(static_cast<int>(w.params.size()) + 1, static_cast<int64_t>(limit + 1));
    json rows = json::array();
    std::optional<PageCursor> last;
    bool more = false;
    std::vector<int64_t> ids;
    while (s.step()) {
      if (static_cast<int>(rows.size()) == limit) {
        more = true;
        break;
      }
      json r = row_json(s);
      PageCursor pc;
      pc.id = s.i64(0);
      if (!s.null(12)) pc.end_ns = s.i64(12);
      last = pc;
      ids.push_back(pc.id);
      rows.push_back(std::move(r));
    }
    // Root cause labels for the page only (parsing a verdict per row would not scale to the table).
    if (!ids.empty()) {
      std::string in;
      for (size_t i = 0; i < ids.size(); ++i) in += (i ? "," : "") + std::to_string(ids[i]);
      std::map<int64_t, json> labels = root_labels(in);
      for (auto& r : rows) r["root_label"] = labels[r["id"].get<int64_t>()];
    }
    return {{"runs", std::move(rows)}, {"next_cursor", more && last ? json(format_cursor(*last)) : json(nullptr)}};
  }

  json counts(const RunFilter& f) override {
    Where w = where_of(f, false);
    auto sum = summary();
    auto c = sum->lease();
    Stmt s(c.db(), "SELECT domain, quality, count(*) FROM runs" + w.sql() + " GROUP BY domain, quality");
    w.bind(s);
    json by_domain = json::object(), by_quality = json::object();
    int64_t total = 0, all = 0;
    while (s.step()) {
      std::string d = s.text(0), q = s.text(1);
      int64_t n = s.i64(2);
      by_domain[d] = by_domain.value(d, int64_t{0}) + n;
      all += n;
      if (f.domain.empty() || f.domain == d) {
        total += n;
        by_quality[q] = by_quality.value(q, int64_t{0}) + n;
      }
    }
    return {{"total", total}, {"total_any_domain", all}, {"by_domain", by_domain}, {"by_quality", by_quality}};
  }

  json facets() override {
    auto sum = summary();
    std::lock_guard fl(sum->facets_mu);
    if (sum->facets) return *sum->facets;
    auto c = sum->lease();
    json out = json::object();
    const std::pair<const char*, const char*> cols[] = {
        {"outcome", "outcomes"}, {"domain", "domains"}, {"quality", "qualities"}, {"cluster", "clusters"}};
    for (const auto& [col, key] : cols) {
      // DISTINCT over an indexed column walks the index; cluster has none but stays cheap.
      Stmt s(c.db(), std::string("SELECT DISTINCT ") + col + " FROM runs ORDER BY 1");
      json vals = json::array();
      while (s.step()) vals.push_back(s.text(0));
      out[key] = std::move(vals);
    }
    Stmt b(c.db(), "SELECT min(end_ns), max(end_ns), count(*) FROM runs");
    if (b.step()) {
      out["first_end_ns"] = b.null(0) ? json(nullptr) : json(b.i64(0));
      out["last_end_ns"] = b.null(1) ? json(nullptr) : json(b.i64(1));
      out["runs"] = b.i64(2);
    }
    out["summary_build_ms"] = std::round(sum->build_ms * 10) / 10;
    sum->facets = out;
    return out;
  }

  json fleet(const RunFilter& f, int limit) override {
    // node_runs in the summary: one row per (run, node) with its run's columns (no join).
    Where w = where_of(f, true, "rn.");
    w.add("rn.domain != 'none'");
    auto sum = summary();
    auto c = sum->lease();
    std::string from = " FROM node_runs rn" + w.sql();
    Stmt s(c.db(),
           "SELECT rn.node, count(*) AS runs, sum(rn.is_root) AS root, sum(rn.is_affected), sum(rn.is_candidate), "
           "max(rn.end_ns) AS last, min(rn.end_ns), group_concat(DISTINCT rn.domain), group_concat(DISTINCT rn.outcome)" +
               from + " GROUP BY rn.node ORDER BY runs DESC, root DESC, last DESC, rn.node LIMIT ?");
    w.bind(s);
    s.bind(static_cast<int>(w.params.size()) + 1, static_cast<int64_t>(limit));
    auto split = [](const std::string& csv) {
      json a = json::array();
      size_t p = 0;
      while (p <= csv.size() && !csv.empty()) {
        size_t q = csv.find(',', p);
        a.push_back(csv.substr(p, q == std::string::npos ? std::string::npos : q - p));
        if (q == std::string::npos) break;
        p = q + 1;
      }
      return a;
    };
    json nodes = json::array();
    while (s.step()) {
      nodes.push_back({{"node", s.text(0)},
                       {"runs", s.i64(1)},
                       {"root_cause", s.i64(2)},
                       {"affected", s.i64(3)},
                       {"candidate", s.i64(4)},
                       {"last_end_ns", s.null(5) ? json(nullptr) : json(s.i64(5))},
                       {"first_end_ns", s.null(6) ? json(nullptr) : json(s.i64(6))},
                       {"domains", split(s.text(7))},
                       {"outcomes", split(s.text(8))}});
    }
    Where wg = w;
    Stmt g(c.db(), "SELECT rn.node, rn.gpu, count(*) AS runs, max(rn.end_ns), "
                   "group_concat(DISTINCT rn.outcome) FROM gpu_runs rn" +
                       wg.sql() + " GROUP BY rn.node, rn.gpu ORDER BY runs DESC, max(rn.end_ns) DESC LIMIT ?");
    wg.bind(g);
    g.bind(static_cast<int>(wg.params.size()) + 1, static_cast<int64_t>(limit));
    json gpus = json::array();
    while (g.step())
      gpus.push_back({{"node", g.text(0)},
                      {"gpu", g.text(1)},
                      {"runs", g.i64(2)},
                      {"last_end_ns", g.null(3) ? json(nullptr) : json(g.i64(3))},
                      {"outcomes", split(g.text(4))}});
    // Switch / HCA ports, when a network root cause's fields name one (summary: port_runs).
    Where wp = where_of(f, true);
    Stmt p(c.db(), "SELECT node, port, count(*) AS runs, max(end_ns) FROM port_runs" + wp.sql() +
                       " GROUP BY node, port ORDER BY runs DESC, max(end_ns) DESC LIMIT ?");
    wp.bind(p);
    p.bind(static_cast<int>(wp.params.size()) + 1, static_cast<int64_t>(limit));
    json ports = json::array();
    while (p.step())
      ports.push_back({{"node", p.text_or_null(0)}, {"port", p.text(1)}, {"runs", p.i64(2)},
                       {"last_end_ns", p.null(3) ? json(nullptr) : json(p.i64(3))}});
    return {{"nodes", std::move(nodes)}, {"gpus", std::move(gpus)}, {"ports", std::move(ports)}};
  }

 private:
  std::shared_ptr<Summary> build_summary() {
    auto t0 = std::chrono::steady_clock::now();
    Db builder;
    if (sqlite3_open_v2(":memory:", &builder.h, SQLITE_OPEN_READWRITE | SQLITE_OPEN_URI | SQLITE_OPEN_NOMUTEX, nullptr) != SQLITE_OK)
      throw std::runtime_error("cannot open an in-memory database");
    sqlite3_busy_timeout(builder.h, 5000);
    fill_summary(builder.h);
    auto sum = std::make_shared<Summary>();
    {
      Stmt n(builder.h, "SELECT count(*) FROM runs");
      n.step();
      sum->runs = n.i64(0);
    }
    sqlite3_int64 size = 0;
    unsigned char* image = sqlite3_serialize(builder.h, "main", &size, 0);
    if (!image) throw std::runtime_error("cannot serialize the summary");
    for (int i = 0; i < connections_; ++i) {
      auto d = std::make_unique<Db>();
      sqlite3_open_v2(":memory:", &d->h, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, nullptr);
      auto* copy = static_cast<unsigned char*>(sqlite3_malloc64(static_cast<sqlite3_uint64>(size)));
      if (!copy) {
        sqlite3_free(image);
        throw std::runtime_error("out of memory for the summary");
      }
      std::memcpy(copy, image, static_cast<size_t>(size));
      if (sqlite3_deserialize(d->h, "main", copy, size, size,
                              SQLITE_DESERIALIZE_FREEONCLOSE | SQLITE_DESERIALIZE_READONLY) != SQLITE_OK) {
        sqlite3_free(image);
        throw std::runtime_error(std::string("cannot load the summary: ") + sqlite3_errmsg(d->h));
      }
      sum->pool.add(std::move(d));
    }
    sqlite3_free(image);
    sum->build_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    return sum;
  }

  // The current summary; at most every 2 s, checks whether the store changed and rebuilds the
  // summary in the background (requests keep using the previous one meanwhile).
  std::shared_ptr<Summary> summary() {
    auto now = std::chrono::steady_clock::now();
    std::unique_lock lock(refresh_mu_);
    if (now - last_check_ > std::chrono::seconds(2) && !rebuilding_ && !stopped_) {
      last_check_ = now;
      int64_t v = 0;
      try {
        v = source_version();
      } catch (const std::exception&) {
        v = data_version_;
      }
      if (v != data_version_) {
        data_version_ = v;
        if (rebuild_.joinable()) rebuild_.join();
        rebuilding_ = true;
        rebuild_ = std::thread([this] {
          std::shared_ptr<Summary> next;
          try {
            next = build_summary();
          } catch (const std::exception&) {
            next = nullptr;  // keep serving the previous summary; the next check retries
          }
          std::lock_guard l(refresh_mu_);
          if (next) current_ = std::move(next);
          else data_version_ = -1;
          rebuilding_ = false;
        });
      }
    }
    return current_;
  }


 protected:
  static json row_json(const Stmt& s) {
    json affected = json::parse(s.text(18), nullptr, false);
    if (!affected.is_array()) affected = json::array();
    return {{"id", s.i64(0)},
            {"cluster", s.text(1)},
            {"scheduler", s.text(2)},
            {"job_id", s.text(3)},
            {"attempt", s.i64(4)},
            {"name", s.text_or_null(5)},
            {"user", s.text_or_null(6)},
            {"queue", s.text_or_null(7)},
            {"state", s.text_or_null(8)},
            {"terminal_state", s.text_or_null(9)},
            {"start_time", s.text_or_null(10)},
            {"end_time", s.text_or_null(11)},
            {"end_ns", s.null(12) ? json(nullptr) : json(s.i64(12))},
            {"outcome", s.text(13)},
            {"domain", s.text(14)},
            {"quality", s.text(15)},
            {"root_symptom", s.text_or_null(16)},
            {"root_node", s.text_or_null(17)},
            {"affected_nodes", std::move(affected)}};
  }

  int connections_;
  std::mutex refresh_mu_;
  bool stopped_ = false;
  std::shared_ptr<Summary> current_;
  int64_t data_version_ = 0;
  bool rebuilding_ = false;
  std::thread rebuild_;
  std::chrono::steady_clock::time_point last_check_;
};

class SqliteReader final : public SummaryReader {
 public:
  SqliteReader(std::string path, int connections) : SummaryReader(connections), path_(std::move(path)) {
    for (int i = 0; i < std::max(1, connections); ++i) store_.add(open());
    watch_ = open();
    try {
      auto c = store_.lease();
      Stmt s(c.db(), "SELECT count(*) FROM runs");
      s.step();
      Stmt n(c.db(), "SELECT count(*) FROM run_nodes");
      n.step();
    } catch (const std::exception& e) {
      throw std::runtime_error(path_ + ": not a verdict store (docs/store.md): " + e.what());
    }
    start();
  }
  ~SqliteReader() override { stop(); }

  std::string describe() const override { return "sqlite:" + path_; }

 protected:
  void fill_summary(sqlite3* builder) override {
    {
      Stmt a(builder, "ATTACH DATABASE ? AS s");
      a.bind(1, uri_path(path_));
      a.step();
    }
    exec(builder, "BEGIN");  // one read transaction: a consistent snapshot of runs + run_nodes
    exec(builder, kSummarySchema);
    exec(builder, "COMMIT");
    exec(builder, "DETACH DATABASE s");
  }

  std::map<int64_t, json> root_labels(const std::string& ids) override {
    auto st = store_.lease();
    Stmt l(st.db(), "SELECT id, json_extract(verdict_json, '$.root_cause.label') FROM runs WHERE id IN (" + ids + ")");
    std::map<int64_t, json> labels;
    while (l.step()) labels[l.i64(0)] = l.text_or_null(1);
    return labels;
  }

  int64_t source_version() override {
    Stmt s(watch_->h, "PRAGMA data_version");  // called under the refresh lock
    return s.step() ? s.i64(0) : 0;
  }

  std::optional<json> fetch_run(int64_t id, std::string* verdict_json) override {
    auto c = store_.lease();
    Stmt s(c.db(),
           "SELECT id, cluster, scheduler, job_id, attempt, name, user_name, queue, state, terminal_state, "
           "start_time, end_time, end_ns, outcome, domain, quality, root_symptom, root_node, affected_nodes, "
           "analyzed_at, rules_digest, verdict_json FROM runs WHERE id = ?");
    s.bind(1, id);
    if (!s.step()) return std::nullopt;
    json r = row_json(s);
    r["analyzed_at"] = s.text_or_null(19);
    r["rules_digest"] = s.text_or_null(20);
    if (verdict_json) *verdict_json = s.text(21);
    Stmt n(c.db(), "SELECT node, gpu, role FROM run_nodes WHERE run_id = ? ORDER BY role, node, gpu");
    n.bind(1, id);
    json nodes = json::array();
    while (n.step()) nodes.push_back({{"node", n.text(0)}, {"gpu", n.text(1)}, {"role", n.text(2)}});
    r["nodes"] = std::move(nodes);
    // Other attempts of the same job.
    Stmt o(c.db(), "SELECT id, attempt, outcome, quality FROM runs WHERE cluster = ? AND scheduler = ? AND job_id = ? "
                   "AND id != ? ORDER BY attempt");
    o.bind(1, r["cluster"].get<std::string>());
    o.bind(2, r["scheduler"].get<std::string>());
    o.bind(3, r["job_id"].get<std::string>());
    o.bind(4, id);
    json others = json::array();
    while (o.step())
      others.push_back({{"id", o.i64(0)}, {"attempt", o.i64(1)}, {"outcome", o.text(2)}, {"quality", o.text(3)}});
    r["other_attempts"] = std::move(others);
    return r;
  }

 private:
  std::unique_ptr<Db> open() {
    auto db = std::make_unique<Db>();
    int rc = sqlite3_open_v2(path_.c_str(), &db->h, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, nullptr);
    if (rc != SQLITE_OK)
      throw std::runtime_error(path_ + ": cannot open read-only: " + (db->h ? sqlite3_errmsg(db->h) : sqlite3_errstr(rc)));
    sqlite3_busy_timeout(db->h, 5000);
    sqlite3_exec(db->h, "PRAGMA query_only = 1", nullptr, nullptr, nullptr);
    return db;
  }


  std::string path_;
  Pool store_;                 // read-only connections to the store file (verdicts, labels)
  std::unique_ptr<Db> watch_;  // PRAGMA data_version
};

#ifdef ATTRIBUTION_HAVE_PQXX
// PostgreSQL (the same tables with native types): the summary is filled from two SELECTs (the
// verdicts stay in PostgreSQL; network runs bring only their root cause's fields), single runs
// and labels are read by primary key. Sessions are read-only (default_transaction_read_only).
const char* const kPgRunColumns =
    "id, cluster, scheduler, job_id, attempt, name, user_name, queue, state, terminal_state, "
    "to_char(start_time AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"'), "
    "to_char(end_time AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"'), "
    "end_ns, outcome, domain, quality, root_symptom, root_node, affected_nodes::text";

class PgReader final : public SummaryReader {
 public:
  PgReader(std::string dsn, int connections) : SummaryReader(connections), dsn_(std::move(dsn)) {
    try {
      auto c = connect();
      pqxx::read_transaction tx(*c);
      tx.exec("SELECT count(*) FROM runs");
      tx.exec("SELECT count(*) FROM run_nodes");
    } catch (const std::exception& e) {
      throw std::runtime_error("postgres: not a reachable verdict store (docs/store.md): " + std::string(e.what()));
    }
    start();
  }
  ~PgReader() override { stop(); }

  std::string describe() const override { return "postgres"; }

 protected:
  std::unique_ptr<pqxx::connection> connect() {
    auto c = std::make_unique<pqxx::connection>(dsn_);
    pqxx::nontransaction n(*c);
    n.exec("SET default_transaction_read_only = on");
    return c;
  }

  template <class Fn>
  auto with_conn(Fn fn) {
    std::lock_guard lock(conn_mu_);
    for (int attempt = 0;; ++attempt) {
      try {
        if (!conn_ || !conn_->is_open()) conn_ = connect();
        return fn(*conn_);
      } catch (const pqxx::broken_connection&) {
        conn_.reset();
        if (attempt) throw;
      }
    }
  }

  void fill_summary(sqlite3* builder) override {
    exec(builder, "ATTACH DATABASE ':memory:' AS s");
    exec(builder,
         "CREATE TABLE s.runs (id INTEGER PRIMARY KEY, cluster, scheduler, job_id, attempt, name, user_name, queue, "
         "state, terminal_state, start_time, end_time, end_ns, outcome, domain, quality, root_symptom, root_node, "
         "affected_nodes, verdict_json); CREATE TABLE s.run_nodes (run_id, node, gpu, role);");
    auto c = connect();
    pqxx::read_transaction tx(*c);
    exec(builder, "BEGIN");
    {
      Stmt ins(builder, "INSERT INTO s.runs VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)");
      auto rows = tx.exec(std::string("SELECT ") + kPgRunColumns +
                          ", CASE WHEN domain = 'network' THEN jsonb_build_object('root_cause', jsonb_build_object("
                          "'fields', verdict_json::jsonb #> '{root_cause,fields}'))::text END FROM runs");
      for (const auto& r : rows) {
        ins.reset();
        for (int i = 0; i < 20; ++i) {
          int col = i + 1;
          if (r[i].is_null()) ins.bind_null(col);
          else if (i == 0 || i == 4 || i == 12) ins.bind(col, r[i].as<int64_t>());
          else ins.bind(col, std::string(r[i].c_str()));
        }
        ins.step();
      }
      Stmt nodes(builder, "INSERT INTO s.run_nodes VALUES (?,?,?,?)");
      for (const auto& r : tx.exec("SELECT run_id, node, gpu, role FROM run_nodes")) {
        nodes.reset();
        nodes.bind(1, r[0].as<int64_t>());
        for (int i = 1; i < 4; ++i) nodes.bind(i + 1, std::string(r[i].c_str()));
        nodes.step();
      }
    }
    exec(builder, kSummarySchema);
    exec(builder, "COMMIT");
    exec(builder, "DETACH DATABASE s");
  }

  std::map<int64_t, json> root_labels(const std::string& ids) override {
    return with_conn([&](pqxx::connection& c) {
      pqxx::read_transaction tx(c);
      std::map<int64_t, json> labels;
      for (const auto& r : tx.exec("SELECT id, verdict_json::jsonb #>> '{root_cause,label}' FROM runs WHERE id IN (" + ids + ")"))
        labels[r[0].as<int64_t>()] = r[1].is_null() ? json(nullptr) : json(r[1].c_str());
      return labels;
    });
  }

  int64_t source_version() override {
    return with_conn([&](pqxx::connection& c) {
      pqxx::read_transaction tx(c);
      auto r = tx.exec("SELECT count(*)::text || ':' || coalesce(max(id), 0)::text || ':' || "
                       "coalesce(extract(epoch FROM max(analyzed_at))::text, '') FROM runs");
      return static_cast<int64_t>(std::hash<std::string>{}(r[0][0].c_str()) & 0x7fffffffffffffff);
    });
  }

  std::optional<json> fetch_run(int64_t id, std::string* verdict_json) override {
    return with_conn([&](pqxx::connection& c) -> std::optional<json> {
      pqxx::read_transaction tx(c);
      auto rows = tx.exec(std::string("SELECT ") + kPgRunColumns +
                          ", to_char(analyzed_at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"'), rules_digest, "
                          "verdict_json FROM runs WHERE id = " + std::to_string(id));
      if (rows.empty()) return std::nullopt;
      const auto& r = rows[0];
      auto str = [&](int i) { return r[i].is_null() ? json(nullptr) : json(r[i].c_str()); };
      json affected = json::parse(r[18].is_null() ? "[]" : r[18].c_str(), nullptr, false);
      json out = {{"id", r[0].as<int64_t>()}, {"cluster", r[1].c_str()}, {"scheduler", r[2].c_str()},
                  {"job_id", r[3].c_str()}, {"attempt", r[4].as<int64_t>()}, {"name", str(5)}, {"user", str(6)},
                  {"queue", str(7)}, {"state", str(8)}, {"terminal_state", str(9)}, {"start_time", str(10)},
                  {"end_time", str(11)}, {"end_ns", r[12].is_null() ? json(nullptr) : json(r[12].as<int64_t>())},
                  {"outcome", r[13].c_str()}, {"domain", r[14].c_str()}, {"quality", r[15].c_str()},
                  {"root_symptom", str(16)}, {"root_node", str(17)},
                  {"affected_nodes", affected.is_array() ? affected : json::array()}, {"analyzed_at", str(19)},
                  {"rules_digest", str(20)}};
      if (verdict_json) *verdict_json = r[21].is_null() ? "" : r[21].c_str();
      json nodes = json::array();
      for (const auto& n : tx.exec("SELECT node, gpu, role FROM run_nodes WHERE run_id = " + std::to_string(id) +
                                   " ORDER BY role, node, gpu"))
        nodes.push_back({{"node", n[0].c_str()}, {"gpu", n[1].c_str()}, {"role", n[2].c_str()}});
      out["nodes"] = std::move(nodes);
      json others = json::array();
      for (const auto& o : tx.exec("SELECT id, attempt, outcome, quality FROM runs WHERE cluster = " + tx.quote(r[1].c_str()) +
                                   " AND scheduler = " + tx.quote(r[2].c_str()) + " AND job_id = " + tx.quote(r[3].c_str()) +
                                   " AND id != " + std::to_string(id) + " ORDER BY attempt"))
        others.push_back({{"id", o[0].as<int64_t>()}, {"attempt", o[1].as<int64_t>()}, {"outcome", o[2].c_str()},
                          {"quality", o[3].c_str()}});
      out["other_attempts"] = std::move(others);
      return out;
    });
  }

 private:
  std::string dsn_;
  std::mutex conn_mu_;
  std::unique_ptr<pqxx::connection> conn_;
};
#endif

}  // namespace

std::unique_ptr<StoreReader> open_sqlite_reader(const std::string& path, int connections) {
  return std::make_unique<SqliteReader>(path, connections);
}

std::unique_ptr<StoreReader> open_postgres_reader(const std::string& dsn, int connections) {
#ifdef ATTRIBUTION_HAVE_PQXX
  return std::make_unique<PgReader>(dsn, connections);
#else
  (void)dsn;
  (void)connections;
  throw std::runtime_error("this build has no PostgreSQL support (libpqxx-dev)");
#endif
}

}  // namespace attribution::blueprint::web
