// SQLite implementation of StoreReader: read-only connections (SQLITE_OPEN_READONLY plus
// PRAGMA query_only), a small pool so concurrent requests do not serialize, keyset paging on
// the runs_end index.
#include <sqlite3.h>

#include <algorithm>
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

std::string like_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '%' || c == '_' || c == '\\') out += '\\';
    out += c;
  }
  return out;
}

Where where_of(const RunFilter& f, bool with_domain, const char* alias = "") {
  std::string a = alias;
  Where w;
  if (!f.outcome.empty()) w.add(a + "outcome = ?", f.outcome);
  if (with_domain && !f.domain.empty()) w.add(a + "domain = ?", f.domain);
  if (!f.quality.empty()) w.add(a + "quality = ?", f.quality);
  if (!f.cluster.empty()) w.add(a + "cluster = ?", f.cluster);
  if (!f.node.empty()) w.add(a + "id IN (SELECT run_id FROM run_nodes WHERE node = ?)", f.node);
  if (!f.q.empty()) w.add(a + "job_id LIKE ? ESCAPE '\\'", "%" + like_escape(f.q) + "%");
  if (f.from_ns) w.add(a + "end_ns >= ?", *f.from_ns);
  if (f.to_ns) w.add(a + "end_ns < ?", *f.to_ns);
  return w;
}

class SqliteReader final : public StoreReader {
 public:
  SqliteReader(std::string path, int connections) : path_(std::move(path)) {
    for (int i = 0; i < std::max(1, connections); ++i) free_.push_back(open());
    auto c = acquire();
    try {
      Stmt s(c->h, "SELECT count(*) FROM runs");
      s.step();
      Stmt n(c->h, "SELECT count(*) FROM run_nodes");
      n.step();
    } catch (const std::exception& e) {
      release(std::move(c));
      throw std::runtime_error(path_ + ": not a verdict store (docs/store.md): " + e.what());
    }
    release(std::move(c));
  }

  std::string describe() const override { return "sqlite:" + path_; }

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
        "start_time, end_time, end_ns, outcome, domain, quality, root_symptom, root_node, affected_nodes, "
        "analyzed_at FROM runs" +
        w.sql() + " ORDER BY end_ns DESC, id DESC LIMIT ?";
    auto c = lease();
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
      Stmt l(c.db(), "SELECT id, json_extract(verdict_json, '$.root_cause.label') FROM runs WHERE id IN (" + in + ")");
      std::map<int64_t, json> labels;
      while (l.step()) labels[l.i64(0)] = l.text_or_null(1);
      for (auto& r : rows) r["root_label"] = labels[r["id"].get<int64_t>()];
    }
    return {{"runs", std::move(rows)}, {"next_cursor", more && last ? json(format_cursor(*last)) : json(nullptr)}};
  }

  json counts(const RunFilter& f) override {
    Where w = where_of(f, false);
    auto c = lease();
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

  std::optional<json> get_run(int64_t id, std::string* verdict_json) override {
    auto c = lease();
    Stmt s(c.db(),
           "SELECT id, cluster, scheduler, job_id, attempt, name, user_name, queue, state, terminal_state, "
           "start_time, end_time, end_ns, outcome, domain, quality, root_symptom, root_node, affected_nodes, "
           "analyzed_at, rules_digest, verdict_json FROM runs WHERE id = ?");
    s.bind(1, id);
    if (!s.step()) return std::nullopt;
    json r = row_json(s);
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

  json facets() override {
    auto c = lease();
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
    return out;
  }

  json fleet(const RunFilter& f, int limit) override {
    Where w = where_of(f, true, "r.");
    w.add("r.domain != 'none'");
    auto c = lease();
    std::string from = " FROM run_nodes rn JOIN runs r ON r.id = rn.run_id" + w.sql();
    Stmt s(c.db(),
           "SELECT rn.node, count(DISTINCT rn.run_id) AS runs, "
           "count(DISTINCT CASE WHEN rn.role = 'root_cause' THEN rn.run_id END) AS root, "
           "count(DISTINCT CASE WHEN rn.role = 'affected' THEN rn.run_id END) AS affected, "
           "count(DISTINCT CASE WHEN rn.role = 'candidate' THEN rn.run_id END) AS candidate, "
           "max(r.end_ns), min(r.end_ns), group_concat(DISTINCT r.domain), group_concat(DISTINCT r.outcome)" +
               from + " GROUP BY rn.node ORDER BY runs DESC, root DESC, max(r.end_ns) DESC, rn.node LIMIT ?");
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
    wg.add("rn.gpu != ''");
    Stmt g(c.db(), "SELECT rn.node, rn.gpu, count(DISTINCT rn.run_id) AS runs, max(r.end_ns), "
                   "group_concat(DISTINCT r.outcome) FROM run_nodes rn JOIN runs r ON r.id = rn.run_id" +
                       wg.sql() + " GROUP BY rn.node, rn.gpu ORDER BY runs DESC, max(r.end_ns) DESC LIMIT ?");
    wg.bind(g);
    g.bind(static_cast<int>(wg.params.size()) + 1, static_cast<int64_t>(limit));
    json gpus = json::array();
    while (g.step())
      gpus.push_back({{"node", g.text(0)},
                      {"gpu", g.text(1)},
                      {"runs", g.i64(2)},
                      {"last_end_ns", g.null(3) ? json(nullptr) : json(g.i64(3))},
                      {"outcomes", split(g.text(4))}});
    // Switch ports / HCA ports, when the root cause's fields name one (network failures only;
    // bounded to the most recent 2000 network runs in the window).
    Where wp = where_of(f, false);
    wp.add("domain = 'network'");
    if (!f.domain.empty() && f.domain != "network") wp.add("0");
    Stmt p(c.db(),
           "SELECT node, port, count(*) AS runs, max(end_ns) FROM (SELECT root_node AS node, end_ns, "
           "coalesce(json_extract(verdict_json, '$.root_cause.fields.switch_port'), "
           "json_extract(verdict_json, '$.root_cause.fields.port'), "
           "json_extract(verdict_json, '$.root_cause.fields.device')) AS port FROM runs" +
               wp.sql() + " ORDER BY end_ns DESC LIMIT 2000) WHERE port IS NOT NULL "
                          "GROUP BY node, port ORDER BY runs DESC LIMIT ?");
    wp.bind(p);
    p.bind(static_cast<int>(wp.params.size()) + 1, static_cast<int64_t>(limit));
    json ports = json::array();
    while (p.step())
      ports.push_back({{"node", p.text_or_null(0)}, {"port", p.text(1)}, {"runs", p.i64(2)},
                       {"last_end_ns", p.null(3) ? json(nullptr) : json(p.i64(3))}});
    return {{"nodes", std::move(nodes)}, {"gpus", std::move(gpus)}, {"ports", std::move(ports)}};
  }

 private:
  std::unique_ptr<Db> open() {
    auto db = std::make_unique<Db>();
    int rc = sqlite3_open_v2(path_.c_str(), &db->h, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, nullptr);
    if (rc != SQLITE_OK)
      throw std::runtime_error(path_ + ": cannot open read-only: " + (db->h ? sqlite3_errmsg(db->h) : sqlite3_errstr(rc)));
    sqlite3_busy_timeout(db->h, 2000);
    sqlite3_exec(db->h, "PRAGMA query_only = 1", nullptr, nullptr, nullptr);
    return db;
  }
  std::unique_ptr<Db> acquire() {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [&] { return !free_.empty(); });
    auto d = std::move(free_.back());
    free_.pop_back();
    return d;
  }
  void release(std::unique_ptr<Db> d) {
    {
      std::lock_guard lock(mu_);
      free_.push_back(std::move(d));
    }
    cv_.notify_one();
  }
  struct Lease {
    SqliteReader* r;
    std::unique_ptr<Db> d;
    ~Lease() { r->release(std::move(d)); }
    sqlite3* db() const { return d->h; }
  };
  Lease lease() { return Lease{this, acquire()}; }

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
            {"affected_nodes", std::move(affected)},
            {"analyzed_at", s.text(19)}};
  }

  std::string path_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::unique_ptr<Db>> free_;
};

}  // namespace

std::unique_ptr<StoreReader> open_sqlite_reader(const std::string& path, int connections) {
  return std::make_unique<SqliteReader>(path, connections);
}

}  // namespace attribution::blueprint::web
