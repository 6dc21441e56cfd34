#include "server.h"

#include <httplib.h>
#include <openssl/crypto.h>
#include <openssl/rand.h>
#include <openssl/sha.h>

#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <shared_mutex>
#include <sstream>
#include <thread>
#include <unordered_map>
#include <unordered_set>

#include "attribution/codec.h"
#include "attribution/engine.h"
#include "ingest.h"
#include "log.h"
#include "metrics.h"
#include "store.h"

namespace attribution::service {
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

// ---------------------------------------------------------------------------------------------
// Helpers

bool secret_equal(std::string_view a, std::string_view b) {
  unsigned char da[SHA256_DIGEST_LENGTH], db[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(a.data()), a.size(), da);
  SHA256(reinterpret_cast<const unsigned char*>(b.data()), b.size(), db);
  return CRYPTO_memcmp(da, db, sizeof da) == 0;
}

namespace {

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string new_id() {
  unsigned char b[16];
  if (RAND_bytes(b, sizeof b) != 1) {
    // Fall back to a time-seeded value; ids only need to be unique, not secret.
    auto t = static_cast<uint64_t>(now_ns());
    std::memcpy(b, &t, 8);
    std::memcpy(b + 8, &t, 8);
  }
  static const char* hex = "0123456789abcdef";
  std::string s;
  for (auto c : b) {
    s += hex[c >> 4];
    s += hex[c & 15];
  }
  return s;
}

bool is_loopback(const std::string& host) {
  return host == "localhost" || host == "::1" || host.rfind("127.", 0) == 0;
}

bool split_listen(const std::string& listen, std::string& host, int& port) {
  auto colon = listen.rfind(':');
  if (colon == std::string::npos) return false;
  host = listen.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  try {
    size_t used;
    port = std::stoi(listen.substr(colon + 1), &used);
    if (used != listen.size() - colon - 1 || port < 0 || port > 65535) return false;
  } catch (...) {
    return false;
  }
  return !host.empty();
}

// Which connection-thread this is: set while a shed connection is served inline.
thread_local bool t_shed = false;
// When the current request's headers were read (set by the pre-routing handler).
thread_local Clock::time_point t_start{};
// An answer decided before routing (shed 429, 401) for a request that carries a body: the POST
// wrapper reads and discards the body first, then answers (see Impl::post).
struct EarlyAnswer {
  int status = 0;
  std::string code, detail;
};
thread_local EarlyAnswer t_early{};

// A fixed pool with a bounded queue. When the queue is full the connection is served inline on
// the accepting thread with t_shed set: it is answered 429 (a request body is read and discarded
// first, so that closing the connection cannot reset it while the client is still sending) and
// closed. Accepting then pauses, leaving further clients in the kernel's listen backlog.
class BoundedPool : public httplib::TaskQueue {
 public:
  BoundedPool(size_t threads, size_t capacity, Metrics& metrics) : capacity_(capacity), metrics_(metrics) {
    for (size_t i = 0; i < threads; ++i) workers_.emplace_back([this] { work(); });
  }
  ~BoundedPool() override { shutdown(); }
  void enqueue(std::function<void()> fn) override {
    {
      std::unique_lock lock(mu_);
      if (jobs_.size() < capacity_ && !stop_) {
        jobs_.push_back(std::move(fn));
        cv_.notify_one();
        return;
      }
    }
    metrics_.add_overload("connections");
    t_shed = true;
    fn();
    t_shed = false;
  }
  void shutdown() override {
    {
      std::unique_lock lock(mu_);
      if (stop_) return;
      stop_ = true;
    }
    cv_.notify_all();
    for (auto& t : workers_) t.join();
  }

 private:
  void work() {
    for (;;) {
      std::function<void()> fn;
      {
        std::unique_lock lock(mu_);
        cv_.wait(lock, [&] { return stop_ || !jobs_.empty(); });
        if (stop_ && jobs_.empty()) return;
        fn = std::move(jobs_.front());
        jobs_.pop_front();
      }
      fn();
    }
  }
  size_t capacity_;
  Metrics& metrics_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> jobs_;
  std::vector<std::thread> workers_;
  bool stop_ = false;
};

// Admission for expensive requests: `slots` run at once, `queue` more may wait; beyond that, 429.
class WorkGate {
 public:
  WorkGate(size_t slots, size_t queue) : slots_(slots), queue_(queue) {}
  enum class Result { kOk, kFull, kTimeout };
  Result enter(std::chrono::milliseconds max_wait) {
    std::unique_lock lock(mu_);
    if (active_ < slots_) {
      active_++;
      return Result::kOk;
    }
    if (waiting_ >= queue_) return Result::kFull;
    waiting_++;
    bool ok = cv_.wait_for(lock, max_wait, [&] { return active_ < slots_; });
    waiting_--;
    if (!ok) return Result::kTimeout;
    active_++;
    return Result::kOk;
  }
  void leave() {
    {
      std::lock_guard lock(mu_);
      active_--;
    }
    cv_.notify_one();
  }
  std::pair<int64_t, int64_t> load() {
    std::lock_guard lock(mu_);
    return {static_cast<int64_t>(active_), static_cast<int64_t>(waiting_)};
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  size_t slots_, queue_, active_ = 0, waiting_ = 0;
};

// Lines in a text chunk (a last line without '\n' counts).
uint64_t count_lines(std::string_view text) {
  uint64_t n = static_cast<uint64_t>(std::count(text.begin(), text.end(), '\n'));
  if (!text.empty() && text.back() != '\n') n++;
  return n;
}

// A session's engine state in this process: the batches numbered 1..applied, in order. The
// store is the truth (counters, verdicts, closed); this is a cache that any replica can rebuild
// and bring up to date from the store (Impl::catch_up).
struct SessionState {
  SessionState(std::shared_ptr<const RuleSet> rules, ExecutionContext ctx)
      : session(std::move(rules), std::move(ctx)) {}
  std::mutex mu;
  std::string id;
  Session session;
  int64_t applied = 0;        // batches applied to `session`
  uint64_t observations = 0;  // observations and text lines applied
  std::atomic<int64_t> last_used_ns{0};
};

// Problem details (RFC 9457).
struct Problem {
  int status;
  std::string code;
  std::string detail;
  std::string extra = {};  // extra members, already JSON (",\"k\":v...")
};

const char* status_title(int status) {
  switch (status) {
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 408: return "Request Timeout";
    case 410: return "Gone";
    case 413: return "Content Too Large";
    case 415: return "Unsupported Media Type";
    case 422: return "Unprocessable Content";
    case 429: return "Too Many Requests";
    case 500: return "Internal Server Error";
    case 503: return "Service Unavailable";
    default: return "Error";
  }
}

std::string rejected_json(const std::vector<Rejection>& rejected, size_t max = 1000) {
  std::string out = "[";
  for (size_t i = 0; i < rejected.size() && i < max; ++i) {
    if (i) out += ',';
    out += "{\"index\":" + std::to_string(rejected[i].index) + ",\"reason\":" + json_quote(rejected[i].reason) + "}";
  }
  out += "]";
  return out;
}

}  // namespace

// ---------------------------------------------------------------------------------------------

struct Service::Impl {
  Config cfg;
  std::shared_ptr<const RuleSet> rules;
  RuleSetInfo rules_info;
  Metrics metrics;
  std::unique_ptr<Store> store;
  std::unique_ptr<httplib::Server> server;
  std::unique_ptr<WorkGate> gate;
  IngestOptions ingest_options;
  int bound_port = -1;
  int listen_fd = -1;  // the listening socket, to raise its backlog after bind
  std::string host;
  std::atomic<bool> stopping{false};
  std::thread janitor;
  std::mutex janitor_mu;
  std::condition_variable janitor_cv;
  std::atomic<uint64_t> request_counter{0};

  std::shared_mutex sessions_mu;
  std::unordered_map<std::string, std::shared_ptr<SessionState>> sessions;  // engine states in memory

  // ---- responses

  void problem(httplib::Response& res, const httplib::Request& req, const Problem& p) {
    res.status = p.status;
    std::string body = "{\"type\":\"https://attribution.dev/problems/" + p.code + "\",\"title\":" +
                       json_quote(status_title(p.status)) + ",\"status\":" + std::to_string(p.status) +
                       ",\"code\":" + json_quote(p.code) + ",\"detail\":" + json_quote(p.detail) +
                       ",\"instance\":" + json_quote(req.path) + p.extra + "}";
    res.set_content(body, "application/problem+json");
    if (p.status == 429 || p.status == 503)
      res.set_header("Retry-After", std::to_string(cfg.retry_after_s));
    if (p.status == 401) res.set_header("WWW-Authenticate", "Bearer realm=\"attribution\"");
  }

  // Whether a request body follows the headers (a Content-Length above 0, or chunked).
  static bool has_body(const httplib::Request& req) {
    return req.get_header_value("Transfer-Encoding").find("chunked") != std::string::npos ||
           (req.has_header("Content-Length") && req.get_header_value("Content-Length") != "0");
  }

  // Marks the connection for closing (used when the request body was not fully read).
  static void close_after(httplib::Response& res) { res.set_header("Connection", "close"); }

  // Reads and discards what is left of a request body (up to max_body_bytes, within
  // request_timeout_s of the request's start). An early answer (429, 401, 404, 410, 400) must not
  // leave unread bytes behind: closing a socket with unread data makes the kernel send a reset,
  // and a client still writing its body then gets a broken connection instead of the answer; on
  // a kept-alive connection the bytes would be parsed as the next request. Returns false (and
  // marks the connection for closing) when the body could not be drained.
  bool discard_body(const httplib::Request& req, const httplib::ContentReader& reader, httplib::Response& res) {
    if (!has_body(req)) return true;  // httplib would otherwise read a body-less POST until the peer closes
    auto deadline = (t_start == Clock::time_point{} ? Clock::now() : t_start) +
                    std::chrono::seconds(cfg.request_timeout_s);
    uint64_t total = 0;
    bool ok = reader([&](const char*, size_t len) {
      total += len;
      return total <= cfg.max_body_bytes && Clock::now() <= deadline;
    });
    if (!ok) close_after(res);
    return ok;
  }

  // ---- store answers

  // Writes the problem for a store status that is not a success. Returns true if it did.
  bool store_problem(StoreStatus st, const std::string& id, const httplib::Request& req, httplib::Response& res,
                     const char* what) {
    switch (st) {
      case StoreStatus::kOk:
      case StoreStatus::kReplayed:
        return false;
      case StoreStatus::kNotFound:
        forget(id);
        problem(res, req, {404, "session_not_found", "no session " + id});
        return true;
      case StoreStatus::kClosed:
        forget(id);
        problem(res, req, {410, "session_closed", "session " + id + " was closed"});
        return true;
      case StoreStatus::kBusy:
        metrics.add_overload("store");
        problem(res, req, {503, "store_busy", std::string("the store is busy; ") + what + "; retry later"});
        return true;
      case StoreStatus::kLimit:
      case StoreStatus::kError:
        break;
    }
    metrics.add_store_error();
    log(LogLevel::kError, "store failed", {{"session", id}, {"error", Store::last_error()}});
    problem(res, req, {503, "store_error", std::string("the store failed; ") + what});
    return true;
  }

  // The client's batch id (Idempotency-Key). False after writing a 400 for a malformed one.
  bool idempotency_key(const httplib::Request& req, httplib::Response& res, std::string& key) {
    key = req.get_header_value("Idempotency-Key");
    if (key.empty()) return true;
    bool ok = key.size() <= 128 && std::all_of(key.begin(), key.end(), [](char c) {
                return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == ':' || c == '-';
              });
    if (!ok) {
      problem(res, req, {400, "invalid_idempotency_key",
                         "Idempotency-Key: 1-128 characters of A-Z a-z 0-9 . _ : -"});
      return false;
    }
    return true;
  }

  static void replayed(httplib::Response& res) { res.set_header("Idempotent-Replayed", "true"); }

  // ---- session lookup

  void forget(const std::string& id) {
    std::unique_lock lock(sessions_mu);
    sessions.erase(id);
    metrics.set_sessions(static_cast<int64_t>(sessions.size()));
  }

  // The session's engine state: cached, or built from the store (any replica can serve any
  // session). Writes 404 / 410 / 503 and returns null when it cannot.
  std::shared_ptr<SessionState> find(const std::string& id, const httplib::Request& req,
                                     httplib::Response& res) {
    {
      std::shared_lock lock(sessions_mu);
      auto it = sessions.find(id);
      if (it != sessions.end()) {
        it->second->last_used_ns = now_ns();
        return it->second;
      }
    }
    StoredSession ss;
    auto st = store->get_session(id, ss);
    if (st == StoreStatus::kOk && ss.closed) st = StoreStatus::kClosed;
    if (store_problem(st, id, req, res, "the session could not be read")) return nullptr;
    auto ctx = context_from_json(ss.context_json);
    if (!ctx.ok()) {
      log(LogLevel::kError, "stored session has an unreadable context", {{"session", id}, {"error", ctx.error}});
      problem(res, req, {500, "internal", "session " + id + ": its stored context is unreadable"});
      return nullptr;
    }
    auto state = std::make_shared<SessionState>(rules, ctx.value);
    state->id = id;
    state->last_used_ns = now_ns();
    std::unique_lock lock(sessions_mu);
    auto [it, inserted] = sessions.emplace(id, state);
    metrics.set_sessions(static_cast<int64_t>(sessions.size()));
    return it->second;
  }

  // Applies the session's stored batches numbered above `s.applied`, in order (batches other
  // replicas stored, or whose commit this one could not confirm). Requires s.mu.
  StoreStatus catch_up(SessionState& s, std::string& decode_error) {
    std::vector<Observation> obs;
    std::vector<ConnectorReport> reps;
    return store->batches_after(s.id, s.applied, [&](int64_t no, BatchKind kind, std::string_view blob) {
      if (!decode_error.empty() || no != s.applied + 1) {
        if (decode_error.empty())
          decode_error = "batch " + std::to_string(no) + " follows batch " + std::to_string(s.applied);
        return;
      }
      if (kind == BatchKind::kObservations) {
        obs.clear();
        if (!decode_observations(blob, obs)) decode_error = "batch " + std::to_string(no) + " is unreadable";
        for (const auto& o : obs) s.session.ingest(o);
        s.observations += obs.size();
      } else if (kind == BatchKind::kText) {
        TextBatch tb;
        if (!decode_text(blob, tb)) decode_error = "batch " + std::to_string(no) + " is unreadable";
        else s.session.ingest_text(tb.source, tb.text, tb.first_line);
        s.observations += count_lines(tb.text);
      } else {
        reps.clear();
        if (!decode_reports(blob, reps)) decode_error = "batch " + std::to_string(no) + " is unreadable";
        for (const auto& c : reps) s.session.add_connector_report(c);
      }
      s.applied = no;
    });
  }

  // Stores one batch and, when it is the next one this process's engine state expects, applies
  // it (`apply`); otherwise catch_up applies it from the store later. Answers the request: the
  // acknowledgement (stored with the batch, returned again for a retried key) or a problem.
  // Returns true when a new batch was stored.
  bool store_batch(const httplib::Request& req, httplib::Response& res, SessionState& s, BatchKind kind,
                   std::string_view blob, uint64_t count, const std::string& key,
                   const std::function<std::string(uint64_t)>& make_ack, const std::function<void()>& apply) {
    std::lock_guard lock(s.mu);
    BatchAck ack;
    auto st = store->append_batch(s.id, kind, blob, count, key, now_ns(), cfg.max_observations_per_session, make_ack,
                                  ack);
    if (st == StoreStatus::kLimit) {
      metrics.add_discarded("session_limit", count);
      problem(res, req, {413, "session_observation_limit",
                         "the session holds " + std::to_string(ack.session_observations) + " observations; " +
                             std::to_string(count) + " more would exceed the limit of " +
                             std::to_string(cfg.max_observations_per_session)});
      return false;
    }
    if (store_problem(st, s.id, req, res, "nothing of the request was accepted")) return false;
    if (st == StoreStatus::kReplayed) replayed(res);
    if (st == StoreStatus::kOk && ack.batch_no == s.applied + 1) {
      apply();
      s.applied = ack.batch_no;
      if (kind != BatchKind::kReports) s.observations += count;
    }
    res.status = 200;
    res.set_content(ack.ack, "application/json");
    return st == StoreStatus::kOk;
  }

  // ---- body reading with limits

  // Reads the body through `reader` (or takes req.body). Returns false after writing a problem.
  bool read_body(const httplib::Request& req, httplib::Response& res,
                 const httplib::ContentReader* reader, std::string& body) {
    if (!reader) {
      body = req.body;
      return true;
    }
    auto deadline = Clock::now() + std::chrono::seconds(cfg.request_timeout_s);
    // httplib treats every POST as carrying content; without a length or chunking there is none.
    if (!req.has_header("Content-Length") &&
        req.get_header_value("Transfer-Encoding").find("chunked") == std::string::npos) {
      body.clear();
      return true;
    }
    if (req.has_header("Content-Length")) {
      uint64_t len = 0;
      try {
        len = std::stoull(req.get_header_value("Content-Length"));
      } catch (...) {
      }
      if (len > cfg.max_body_bytes) {
        close_after(res);
        metrics.add_discarded("too_long", 0);
        problem(res, req, {413, "body_too_large", "request body of " + std::to_string(len) +
                                                   " bytes exceeds the limit of " +
                                                   std::to_string(cfg.max_body_bytes) + " bytes"});
        return false;
      }
      body.reserve(len);
    }
    bool too_big = false, timed_out = false;
    bool ok = (*reader)([&](const char* data, size_t len) {
      if (body.size() + len > cfg.max_body_bytes) {
        too_big = true;
        return false;
      }
      if (Clock::now() > deadline) {
        timed_out = true;
        return false;
      }
      body.append(data, len);
      return true;
    });
    if (too_big || res.status == 413) {
      close_after(res);
      problem(res, req, {413, "body_too_large",
                         "request body exceeds the limit of " + std::to_string(cfg.max_body_bytes) + " bytes"});
      return false;
    }
    if (timed_out) {
      close_after(res);
      problem(res, req, {408, "request_timeout",
                         "request body not received within " + std::to_string(cfg.request_timeout_s) + " s"});
      return false;
    }
    if (!ok) {
      close_after(res);
      problem(res, req, {400, "body_read_error", "the request body could not be read (truncated or timed out)"});
      return false;
    }
    metrics.add_ingest_bytes(body.size());
    return true;
  }

  // RAII work slot.
  struct Slot {
    WorkGate* gate = nullptr;
    ~Slot() {
      if (gate) gate->leave();
    }
  };
  bool acquire(Slot& slot, const httplib::Request& req, httplib::Response& res) {
    auto r = gate->enter(std::chrono::seconds(cfg.request_timeout_s));
    if (r != WorkGate::Result::kOk) {
      metrics.add_overload("work");
      close_after(res);
      problem(res, req, {429, "overloaded",
                         r == WorkGate::Result::kFull ? "the work queue is full; retry later"
                                                      : "no work slot became free in time; retry later"});
      return false;
    }
    slot.gate = gate.get();
    return true;
  }

  // ---- ingest core

  void respond_ingest(const httplib::Request& req, httplib::Response& res, SessionState& s,
                      IngestResult&& r, const std::string& key) {
    if (!r.fatal.empty()) {
      metrics.add_discarded("invalid", 1);
      problem(res, req, {400, r.fatal_code, r.fatal});
      return;
    }
    metrics.add_discarded("invalid", r.rejected.size());
    if (r.observations.empty() && !r.rejected.empty()) {
      problem(res, req, {422, "invalid_observations",
                         std::to_string(r.rejected.size()) + " item(s) rejected, none accepted",
                         ",\"accepted\":0,\"rejected\":" + rejected_json(r.rejected)});
      return;
    }
    auto make_ack = [&](uint64_t total) {
      return "{\"accepted\":" + std::to_string(r.observations.size()) + ",\"rejected\":" + rejected_json(r.rejected) +
             ",\"rejected_count\":" + std::to_string(r.rejected.size()) +
             ",\"truncated\":" + std::to_string(r.truncated) + ",\"session_observations\":" + std::to_string(total) +
             "}";
    };
    if (r.observations.empty()) {  // nothing to store
      StoredSession ss;
      auto st = store->get_session(s.id, ss);
      if (st == StoreStatus::kOk && ss.closed) st = StoreStatus::kClosed;
      if (store_problem(st, s.id, req, res, "the session could not be read")) return;
      res.set_content(make_ack(ss.observations), "application/json");
      return;
    }
    bool stored = store_batch(req, res, s, BatchKind::kObservations, encode_observations(r.observations),
                              r.observations.size(), key, make_ack, [&] {
                                for (const auto& o : r.observations) s.session.ingest(o);
                              });
    if (!stored) return;
    std::map<std::string, uint64_t> by_kind;
    for (const auto& o : r.observations) by_kind[std::string(to_string(o.kind))]++;
    for (const auto& [k, n] : by_kind) metrics.add_ingested(k, n);
    metrics.add_truncated(r.truncated);
  }

  enum class IngestFormat { kObservations, kLoki, kPrometheus };

  void ingest(const httplib::Request& req, httplib::Response& res, const httplib::ContentReader* reader,
              IngestFormat format) {
    std::string key;
    if (!idempotency_key(req, res, key)) return;
    auto s = find(req.matches[1], req, res);
    if (!s) return;
    Slot slot;
    if (!acquire(slot, req, res)) return;
    std::string body;
    if (!read_body(req, res, reader, body)) return;
    IngestResult r;
    switch (format) {
      case IngestFormat::kObservations: r = parse_observations(body, ingest_options); break;
      case IngestFormat::kLoki: r = parse_loki(body, ingest_options, req.get_param_value("kind")); break;
      case IngestFormat::kPrometheus: r = parse_prometheus(body, ingest_options); break;
    }
    if (format == IngestFormat::kLoki && req.has_param("kind") &&
        !parse_observation_kind(req.get_param_value("kind"))) {
      problem(res, req, {400, "invalid_parameter", "kind: unknown observation kind"});
      return;
    }
    respond_ingest(req, res, *s, std::move(r), key);
  }

  void connector_reports(const httplib::Request& req, httplib::Response& res, const httplib::ContentReader* reader) {
    std::string key;
    if (!idempotency_key(req, res, key)) return;
    auto s = find(req.matches[1], req, res);
    if (!s) return;
    Slot slot;
    if (!acquire(slot, req, res)) return;
    std::string body;
    if (!read_body(req, res, reader, body)) return;
    auto r = parse_connector_reports(body);
    if (!r.fatal.empty()) {
      problem(res, req, {400, r.fatal_code, r.fatal});
      return;
    }
    if (r.reports.empty() && !r.rejected.empty()) {
      problem(res, req, {422, "invalid_connector_reports", "no connector report accepted",
                         ",\"accepted\":0,\"rejected\":" + rejected_json(r.rejected)});
      return;
    }
    std::string ack = "{\"accepted\":" + std::to_string(r.reports.size()) + ",\"rejected\":" +
                      rejected_json(r.rejected) + ",\"rejected_count\":" + std::to_string(r.rejected.size()) + "}";
    if (r.reports.empty()) {
      res.set_content(ack, "application/json");
      return;
    }
    store_batch(req, res, *s, BatchKind::kReports, encode_reports(r.reports), r.reports.size(), key,
                [&](uint64_t) { return ack; },
                [&] {
                  for (const auto& c : r.reports) s->session.add_connector_report(c);
                });
  }

  // Raw text of one source (a log file or a chunk of one), scanned by Session::ingest_text exactly
  // as the embedded engine scans bundle files: same TextSource defaults, same time look-back.
  void ingest_text(const httplib::Request& req, httplib::Response& res, const httplib::ContentReader* reader) {
    auto s = find(req.matches[1], req, res);
    if (!s) return;
    TextBatch tb;
    std::string err;
    auto param = [&](const char* k) { return req.has_param(k) ? req.get_param_value(k) : std::string(); };
    auto to_i64 = [&](const char* k, int64_t& out) {
      std::string v = param(k);
      if (v.empty()) return true;
      auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), out);
      if (ec != std::errc() || p != v.data() + v.size()) {
        err = std::string(k) + ": not an integer";
        return false;
      }
      return true;
    };
    tb.source.name = param("source");
    if (tb.source.name.empty()) err = "source: required (the file or stream name shown in evidence)";
    if (auto k = param("kind"); err.empty() && !k.empty()) {
      auto kind = parse_observation_kind(k);
      if (!kind) err = "kind: unknown observation kind";
      else tb.source.kind = *kind;
    }
    tb.source.node = param("node");
    tb.source.gpu = param("gpu");
    tb.source.note = param("note");
    int64_t rank = kNoRank, year = 0, first = 1;
    if (err.empty() && to_i64("rank", rank) && to_i64("utc_offset_s", tb.source.utc_offset_s) &&
        to_i64("default_year", year) && to_i64("first_line", first)) {
      if (rank < kNoRank || rank > 100000000) err = "rank: out of range";
      if (first < 1) err = "first_line: must be at least 1";
    }
    tb.source.rank = static_cast<int>(rank);
    tb.source.default_year = static_cast<int>(year);
    tb.first_line = static_cast<uint64_t>(first);
    if (auto bt = param("boot_time"); err.empty() && !bt.empty()) {
      auto t = parse_rfc3339(bt);
      if (!t.ok()) err = "boot_time: " + t.error;
      else tb.source.boot_time = t.value;
    }
    if (!err.empty()) {
      problem(res, req, {400, "invalid_parameter", err});
      return;
    }
    std::string key;
    if (!idempotency_key(req, res, key)) return;
    Slot slot;
    if (!acquire(slot, req, res)) return;
    if (!read_body(req, res, reader, tb.text)) return;
    uint64_t lines = count_lines(tb.text);
    auto make_ack = [&](uint64_t total) {
      return "{\"accepted\":" + std::to_string(lines) + ",\"rejected\":[],\"rejected_count\":0,\"truncated\":0" +
             ",\"session_observations\":" + std::to_string(total) + "}";
    };
    if (lines == 0) {
      StoredSession ss;
      auto st = store->get_session(s->id, ss);
      if (st == StoreStatus::kOk && ss.closed) st = StoreStatus::kClosed;
      if (store_problem(st, s->id, req, res, "the session could not be read")) return;
      res.set_content(make_ack(ss.observations), "application/json");
      return;
    }
    if (store_batch(req, res, *s, BatchKind::kText, encode_text(tb), lines, key, make_ack,
                    [&] { s->session.ingest_text(tb.source, tb.text, tb.first_line); }))
      metrics.add_ingested(std::string(to_string(tb.source.kind)), lines);
  }

  // ---- session lifecycle

  void create_session(const httplib::Request& req, httplib::Response& res, const httplib::ContentReader* reader) {
    std::string key;
    if (!idempotency_key(req, res, key)) return;
    std::string body;
    if (!read_body(req, res, reader, body)) return;
    if (body.find_first_not_of(" \t\r\n") == std::string::npos) {
      problem(res, req, {400, "invalid_body", "expected {\"context\": {...}}"});
      return;
    }
    auto one = parse_one_shot(body, ingest_options);
    if (!one.ingest.fatal.empty()) {
      int status = one.ingest.fatal_code == "invalid_context" ? 422 : 400;
      problem(res, req, {status, one.ingest.fatal_code, one.ingest.fatal});
      return;
    }
    auto ctx = context_from_json(one.context_json);
    if (!ctx.ok()) {
      problem(res, req, {422, "invalid_context", ctx.error});
      return;
    }
    if (ctx.value.id.empty()) {
      problem(res, req, {422, "invalid_context", "context.id: required"});
      return;
    }
    std::vector<StoredSession> none;
    uint64_t open_sessions = 0;
    if (store_problem(store->list_sessions(0, none, open_sessions), "", req, res, "the session was not created"))
      return;
    if (open_sessions >= cfg.max_sessions) {
      metrics.add_overload("sessions");
      problem(res, req, {429, "too_many_sessions",
                         "the store holds " + std::to_string(open_sessions) + " open sessions (limit " +
                             std::to_string(cfg.max_sessions) + "); close some or retry later"});
      return;
    }
    StoredSession ss;
    auto st = store->create_session(new_id(), one.context_json, now_ns(), key, ss);
    if (store_problem(st, "", req, res, "the session was not created")) return;
    if (st == StoreStatus::kReplayed) {
      if (ss.context_json != one.context_json) {
        problem(res, req, {422, "idempotency_key_reused",
                           "Idempotency-Key " + key + " created session " + ss.id + " with another context"});
        return;
      }
      replayed(res);
    } else {
      log(LogLevel::kInfo, "session created", {{"session", ss.id}, {"job_id", ctx.value.id}});
    }
    res.status = 201;
    res.set_header("Location", "/v2/sessions/" + ss.id);
    res.set_content("{\"id\":" + json_quote(ss.id) + ",\"context\":" + ss.context_json + "}", "application/json");
  }

  static std::string session_json(const StoredSession& s) {
    return "{\"id\":" + json_quote(s.id) + ",\"state\":\"open\",\"context\":" + s.context_json +
           ",\"created_at\":" + json_quote(format_rfc3339(s.created_ns)) +
           ",\"updated_at\":" + json_quote(format_rfc3339(s.updated_ns)) +
           ",\"observations\":" + std::to_string(s.observations) +
           ",\"connector_reports\":" + std::to_string(s.reports) + ",\"verdicts\":" + std::to_string(s.verdicts) + "}";
  }

  // The stored session, or false after writing 404 / 410 / 503.
  bool stored_session(const std::string& id, const httplib::Request& req, httplib::Response& res, StoredSession& ss) {
    auto st = store->get_session(id, ss);
    if (st == StoreStatus::kOk && ss.closed) st = StoreStatus::kClosed;
    return !store_problem(st, id, req, res, "the session could not be read");
  }

  void get_session(const httplib::Request& req, httplib::Response& res) {
    StoredSession ss;
    if (!stored_session(req.matches[1], req, res, ss)) return;
    res.set_content(session_json(ss), "application/json");
  }

  void list_sessions(const httplib::Request& req, httplib::Response& res) {
    size_t limit = 100;
    if (req.has_param("limit")) {
      try {
        limit = std::min<size_t>(std::stoul(req.get_param_value("limit")), 1000);
      } catch (...) {
        problem(res, req, {400, "invalid_parameter", "limit: not a number"});
        return;
      }
    }
    std::vector<StoredSession> all;
    uint64_t total = 0;
    if (store_problem(store->list_sessions(limit, all, total), "", req, res, "sessions could not be listed")) return;
    std::string out = "{\"sessions\":[";
    for (size_t i = 0; i < all.size(); ++i) {
      if (i) out += ',';
      out += session_json(all[i]);
    }
    out += "],\"total\":" + std::to_string(total) + "}";
    res.set_content(out, "application/json");
  }

  // Attributes the session over every batch stored for it (catching up on batches other
  // replicas stored) and stores the verdict before answering. With an Idempotency-Key the
  // verdict stored under it the first time is returned instead of attributing again.
  void attribute(const httplib::Request& req, httplib::Response& res) {
    std::string key;
    if (!idempotency_key(req, res, key)) return;
    auto s = find(req.matches[1], req, res);
    if (!s) return;
    Slot slot;
    if (!acquire(slot, req, res)) return;
    std::lock_guard lock(s->mu);
    StoredVerdict sv;
    if (!key.empty()) {
      auto st = store->find_verdict(s->id, key, sv);
      if (st == StoreStatus::kOk) {
        replayed(res);
        res.set_header("X-Attribution-Verdict-Seq", std::to_string(sv.seq));
        res.set_content(sv.json, "application/json");
        return;
      }
      if (st != StoreStatus::kNotFound && store_problem(st, s->id, req, res, "no verdict was computed")) return;
    }
    std::string decode_error;
    auto st = catch_up(*s, decode_error);
    if (!decode_error.empty()) {
      forget(s->id);
      log(LogLevel::kError, "stored batches are unreadable", {{"session", s->id}, {"error", decode_error}});
      problem(res, req, {500, "internal", "session " + s->id + ": " + decode_error});
      return;
    }
    if (store_problem(st, s->id, req, res, "no verdict was computed")) return;
    Verdict v = s->session.attribute();
    st = store->add_verdict(s->id, key, now_ns(), s->observations, v.json, sv);
    if (store_problem(st, s->id, req, res, "the verdict was not stored")) return;
    if (st == StoreStatus::kReplayed) {
      replayed(res);
    } else {
      metrics.add_attribution(v.outcome);
      log(LogLevel::kInfo, "attributed",
          {{"session", s->id}, {"outcome", v.outcome}, {"quality", v.quality},
           {"observations", std::to_string(s->observations)}});
    }
    res.set_header("X-Attribution-Verdict-Seq", std::to_string(sv.seq));
    res.set_content(sv.json, "application/json");
  }

  void verdicts(const httplib::Request& req, httplib::Response& res, bool latest) {
    std::string id = req.matches[1];
    StoredSession ss;
    if (!stored_session(id, req, res, ss)) return;
    std::vector<StoredVerdict> all;
    if (store_problem(store->verdicts(id, all), id, req, res, "verdicts could not be read")) return;
    if (latest) {
      if (all.empty()) {
        problem(res, req, {404, "no_verdict", "session " + id + " has not been attributed yet"});
        return;
      }
      res.set_header("X-Attribution-Verdict-Seq", std::to_string(all.back().seq));
      res.set_content(all.back().json, "application/json");
      return;
    }
    std::string out = "{\"verdicts\":[";
    for (size_t i = 0; i < all.size(); ++i) {
      if (i) out += ',';
      out += "{\"seq\":" + std::to_string(all[i].seq) + ",\"created_at\":" +
             json_quote(format_rfc3339(all[i].created_ns)) + ",\"observations\":" +
             std::to_string(all[i].observations) + ",\"verdict\":" + all[i].json + "}";
    }
    out += "]}";
    res.set_content(out, "application/json");
  }

  void delete_session(const httplib::Request& req, httplib::Response& res) {
    std::string id = req.matches[1];
    auto st = store->close_session(id, now_ns());
    if (store_problem(st, id, req, res, "the session was not closed")) return;
    forget(id);
    log(LogLevel::kInfo, "session closed", {{"session", id}, {"reason", "client"}});
    res.status = 204;
  }

  // ---- one-shot

  void one_shot(const httplib::Request& req, httplib::Response& res, const httplib::ContentReader* reader) {
    Slot slot;
    if (!acquire(slot, req, res)) return;
    std::string body;
    if (!read_body(req, res, reader, body)) return;
    if (body.find_first_not_of(" \t\r\n") == std::string::npos) {
      problem(res, req, {400, "invalid_body", "expected {\"context\": {...}, \"observations\": [...]}"});
      return;
    }
    auto one = parse_one_shot(body, ingest_options);
    if (!one.ingest.fatal.empty()) {
      int status = one.ingest.fatal_code == "invalid_context" ? 422 : 400;
      problem(res, req, {status, one.ingest.fatal_code, one.ingest.fatal});
      return;
    }
    if (!one.reports.fatal.empty()) {
      problem(res, req, {400, one.reports.fatal_code, "connector_reports: " + one.reports.fatal});
      return;
    }
    auto ctx = context_from_json(one.context_json);
    if (!ctx.ok()) {
      problem(res, req, {422, "invalid_context", ctx.error});
      return;
    }
    if (!one.ingest.rejected.empty()) {
      metrics.add_discarded("invalid", one.ingest.rejected.size());
      problem(res, req, {422, "invalid_observations",
                         std::to_string(one.ingest.rejected.size()) +
                             " observation(s) rejected; the one-shot endpoint attributes only complete input",
                         ",\"accepted\":" + std::to_string(one.ingest.observations.size()) +
                             ",\"rejected\":" + rejected_json(one.ingest.rejected)});
      return;
    }
    if (!one.reports.rejected.empty()) {
      problem(res, req, {422, "invalid_connector_reports", "connector report(s) rejected",
                         ",\"rejected\":" + rejected_json(one.reports.rejected)});
      return;
    }
    Session session(rules, ctx.value);
    for (const auto& o : one.ingest.observations) session.ingest(o);
    for (const auto& c : one.reports.reports) session.add_connector_report(c);
    auto v = session.attribute();
    std::map<std::string, uint64_t> by_kind;
    for (const auto& o : one.ingest.observations) by_kind[std::string(to_string(o.kind))]++;
    for (const auto& [k, n] : by_kind) metrics.add_ingested(k, n);
    metrics.add_truncated(one.ingest.truncated);
    metrics.add_attribution(v.outcome);
    res.set_content(v.json, "application/json");
  }

  // ---- probes

  void readyz(const httplib::Request& req, httplib::Response& res) {
    bool rules_ok = rules != nullptr;
    bool store_ok = store && store->writable();
    if (rules_ok && store_ok && !stopping) {
      res.set_content("{\"status\":\"ready\",\"checks\":{\"rules\":\"ok\",\"store\":\"ok\"},\"rules_digest\":" +
                          json_quote(rules_info.digest) + "}",
                      "application/json");
      return;
    }
    problem(res, req, {503, "not_ready",
                       std::string("not ready:") + (rules_ok ? "" : " rules not loaded;") +
                           (store_ok ? "" : " store not writable;") + (stopping ? " shutting down;" : ""),
                       std::string(",\"checks\":{\"rules\":\"") + (rules_ok ? "ok" : "failed") +
                           "\",\"store\":\"" + (store_ok ? "ok" : "failed") + "\"}"});
  }

  // ---- janitor

  // Closes sessions idle for session_ttl_s (in the store: with several replicas, whichever runs
  // first), purges old tombstones, and drops engine states unused for a while from this
  // process's memory (they are rebuilt from the store when needed).
  void janitor_loop() {
    auto period = std::chrono::seconds(std::clamp<uint64_t>(cfg.session_ttl_s / 4, 1, 60));
    const int64_t keep_cached_ns = static_cast<int64_t>(std::min<uint64_t>(cfg.session_ttl_s, 300)) * 1000000000LL;
    while (!stopping) {
      {
        std::unique_lock lock(janitor_mu);
        janitor_cv.wait_for(lock, period, [&] { return stopping.load(); });
      }
      if (stopping) break;
      int64_t now = now_ns();
      int64_t cutoff = now - static_cast<int64_t>(cfg.session_ttl_s) * 1000000000LL;
      std::vector<std::string> expired;
      store->close_idle(cutoff, expired);
      for (const auto& id : expired) {
        forget(id);
        log(LogLevel::kInfo, "session closed", {{"session", id}, {"reason", "ttl"}});
      }
      store->purge_closed(cutoff);
      {
        std::unique_lock lock(sessions_mu);
        for (auto it = sessions.begin(); it != sessions.end();) {
          if (it->second.use_count() == 1 && it->second->last_used_ns.load() < now - keep_cached_ns)
            it = sessions.erase(it);
          else
            ++it;
        }
        metrics.set_sessions(static_cast<int64_t>(sessions.size()));
      }
      auto [active, waiting] = gate->load();
      metrics.set_work(active, waiting);
    }
  }

  // ---- routing

  using Body = const httplib::ContentReader*;
  // Every POST route. With a body: an early answer decided before routing is sent only after the
  // body is drained, and a handler that answers without reading the body (404, 410, 400, 429)
  // has it drained afterwards, so no answer is lost to a connection reset. A body larger than
  // max_body_bytes is not drained (413 closes the connection).
  template <class Fn>
  void post(const std::string& pattern, Fn fn) {
    server->Post(pattern, [this, fn](const httplib::Request& req, httplib::Response& res,
                                     const httplib::ContentReader& reader) {
      bool consumed = false;
      httplib::ContentReader tracked(
          [&reader, &consumed](httplib::ContentReceiver receiver) {
            consumed = true;
            return reader(std::move(receiver));
          },
          reader.multipart_reader_);
      if (t_early.status != 0) {
        EarlyAnswer early = std::move(t_early);
        t_early = {};
        discard_body(req, reader, res);
        close_after(res);
        problem(res, req, {early.status, early.code, early.detail});
        return;
      }
      (this->*fn)(req, res, &tracked);
      if (!consumed && res.status != 413) discard_body(req, reader, res);
    });
    server->Post(pattern, [this, fn](const httplib::Request& req, httplib::Response& res) {
      (this->*fn)(req, res, nullptr);
    });
  }

  static std::string route_of(const httplib::Request& req) {
    static const std::vector<std::pair<std::regex, std::string>> routes = [] {
      std::vector<std::pair<std::regex, std::string>> r;
      for (const char* p : {"/v2/sessions/{id}/observations", "/v2/sessions/{id}/connector_reports",
                            "/v2/sessions/{id}/attribute", "/v2/sessions/{id}/verdicts/latest",
                            "/v2/sessions/{id}/verdicts", "/v2/sessions/{id}/loki/api/v1/push",
                            "/v2/sessions/{id}/prometheus_metrics", "/v2/sessions/{id}/text", "/v2/sessions/{id}"}) {
        std::string re = p;
        re.replace(re.find("{id}"), 4, "[^/]+");
        r.emplace_back(std::regex(re), p);
      }
      return r;
    }();
    const std::string& path = req.path;
    for (const char* fixed : {"/v2/sessions", "/v2/attributions", "/v2/healthz", "/v2/livez", "/v2/readyz",
                              "/v2/openapi.json", "/v2/version", "/metrics", "/healthz", "/livez", "/readyz"})
      if (path == fixed) return fixed;
    if (path.rfind("/v2/sessions/", 0) == 0)
      for (const auto& [re, name] : routes)
        if (std::regex_match(path, re)) return name;
    return "unmatched";
  }

  bool is_public(const std::string& path) {
    return path == "/v2/healthz" || path == "/v2/livez" || path == "/v2/readyz" || path == "/healthz" ||
           path == "/livez" || path == "/readyz" || path == "/v2/openapi.json";
  }

  void setup_routes() {
    const std::string id = "([A-Za-z0-9_-]{1,64})";
    server->set_tcp_nodelay(true);
    server->set_payload_max_length(cfg.max_body_bytes);
    server->set_read_timeout(static_cast<time_t>(cfg.read_timeout_s), 0);
    server->set_write_timeout(static_cast<time_t>(cfg.read_timeout_s), 0);
    server->set_keep_alive_max_count(1000);
    server->set_keep_alive_timeout(5);
    size_t threads = static_cast<size_t>(cfg.threads);
    size_t queue = static_cast<size_t>(cfg.connection_queue);
    server->new_task_queue = [this, threads, queue] { return new BoundedPool(threads, queue, metrics); };

    server->set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
      t_start = Clock::now();
      t_early = {};
      // A request with a body on a POST route is answered by the route's wrapper once the body
      // is drained (see post()); anything else is answered here.
      bool body_follows = req.method == "POST" && has_body(req);
      if (t_shed) {
        if (body_follows) {
          t_early = {429, "overloaded", "too many connections are waiting; retry later"};
          return httplib::Server::HandlerResponse::Unhandled;
        }
        close_after(res);
        problem(res, req, {429, "overloaded", "too many connections are waiting; retry later"});
        return httplib::Server::HandlerResponse::Handled;
      }
      if (!cfg.auth_token.empty() && !is_public(req.path)) {
        std::string auth = req.get_header_value("Authorization");
        const std::string prefix = "Bearer ";
        bool ok = auth.size() > prefix.size() && auth.compare(0, prefix.size(), prefix) == 0 &&
                  secret_equal(std::string_view(auth).substr(prefix.size()), cfg.auth_token);
        if (!ok) {
          if (body_follows) {
            t_early = {401, "unauthorized", "a valid bearer token is required"};
            return httplib::Server::HandlerResponse::Unhandled;
          }
          close_after(res);
          problem(res, req, {401, "unauthorized", "a valid bearer token is required"});
          return httplib::Server::HandlerResponse::Handled;
        }
      }
      return httplib::Server::HandlerResponse::Unhandled;
    });

    // Every response: request id, metrics, access log; empty error bodies become problem+json.
    server->set_error_handler(httplib::Server::HandlerWithResponse([this](const httplib::Request& req, httplib::Response& res) {
      if (!res.body.empty()) return httplib::Server::HandlerResponse::Unhandled;
      if (t_early.status != 0) {  // a shed or unauthorized POST to no route: its body is read by now
        EarlyAnswer early = std::move(t_early);
        t_early = {};
        close_after(res);
        problem(res, req, {early.status, early.code, early.detail});
        return httplib::Server::HandlerResponse::Handled;
      }
      int status = res.status;
      std::string code = status == 404 ? "not_found" : status == 413 ? "body_too_large" : status == 400 ? "bad_request"
                       : status == 405 ? "method_not_allowed" : status == 500 ? "internal" : "error";
      std::string detail = status == 404 ? "no such route: " + req.method + " " + req.path : status_title(status);
      problem(res, req, {status, code, detail});
      return httplib::Server::HandlerResponse::Handled;
    }));
    server->set_exception_handler([this](const httplib::Request& req, httplib::Response& res, std::exception_ptr ep) {
      std::string what = "unknown exception";
      try {
        if (ep) std::rethrow_exception(ep);
      } catch (const std::exception& e) {
        what = e.what();
      } catch (...) {
      }
      log(LogLevel::kError, "handler exception", {{"path", req.path}, {"error", what}});
      res.body.clear();
      problem(res, req, {500, "internal", "internal error"});
    });
    server->set_logger([this](const httplib::Request& req, const httplib::Response& res) {
      double secs = 0;
      if (t_start != Clock::time_point{}) secs = std::chrono::duration<double>(Clock::now() - t_start).count();
      t_start = {};
      std::string route = route_of(req);
      metrics.observe_request(route, res.status, secs);
      auto [active, waiting] = gate->load();
      metrics.set_work(active, waiting);
      if (log_enabled(LogLevel::kDebug) || res.status >= 500)
        log(res.status >= 500 ? LogLevel::kWarn : LogLevel::kDebug, "request",
            {{"method", req.method}, {"route", route}, {"status", std::to_string(res.status)},
             {"duration_ms", std::to_string(secs * 1000)}, {"request_id", req.get_header_value("X-Request-Id")}});
    });

    server->Get("/v2/healthz", [](const httplib::Request&, httplib::Response& res) {
      res.set_content("{\"status\":\"ok\"}", "application/json");
    });
    server->Get("/v2/livez", [](const httplib::Request&, httplib::Response& res) {
      res.set_content("{\"status\":\"ok\"}", "application/json");
    });
    server->Get("/healthz", [](const httplib::Request&, httplib::Response& res) {
      res.set_content("{\"status\":\"ok\"}", "application/json");
    });
    server->Get("/v2/readyz", [this](const httplib::Request& req, httplib::Response& res) { readyz(req, res); });
    server->Get("/readyz", [this](const httplib::Request& req, httplib::Response& res) { readyz(req, res); });
    server->Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
      res.set_content(metrics.render(std::string(engine_version())), "text/plain; version=0.0.4; charset=utf-8");
    });
    server->Get("/v2/openapi.json", [](const httplib::Request&, httplib::Response& res) {
      res.set_content(openapi_json(), "application/json");
    });
    server->Get("/v2/version", [this](const httplib::Request&, httplib::Response& res) {
      res.set_content("{\"version\":" + json_quote(engine_version()) + ",\"rules_digest\":" +
                          json_quote(rules_info.digest) + "}",
                      "application/json");
    });

    post("/v2/sessions", &Impl::create_session);
    server->Get("/v2/sessions", [this](const httplib::Request& req, httplib::Response& res) { list_sessions(req, res); });
    server->Get("/v2/sessions/" + id, [this](const httplib::Request& req, httplib::Response& res) { get_session(req, res); });
    server->Delete("/v2/sessions/" + id, [this](const httplib::Request& req, httplib::Response& res) { delete_session(req, res); });
    post("/v2/sessions/" + id + "/observations", &Impl::ingest_observations);
    post("/v2/sessions/" + id + "/loki/api/v1/push", &Impl::ingest_loki);
    post("/v2/sessions/" + id + "/prometheus_metrics", &Impl::ingest_prometheus);
    post("/v2/sessions/" + id + "/connector_reports", &Impl::connector_reports);
    post("/v2/sessions/" + id + "/text", &Impl::ingest_text);
    post("/v2/sessions/" + id + "/attribute", &Impl::attribute_post);
    server->Get("/v2/sessions/" + id + "/verdicts", [this](const httplib::Request& req, httplib::Response& res) { verdicts(req, res, false); });
    server->Get("/v2/sessions/" + id + "/verdicts/latest", [this](const httplib::Request& req, httplib::Response& res) { verdicts(req, res, true); });
    post("/v2/attributions", &Impl::one_shot);
  }

  void ingest_observations(const httplib::Request& req, httplib::Response& res, Body b) { ingest(req, res, b, IngestFormat::kObservations); }
  void ingest_loki(const httplib::Request& req, httplib::Response& res, Body b) { ingest(req, res, b, IngestFormat::kLoki); }
  void ingest_prometheus(const httplib::Request& req, httplib::Response& res, Body b) { ingest(req, res, b, IngestFormat::kPrometheus); }
  void attribute_post(const httplib::Request& req, httplib::Response& res, Body b) {
    // The body is ignored (reserved for options); drain it within limits so keep-alive stays valid.
    std::string body;
    if (b && !read_body(req, res, b, body)) return;
    attribute(req, res);
  }
};

Service::Service(Config config, std::shared_ptr<const RuleSet> rules) : impl_(std::make_unique<Impl>()) {
  impl_->cfg = std::move(config);
  impl_->rules = std::move(rules);
  if (impl_->rules) impl_->rules_info = describe(*impl_->rules);
  impl_->ingest_options.max_line_bytes = impl_->cfg.max_line_bytes;
  impl_->ingest_options.max_items = impl_->cfg.max_observations_per_session;
  impl_->gate = std::make_unique<WorkGate>(static_cast<size_t>(std::max(1, impl_->cfg.work_concurrency)),
                                           static_cast<size_t>(impl_->cfg.work_queue));
}

Service::~Service() { stop(); }

bool Service::init(std::string& error) {
  auto& d = *impl_;
  int port = 0;
  if (!split_listen(d.cfg.listen, d.host, port)) {
    error = "listen: expected HOST:PORT, got \"" + d.cfg.listen + "\"";
    return false;
  }
  if (!d.cfg.auth_token_file.empty() && d.cfg.auth_token.empty()) {
    std::ifstream in(d.cfg.auth_token_file);
    if (!in) {
      error = "auth_token_file: cannot read " + d.cfg.auth_token_file;
      return false;
    }
    std::getline(in, d.cfg.auth_token);
    while (!d.cfg.auth_token.empty() && isspace(static_cast<unsigned char>(d.cfg.auth_token.back())))
      d.cfg.auth_token.pop_back();
  }
  if (!is_loopback(d.host) && d.cfg.auth_token.empty()) {
    error = "refusing to listen on non-loopback address " + d.host +
            " without a bearer token (set --auth-token-file or ATTRIBUTION_AUTH_TOKEN)";
    return false;
  }
  if (d.cfg.tls_cert.empty() != d.cfg.tls_key.empty()) {
    error = "tls_cert and tls_key must be given together";
    return false;
  }
  std::error_code ec;
  if (d.cfg.store.empty()) fs::create_directories(d.cfg.data_dir, ec);  // the default SQLite store's home
  if (ec) {
    error = "data_dir " + d.cfg.data_dir + ": " + ec.message();
    return false;
  }
  std::string db_error;
  StoreOptions store_options;
  store_options.pool_size = static_cast<size_t>(std::max(1, d.cfg.store_pool_size));
  store_options.pool_wait_ms = d.cfg.store_pool_wait_ms;
  // A PostgreSQL store that is not up yet (a replica starting before its database, as a
  // Deployment and its database come up together) is retried with backoff for
  // store_connect_timeout_s; SQLite errors are local and fail at once.
  const bool remote_store = d.cfg.store.rfind("postgres://", 0) == 0 || d.cfg.store.rfind("postgresql://", 0) == 0;
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(std::max(0, d.cfg.store_connect_timeout_s));
  auto backoff = std::chrono::milliseconds(250);
  for (int attempt = 1;; ++attempt) {
    d.store = Store::open(d.cfg.store, (fs::path(d.cfg.data_dir) / "sessions.db").string(), store_options, db_error);
    if (d.store || !remote_store || std::chrono::steady_clock::now() + backoff > give_up) break;
    log(LogLevel::kWarn, "store not reachable yet, retrying",
        {{"attempt", std::to_string(attempt)}, {"retry_in_ms", std::to_string(backoff.count())}, {"error", db_error}});
    std::this_thread::sleep_for(backoff);
    backoff = std::min(backoff * 2, std::chrono::milliseconds(5000));
  }
  if (!d.store) {
    error = "store: " + db_error;
    return false;
  }
  if (d.rules) d.metrics.set_rules(d.rules_info.digest, d.rules_info.files, d.rules_info.extractors);

  if (!d.cfg.tls_cert.empty()) {
    auto ssl = std::make_unique<httplib::SSLServer>(d.cfg.tls_cert.c_str(), d.cfg.tls_key.c_str());
    if (!ssl->is_valid()) {
      error = "TLS: cannot load certificate " + d.cfg.tls_cert + " / key " + d.cfg.tls_key;
      return false;
    }
    d.server = std::move(ssl);
  } else {
    d.server = std::make_unique<httplib::Server>();
  }
  d.setup_routes();
  // Debian's cpp-httplib 0.11.4 listens with a backlog of 5 (CPPHTTPLIB_LISTEN_BACKLOG is compiled
  // into the shared library). A burst of more new connections than that overflows the accept
  // queue: the kernel drops the clients' handshake ACKs (TcpExtListenOverflows), the clients
  // believe they are connected and send their request into a connection the server never
  // accepted, and after their read timeout they report a closed connection with no response. Keep
  // the listening socket and raise its backlog to the system maximum once bound.
  d.server->set_socket_options([&d](socket_t sock) {
    httplib::default_socket_options(sock);
    d.listen_fd = static_cast<int>(sock);
  });
  if (port == 0) {
    d.bound_port = d.server->bind_to_any_port(d.host);
    if (d.bound_port <= 0) {
      error = "cannot bind " + d.host + ":0";
      return false;
    }
  } else {
    if (!d.server->bind_to_port(d.host, port)) {
      error = "cannot bind " + d.cfg.listen;
      return false;
    }
    d.bound_port = port;
  }
  if (d.listen_fd >= 0 && ::listen(d.listen_fd, SOMAXCONN) != 0) {
    log(LogLevel::kWarn, "listen backlog not raised", {{"errno", std::to_string(errno)}});
  }
  if (!d.cfg.port_file.empty()) {
    std::ofstream pf(d.cfg.port_file + ".tmp");
    pf << d.bound_port << "\n";
    pf.close();
    fs::rename(d.cfg.port_file + ".tmp", d.cfg.port_file, ec);
  }
  d.janitor = std::thread([&d] { d.janitor_loop(); });
  log(LogLevel::kInfo, "listening",
      {{"address", d.host + ":" + std::to_string(d.bound_port)},
       {"tls", d.cfg.tls_cert.empty() ? "off" : "on"},
       {"auth", d.cfg.auth_token.empty() ? "off" : "bearer"},
       {"store", d.store->describe()},
       {"rules_digest", d.rules_info.digest}});
  return true;
}

int Service::port() const { return impl_->bound_port; }

bool Service::run() { return impl_->server->listen_after_bind(); }

void Service::stop() {
  auto& d = *impl_;
  if (d.stopping.exchange(true)) return;
  if (d.server) d.server->stop();
  d.janitor_cv.notify_all();
  if (d.janitor.joinable()) d.janitor.join();
}

}  // namespace attribution::service
