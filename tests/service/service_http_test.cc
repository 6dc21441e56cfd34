// HTTP tests of attribution-service against a real listener on loopback (port 0): every endpoint,
// every error code, byte identity with the embedded engine, restart durability, slow bodies,
// overload, concurrent clients, bearer auth.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <mutex>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "attribution/codec.h"
#include "attribution/engine.h"
#include "config.h"
#include "attribution/edge/rules_dir.h"
#include "log.h"
#include "server.h"
#include "store.h"

namespace attribution::service {
namespace {
namespace fs = std::filesystem;

std::shared_ptr<const RuleSet> rules() {
  static std::shared_ptr<const RuleSet> r = [] {
    std::vector<std::string> errors;
    auto loaded = edge::load_rules_from(std::string(ATTRIBUTION_SOURCE_DIR) + "/rules", errors);
    if (!loaded) ADD_FAILURE() << (errors.empty() ? "rules failed to load" : errors.front());
    return loaded;
  }();
  return r;
}

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// A sample bundle turned into observations, one per line, as a client would send them.
struct Workload {
  ExecutionContext context;
  std::string context_json;
  std::vector<Observation> observations;
};

const Workload& sample() {
  static Workload w = [] {
    Workload out;
    fs::path dir = fs::path(ATTRIBUTION_SOURCE_DIR) / "samples/xid79-nccl-watchdog-cascade";
    auto m = parse_bundle_manifest(read_file(dir / "workload.yaml"), "workload.yaml");
    if (!m.ok()) {
      ADD_FAILURE() << m.error;
      return out;
    }
    out.context = m.value.context;
    out.context_json = context_to_json(out.context);
    for (const auto& src : m.value.sources) {
      std::ifstream in(dir / src.path, std::ios::binary);
      std::string line;
      uint64_t n = 0;
      while (std::getline(in, line)) {
        Observation o;
        o.kind = src.defaults.kind;
        o.node = src.defaults.node;
        o.rank = src.defaults.rank;
        o.source = {src.path, ++n};
        o.text = line;
        out.observations.push_back(std::move(o));
      }
    }
    return out;
  }();
  return w;
}

std::string embedded_verdict(const std::vector<Observation>& obs) {
  Session s(rules(), sample().context);
  for (const auto& o : obs) s.ingest(o);
  return s.attribute().json;
}

std::string ndjson(const std::vector<Observation>& obs, size_t from, size_t to) {
  std::string out;
  for (size_t i = from; i < to && i < obs.size(); ++i) out += observation_to_json(obs[i]) + "\n";
  return out;
}

std::string json_array(const std::vector<Observation>& obs, size_t from, size_t to) {
  std::string out = "[";
  for (size_t i = from; i < to && i < obs.size(); ++i) {
    if (i != from) out += ",";
    out += observation_to_json(obs[i]);
  }
  return out + "]";
}

// Waits for a state, not for a time: polls `done` every 10 ms until it holds or `limit` (generous,
// so that a loaded CI machine only makes the test slower, never red) has passed.
template <typename F>
bool wait_until(F done, std::chrono::seconds limit = std::chrono::seconds(120)) {
  auto deadline = std::chrono::steady_clock::now() + limit;
  while (!done()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return true;
}

// The value of an unlabelled gauge in a /metrics body, or -1.
long long metric_value(const std::string& body, const std::string& name) {
  std::istringstream in(body);
  std::string line;
  while (std::getline(in, line))
    if (line.rfind(name + " ", 0) == 0) return std::stoll(line.substr(name.size() + 1));
  return -1;
}

class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/attribution-svc-test-XXXXXX";
    path_ = mkdtemp(tmpl);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

class Running {
 public:
  Running(Config cfg) {
    cfg.listen = "127.0.0.1:0";
    cfg.log_level = "error";
    set_log_level(LogLevel::kError);
    svc_ = std::make_unique<Service>(cfg, rules());
    if (!svc_->init(error_)) return;
    thread_ = std::thread([this] { svc_->run(); });
    // Up when its readiness probe says so (rules loaded, store open), however long a loaded
    // machine takes to get there.
    httplib::Client c("127.0.0.1", svc_->port());
    if (!wait_until([&] {
          auto r = c.Get("/v2/readyz");
          return r && r->status == 200;
        }))
      error_ = "service did not become ready";
  }
  ~Running() {
    svc_->stop();
    if (thread_.joinable()) thread_.join();
  }
  int port() const { return svc_->port(); }
  const std::string& error() const { return error_; }
  httplib::Client client() const {
    httplib::Client c("127.0.0.1", port());
    c.set_read_timeout(60, 0);
    return c;
  }

 private:
  std::unique_ptr<Service> svc_;
  std::thread thread_;
  std::string error_;
};

Config base_config(const TempDir& dir) {
  Config c;
  c.data_dir = dir.path();
  c.work_concurrency = 4;
  c.session_ttl_s = 3600;
  return c;
}

std::string create_session(httplib::Client& c, const std::string& context_json) {
  auto r = c.Post("/v2/sessions", "{\"context\":" + context_json + "}", "application/json");
  if (!r || r->status != 201) {
    ADD_FAILURE() << "create failed: " << (r ? r->body : "no response");
    return {};
  }
  auto p = r->body.find("\"id\":\"");
  return r->body.substr(p + 6, 32);
}

void expect_problem(const httplib::Result& r, int status, const std::string& code) {
  ASSERT_TRUE(r) << "no response";
  EXPECT_EQ(r->status, status) << r->body;
  EXPECT_EQ(r->get_header_value("Content-Type"), "application/problem+json") << r->body;
  EXPECT_NE(r->body.find("\"code\":\"" + code + "\""), std::string::npos) << r->body;
  EXPECT_NE(r->body.find("\"status\":" + std::to_string(status)), std::string::npos) << r->body;
}

TEST(ServiceHttp, OperationsEndpoints) {
  TempDir dir;
  Running svc(base_config(dir));
  ASSERT_EQ(svc.error(), "");
  auto c = svc.client();
  auto h = c.Get("/v2/healthz");
  ASSERT_TRUE(h);
  EXPECT_EQ(h->status, 200);
  auto r = c.Get("/v2/readyz");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_NE(r->body.find("sha256:"), std::string::npos);
  auto o = c.Get("/v2/openapi.json");
  ASSERT_TRUE(o);
  EXPECT_EQ(o->status, 200);
  EXPECT_NE(o->body.find("\"/v2/sessions/{id}/observations\""), std::string::npos);
  auto v = c.Get("/v2/version");
  ASSERT_TRUE(v);
  EXPECT_NE(v->body.find(std::string(engine_version())), std::string::npos);
  auto m = c.Get("/metrics");
  ASSERT_TRUE(m);
  EXPECT_EQ(m->status, 200);
  EXPECT_NE(m->get_header_value("Content-Type").find("version=0.0.4"), std::string::npos);
  EXPECT_NE(m->body.find("attribution_http_requests_total{route=\"/v2/healthz\",code=\"200\"}"), std::string::npos);
  EXPECT_NE(m->body.find("attribution_rules_info{sha256=\"sha256:"), std::string::npos);
  expect_problem(c.Get("/v2/nope"), 404, "not_found");
}

TEST(ServiceHttp, SessionVerdictIsByteIdenticalToEmbeddedEngine) {
  const auto& w = sample();
  ASSERT_GT(w.observations.size(), 100u);
  std::string expected = embedded_verdict(w.observations);
  TempDir dir;
  Running svc(base_config(dir));
  ASSERT_EQ(svc.error(), "");
  auto c = svc.client();

  // One-shot.
  std::string one = "{\"context\":" + w.context_json + ",\"observations\":" +
                    json_array(w.observations, 0, w.observations.size()) + "}";
  auto r1 = c.Post("/v2/attributions", one, "application/json");
  ASSERT_TRUE(r1);
  ASSERT_EQ(r1->status, 200) << r1->body;
  EXPECT_EQ(r1->body, expected);

  // Session: NDJSON chunks and one JSON array chunk, attribute in the middle and at the end.
  std::string id = create_session(c, w.context_json);
  ASSERT_EQ(id.size(), 32u);
  size_t n = w.observations.size(), half = n / 2;
  auto a = c.Post("/v2/sessions/" + id + "/observations", ndjson(w.observations, 0, half / 2), "application/x-ndjson");
  ASSERT_TRUE(a);
  ASSERT_EQ(a->status, 200) << a->body;
  EXPECT_NE(a->body.find("\"accepted\":" + std::to_string(half / 2)), std::string::npos) << a->body;
  a = c.Post("/v2/sessions/" + id + "/observations", json_array(w.observations, half / 2, half), "application/json");
  ASSERT_EQ(a->status, 200) << a->body;
  auto mid = c.Post("/v2/sessions/" + id + "/attribute", "", "application/json");
  ASSERT_EQ(mid->status, 200);
  EXPECT_EQ(mid->body, embedded_verdict({w.observations.begin(), w.observations.begin() + half}));
  a = c.Post("/v2/sessions/" + id + "/observations", ndjson(w.observations, half, n), "application/x-ndjson");
  ASSERT_EQ(a->status, 200) << a->body;
  EXPECT_NE(a->body.find("\"session_observations\":" + std::to_string(n)), std::string::npos);
  auto fin = c.Post("/v2/sessions/" + id + "/attribute", "", "application/json");
  ASSERT_EQ(fin->status, 200);
  EXPECT_EQ(fin->body, expected);
  EXPECT_EQ(fin->get_header_value("X-Attribution-Verdict-Seq"), "2");
  auto again = c.Post("/v2/sessions/" + id + "/attribute", "{}", "application/json");
  EXPECT_EQ(again->body, expected);

  auto latest = c.Get("/v2/sessions/" + id + "/verdicts/latest");
  ASSERT_EQ(latest->status, 200);
  EXPECT_EQ(latest->body, expected);
  auto hist = c.Get("/v2/sessions/" + id + "/verdicts");
  ASSERT_EQ(hist->status, 200);
  EXPECT_NE(hist->body.find("\"seq\":3"), std::string::npos);
  auto info = c.Get("/v2/sessions/" + id);
  ASSERT_EQ(info->status, 200);
  EXPECT_NE(info->body.find("\"observations\":" + std::to_string(n)), std::string::npos);
  EXPECT_NE(info->body.find("\"verdicts\":3"), std::string::npos);
  auto list = c.Get("/v2/sessions");
  EXPECT_NE(list->body.find(id), std::string::npos);

  // Close, then everything about it is 410; unknown ids are 404.
  auto d = c.Delete("/v2/sessions/" + id);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->status, 204);
  expect_problem(c.Delete("/v2/sessions/" + id), 410, "session_closed");
  expect_problem(c.Get("/v2/sessions/" + id), 410, "session_closed");
  expect_problem(c.Post("/v2/sessions/" + id + "/attribute", "", "application/json"), 410, "session_closed");
  expect_problem(c.Get("/v2/sessions/00000000000000000000000000000000"), 404, "session_not_found");
  expect_problem(c.Post("/v2/sessions/00000000000000000000000000000000/observations", "[]", "application/json"),
                 404, "session_not_found");
}

TEST(ServiceHttp, ConnectorReportsReachTheVerdict) {
  const auto& w = sample();
  TempDir dir;
  Running svc(base_config(dir));
  ASSERT_EQ(svc.error(), "");
  auto c = svc.client();
  std::string id = create_session(c, w.context_json);
  std::string reports = R"([{"connector":"loki/syslog","status":"error","reason":"timeout","observations":0,"bytes":0},{"connector":"x","status":"bad"}])";
  auto r = c.Post("/v2/sessions/" + id + "/connector_reports", reports, "application/json");
  ASSERT_EQ(r->status, 200) << r->body;
  EXPECT_NE(r->body.find("\"accepted\":1"), std::string::npos);
  EXPECT_NE(r->body.find("\"index\":1"), std::string::npos);
  auto v = c.Post("/v2/sessions/" + id + "/attribute", "", "application/json");
  EXPECT_NE(v->body.find("loki/syslog"), std::string::npos);
  Session s(rules(), w.context);
  s.add_connector_report({"loki/syslog", "error", "timeout", 0, 0});
  EXPECT_EQ(v->body, s.attribute().json);
  expect_problem(c.Post("/v2/sessions/" + id + "/connector_reports", "[{\"status\":\"ok\"}]", "application/json"),
                 422, "invalid_connector_reports");
}

TEST(ServiceHttp, CompatibilityIngest) {
  const auto& w = sample();
  TempDir dir;
  Running svc(base_config(dir));
  ASSERT_EQ(svc.error(), "");
  auto c = svc.client();
  std::string id = create_session(c, w.context_json);
  std::string loki = R"({"streams":[{"stream":{"job":"syslog","host":"gpu-a03"},"values":[
      ["1773476000000000000","NVRM: Xid (PCI:0000:9b:00): 79, pid=0, GPU has fallen off the bus."],
      ["x","bad"]]}]})";
  auto r = c.Post("/v2/sessions/" + id + "/loki/api/v1/push", loki, "application/json");
  ASSERT_EQ(r->status, 200) << r->body;
  EXPECT_NE(r->body.find("\"accepted\":1"), std::string::npos);
  EXPECT_NE(r->body.find("\"index\":1"), std::string::npos);
  expect_problem(c.Post("/v2/sessions/" + id + "/loki/api/v1/push?kind=nonsense", loki, "application/json"), 400,
                 "invalid_parameter");
  std::string prom = R"({"status":"success","data":{"resultType":"matrix","result":[{"metric":{"__name__":"DCGM_FI_DEV_XID_ERRORS","Hostname":"gpu-a03","gpu":"0"},"values":[[1773476000,"79"]]}]}})";
  r = c.Post("/v2/sessions/" + id + "/prometheus_metrics", prom, "application/json");
  ASSERT_EQ(r->status, 200) << r->body;
  EXPECT_NE(r->body.find("\"session_observations\":2"), std::string::npos);
  expect_problem(c.Post("/v2/sessions/" + id + "/prometheus_metrics", "{\"status\":\"success\"}", "application/json"),
                 400, "invalid_body");
  // The service verdict equals the embedded engine fed the same decoded observations.
  Observation lo;
  lo.kind = ObservationKind::kSyslog;
  lo.node = "gpu-a03";
  lo.observed_at = 1773476000000000000LL;
  lo.source = {"loki:{host=\"gpu-a03\",job=\"syslog\"}", 1};
  lo.text = "NVRM: Xid (PCI:0000:9b:00): 79, pid=0, GPU has fallen off the bus.";
  Observation po;
  po.kind = ObservationKind::kNodeMetrics;
  po.node = "gpu-a03";
  po.gpu = "0";
  po.observed_at = 1773476000000000000LL;
  po.source = {"prometheus", 0};
  po.metric = MetricSample{"DCGM_FI_DEV_XID_ERRORS", {{"Hostname", "gpu-a03"}, {"gpu", "0"}}, 79, po.observed_at};
  auto v = c.Post("/v2/sessions/" + id + "/attribute", "", "application/json");
  EXPECT_EQ(v->body, embedded_verdict({lo, po}));
}

TEST(ServiceHttp, BadInputGivesProblemJson) {
  const auto& w = sample();
  TempDir dir;
  Config cfg = base_config(dir);
  cfg.max_body_bytes = 64 * 1024;
  cfg.max_observations_per_session = 10;
  cfg.max_sessions = 3;
  Running svc(cfg);
  ASSERT_EQ(svc.error(), "");
  auto c = svc.client();
  std::string id = create_session(c, w.context_json);
  std::string obs = "/v2/sessions/" + id + "/observations";
  expect_problem(c.Post(obs, "[{\"kind\":\"applog\",", "application/json"), 400, "malformed_json");
  expect_problem(c.Post(obs, "[{\"kind\":\"applog\",\"text\":\"\xc3\x28\"}]", "application/json"), 400, "invalid_utf8");
  expect_problem(c.Post(obs, "{\"kind\":7,\"text\":\"x\"}\n{\"kind\":\"applog\",\"text\":3}\n", "application/x-ndjson"),
                 422, "invalid_observations");
  auto partial = c.Post(obs, "{\"kind\":\"applog\",\"text\":\"ok\"}\n{\"kind\":\"applog\",\"rank\":\"x\",\"text\":\"t\"}\n",
                        "application/x-ndjson");
  ASSERT_EQ(partial->status, 200);
  EXPECT_NE(partial->body.find("\"accepted\":1"), std::string::npos);
  EXPECT_NE(partial->body.find("{\"index\":1,\"reason\":\"rank: not an integer rank\"}"), std::string::npos) << partial->body;
  // Oversize body (Content-Length known) and oversize chunked body.
  std::string big(100 * 1024, ' ');
  big[0] = '[';
  big.back() = ']';
  expect_problem(c.Post(obs, big, "application/json"), 413, "body_too_large");
  auto c2 = svc.client();
  size_t sent = 0;
  auto chunked = c2.Post(
      obs,
      [&](size_t, httplib::DataSink& sink) {
        std::string chunk(16 * 1024, ' ');
        if (sent == 0) chunk[0] = '[';
        sent += chunk.size();
        sink.write(chunk.data(), chunk.size());
        if (sent > 200 * 1024) sink.done();
        return true;
      },
      "application/json");
  if (chunked) expect_problem(chunked, 413, "body_too_large");  // or the server closed first
  auto c3 = svc.client();
  // Session observation limit: 1 accepted so far, 10 more would exceed 10.
  expect_problem(c3.Post(obs, ndjson(w.observations, 0, 10), "application/x-ndjson"), 413, "session_observation_limit");
  // Contexts.
  expect_problem(c3.Post("/v2/sessions", "{\"context\":{\"id\":\"1\",\"start\":\"yesterday\"}}", "application/json"), 422,
                 "invalid_context");
  expect_problem(c3.Post("/v2/sessions", "{\"observations\":[]}", "application/json"), 422, "invalid_context");
  expect_problem(c3.Post("/v2/sessions", "not json", "application/json"), 400, "malformed_json");
  expect_problem(c3.Post("/v2/sessions", "", "application/json"), 400, "invalid_body");
  // Session count limit.
  create_session(c3, w.context_json);
  create_session(c3, w.context_json);
  auto full = c3.Post("/v2/sessions", "{\"context\":" + w.context_json + "}", "application/json");
  expect_problem(full, 429, "too_many_sessions");
  EXPECT_EQ(full->get_header_value("Retry-After"), "1");
  // One-shot is strict.
  expect_problem(c3.Post("/v2/attributions",
                         "{\"context\":" + w.context_json + ",\"observations\":[{\"kind\":\"applog\",\"text\":\"a\"},{\"kind\":\"x\"}]}",
                         "application/json"),
                 422, "invalid_observations");
  // No verdict yet.
  std::string fresh;
  {
    auto d = c3.Delete("/v2/sessions/" + id);
    EXPECT_EQ(d->status, 204);
    fresh = create_session(c3, w.context_json);
  }
  expect_problem(c3.Get("/v2/sessions/" + fresh + "/verdicts/latest"), 404, "no_verdict");
  // Metrics counted the discards.
  auto m = c3.Get("/metrics");
  EXPECT_NE(m->body.find("attribution_observations_discarded_total{reason=\"invalid\"}"), std::string::npos);
  EXPECT_NE(m->body.find("attribution_observations_discarded_total{reason=\"session_limit\"} 10"), std::string::npos);
}

int connect_loopback(int port) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

std::string read_all(int fd) {
  std::string out;
  char buf[4096];
  timeval tv{10, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  for (;;) {
    auto n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) break;
    out.append(buf, static_cast<size_t>(n));
    if (out.find("\r\n\r\n") != std::string::npos && out.find("}") != std::string::npos) break;
  }
  return out;
}

// A POST without Content-Length or chunking carries no body (curl -X POST sends none): it is
// answered at once, not after waiting for a body until the read timeout.
TEST(ServiceHttp, PostWithoutBodyIsAnsweredAtOnce) {
  const auto& w = sample();
  TempDir dir;
  Config cfg = base_config(dir);
  cfg.read_timeout_s = 60;
  Running svc(cfg);
  ASSERT_EQ(svc.error(), "");
  auto c = svc.client();
  std::string id = create_session(c, w.context_json);
  for (const std::string& path : std::vector<std::string>{"/v2/sessions/" + id + "/attribute",
                                                          "/v2/sessions/no-such-session/attribute"}) {
    int fd = connect_loopback(svc.port());
    ASSERT_GE(fd, 0);
    auto start = std::chrono::steady_clock::now();
    std::string req = "POST " + path + " HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
    ::send(fd, req.data(), req.size(), 0);
    std::string answer = read_all(fd);
    ::close(fd);
    double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    EXPECT_LT(secs, 30.0) << path << " waited for a body that never comes";
    EXPECT_EQ(answer.rfind(path.find("no-such") == std::string::npos ? "HTTP/1.1 200" : "HTTP/1.1 404", 0), 0u)
        << answer.substr(0, 200);
  }
}

TEST(ServiceHttp, SlowBodyTimesOutWith408) {
  const auto& w = sample();
  TempDir dir;
  Config cfg = base_config(dir);
  cfg.request_timeout_s = 1;
  cfg.read_timeout_s = 5;
  Running svc(cfg);
  ASSERT_EQ(svc.error(), "");
  auto c = svc.client();
  std::string id = create_session(c, w.context_json);
  int fd = connect_loopback(svc.port());
  ASSERT_GE(fd, 0);
  std::string head = "POST /v2/sessions/" + id +
                     "/observations HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-ndjson\r\nContent-Length: 1000\r\n\r\n";
  ASSERT_EQ(::send(fd, head.data(), head.size(), 0), static_cast<ssize_t>(head.size()));
  // Trickle one byte every 300 ms: each read is within read_timeout, the whole body is not.
  for (int i = 0; i < 8; ++i) {
    ::send(fd, " ", 1, MSG_NOSIGNAL);
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
  }
  std::string resp = read_all(fd);
  ::close(fd);
  EXPECT_NE(resp.find("HTTP/1.1 408"), std::string::npos) << resp;
  EXPECT_NE(resp.find("\"code\":\"request_timeout\""), std::string::npos) << resp;
}

TEST(ServiceHttp, FullWorkQueueAnswers429) {
  const auto& w = sample();
  TempDir dir;
  Config cfg = base_config(dir);
  cfg.work_concurrency = 1;
  cfg.work_queue = 0;
  cfg.request_timeout_s = 120;  // the slow upload below must hold its slot however loaded the machine is
  Running svc(cfg);
  ASSERT_EQ(svc.error(), "");
  auto c = svc.client();
  std::string id = create_session(c, w.context_json);
  // A slow upload holds the only work slot.
  int fd = connect_loopback(svc.port());
  ASSERT_GE(fd, 0);
  std::string head = "POST /v2/sessions/" + id +
                     "/observations HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-ndjson\r\nContent-Length: 100\r\n\r\n";
  ::send(fd, head.data(), head.size(), 0);
  // Wait until the service reports the slot taken (attribution_work_active is refreshed after each
  // request, so a /metrics answer shows the gate as it was after the previous one).
  ASSERT_TRUE(wait_until([&] { return metric_value(c.Get("/metrics")->body, "attribution_work_active") == 1; }))
      << "the slow upload never held the work slot";
  auto r = c.Post("/v2/sessions/" + id + "/attribute", "", "application/json");
  expect_problem(r, 429, "overloaded");
  EXPECT_EQ(r->get_header_value("Retry-After"), "1");
  ::close(fd);
  // Once the slot is free, work proceeds.
  wait_until([&] {
    r = c.Post("/v2/sessions/" + id + "/attribute", "", "application/json");
    return r && r->status == 200;
  });
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  auto m = c.Get("/metrics");
  EXPECT_NE(m->body.find("attribution_overload_rejections_total{queue=\"work\"}"), std::string::npos);
}

// Shedding under load: with one connection thread, a one-place connection queue and one work
// slot, most of a burst of clients posting multi-megabyte bodies are refused. Every client must
// still receive an answer: its own (200, or 404 for a missing session), or 429 with Retry-After. A refusal sent while the client is still
// writing its body, followed by a close with the body unread, resets the connection and the
// client sees a write error instead of the 429 (wrk counted 1,497 such socket errors in the
// overload benchmark before the service drained refused bodies).
TEST(ServiceHttp, ShedRequestsAlwaysGetTheir429) {
  const auto& w = sample();
  TempDir dir;
  Config cfg = base_config(dir);
  cfg.threads = 1;
  cfg.connection_queue = 1;
  cfg.work_concurrency = 1;
  cfg.work_queue = 0;
  Running svc(cfg);
  ASSERT_EQ(svc.error(), "");
  auto c0 = svc.client();
  std::string id = create_session(c0, w.context_json);
  ASSERT_FALSE(id.empty());
  const std::string body(6u << 20, 'x');  // far more than the loopback socket buffers hold
  const int clients = 32, requests = 4;
  std::atomic<int> ok{0}, shed{0};
  std::mutex mu;
  std::vector<std::string> failures;
  std::vector<std::thread> threads;
  for (int t = 0; t < clients; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < requests; ++i) {
        httplib::Client c("127.0.0.1", svc.port());  // a new connection each time: the queue sheds connections
        c.set_read_timeout(120, 0);
        c.set_write_timeout(120, 0);
        // Alternate between a route that reads its body after taking a work slot and a missing
        // session (answered 404 before the body is read).
        bool missing = (t + i) % 2 == 0;
        std::string path = missing ? "/v2/sessions/no-such-session/observations" : "/v2/sessions/" + id + "/attribute";
        auto r = c.Post(path, body, "text/plain");
        std::string what;
        if (!r) what = "no response: " + httplib::to_string(r.error());
        else if (r->status == (missing ? 404 : 200)) ok++;
        else if (r->status == 429 && r->has_header("Retry-After")) shed++;
        else what = "status " + std::to_string(r->status) + ": " + r->body.substr(0, 200);
        if (!what.empty()) {
          std::lock_guard lock(mu);
          failures.push_back(what);
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_TRUE(failures.empty()) << failures.size() << " of " << clients * requests
                                << " requests got neither their answer nor 429; first: " << failures.front();
  EXPECT_EQ(ok + shed, clients * requests);
  EXPECT_GT(shed.load(), 0) << "nothing was shed: the test did not load the service";
  EXPECT_GT(ok.load(), 0);
  // The service is still healthy and the session intact.
  auto h = c0.Get("/v2/healthz");
  ASSERT_TRUE(h);
  EXPECT_EQ(h->status, 200);
}

// A client batch id (Idempotency-Key) makes a retried POST a no-op that returns the original
// acknowledgement: the session is created once, each batch stored once, the verdict computed once.
TEST(ServiceHttp, IdempotencyKeyMakesRetriesNoOps) {
  const auto& w = sample();
  TempDir dir;
  Running svc(base_config(dir));
  ASSERT_EQ(svc.error(), "");
  auto c = svc.client();
  httplib::Headers k1{{"Idempotency-Key", "job-1"}};
  std::string body = "{\"context\":" + w.context_json + "}";
  auto s1 = c.Post("/v2/sessions", k1, body, "application/json");
  auto s2 = c.Post("/v2/sessions", k1, body, "application/json");
  ASSERT_TRUE(s1 && s2);
  EXPECT_EQ(s1->status, 201);
  EXPECT_EQ(s2->status, 201);
  EXPECT_EQ(s1->body, s2->body);
  EXPECT_FALSE(s1->has_header("Idempotent-Replayed"));
  EXPECT_EQ(s2->get_header_value("Idempotent-Replayed"), "true");
  std::string id = s1->body.substr(s1->body.find("\"id\":\"") + 6, 32);
  // The same key with another context is refused.
  auto other = c.Post("/v2/sessions", k1, "{\"context\":{\"id\":\"other\",\"scheduler\":\"slurm\"}}", "application/json");
  expect_problem(other, 422, "idempotency_key_reused");

  size_t half = w.observations.size() / 2;
  httplib::Headers b1{{"Idempotency-Key", "job-1-b0"}}, b2{{"Idempotency-Key", "job-1-b1"}};
  auto a1 = c.Post("/v2/sessions/" + id + "/observations", b1, ndjson(w.observations, 0, half), "application/x-ndjson");
  auto again = c.Post("/v2/sessions/" + id + "/observations", b1, ndjson(w.observations, 0, half), "application/x-ndjson");
  ASSERT_TRUE(a1 && again);
  EXPECT_EQ(a1->status, 200);
  EXPECT_EQ(again->status, 200);
  EXPECT_EQ(a1->body, again->body);  // the original acknowledgement, session_observations included
  EXPECT_EQ(again->get_header_value("Idempotent-Replayed"), "true");
  auto a2 = c.Post("/v2/sessions/" + id + "/observations", b2, ndjson(w.observations, half, w.observations.size()),
                   "application/x-ndjson");
  ASSERT_TRUE(a2);
  EXPECT_NE(a2->body.find("\"session_observations\":" + std::to_string(w.observations.size())), std::string::npos)
      << a2->body;
  // The retried batch was not stored twice: the verdict is the embedded engine's over each line once.
  httplib::Headers v{{"Idempotency-Key", "job-1-v"}};
  auto v1 = c.Post("/v2/sessions/" + id + "/attribute", v, "", "application/json");
  // More evidence, then the same attribute key: the verdict stored under the key, not a new one.
  c.Post("/v2/sessions/" + id + "/observations", ndjson(w.observations, 0, 10), "application/x-ndjson");
  auto v2 = c.Post("/v2/sessions/" + id + "/attribute", v, "", "application/json");
  ASSERT_TRUE(v1 && v2);
  EXPECT_EQ(v1->body, embedded_verdict(w.observations));
  EXPECT_EQ(v2->body, v1->body);
  EXPECT_EQ(v2->get_header_value("X-Attribution-Verdict-Seq"), "1");
  EXPECT_EQ(v2->get_header_value("Idempotent-Replayed"), "true");
  auto info = c.Get("/v2/sessions/" + id);
  EXPECT_NE(info->body.find("\"verdicts\":1"), std::string::npos) << info->body;
  // A malformed key is refused before anything is stored.
  httplib::Headers bad{{"Idempotency-Key", "no spaces allowed"}};
  expect_problem(c.Post("/v2/sessions/" + id + "/observations", bad, ndjson(w.observations, 0, 1), "application/x-ndjson"),
                 400, "invalid_idempotency_key");
  // Once the session is closed its create key is free again: a new session.
  ASSERT_EQ(c.Delete("/v2/sessions/" + id)->status, 204);
  auto s3 = c.Post("/v2/sessions", k1, body, "application/json");
  ASSERT_TRUE(s3);
  EXPECT_EQ(s3->status, 201);
  EXPECT_EQ(s3->body.find(id), std::string::npos);
}

// A session database written before batch numbers and idempotency keys (schema 1) is migrated
// at start and its sessions still attribute to the same bytes.
TEST(ServiceHttp, SchemaOneStoreIsMigrated) {
  const auto& w = sample();
  TempDir dir;
  {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open((dir.path() + "/sessions.db").c_str(), &db), SQLITE_OK);
    const char* schema1 =
        "CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);"
        "INSERT INTO meta VALUES('schema', '1');"
        "CREATE TABLE sessions(id TEXT PRIMARY KEY, context TEXT NOT NULL, created_ns INTEGER NOT NULL,"
        "  updated_ns INTEGER NOT NULL, closed INTEGER NOT NULL DEFAULT 0);"
        "CREATE TABLE batches(seq INTEGER PRIMARY KEY AUTOINCREMENT, session_id TEXT NOT NULL,"
        "  kind INTEGER NOT NULL, count INTEGER NOT NULL, payload BLOB NOT NULL);"
        "CREATE TABLE verdicts(session_id TEXT NOT NULL, seq INTEGER NOT NULL, created_ns INTEGER NOT NULL,"
        "  observations INTEGER NOT NULL, json TEXT NOT NULL, PRIMARY KEY(session_id, seq));";
    ASSERT_EQ(sqlite3_exec(db, schema1, nullptr, nullptr, nullptr), SQLITE_OK);
    sqlite3_stmt* st = nullptr;
    sqlite3_prepare_v2(db, "INSERT INTO sessions VALUES('s1', ?, 1, 1, 0)", -1, &st, nullptr);
    sqlite3_bind_text(st, 1, w.context_json.c_str(), -1, SQLITE_TRANSIENT);
    ASSERT_EQ(sqlite3_step(st), SQLITE_DONE);
    sqlite3_finalize(st);
    size_t half = w.observations.size() / 2;
    for (auto [from, to] : {std::pair<size_t, size_t>{0, half}, {half, w.observations.size()}}) {
      std::vector<Observation> part(w.observations.begin() + static_cast<long>(from),
                                    w.observations.begin() + static_cast<long>(to));
      std::string blob = encode_observations(part);
      sqlite3_prepare_v2(db, "INSERT INTO batches(session_id, kind, count, payload) VALUES('s1', 0, ?, ?)", -1, &st,
                         nullptr);
      sqlite3_bind_int64(st, 1, static_cast<int64_t>(part.size()));
      sqlite3_bind_blob(st, 2, blob.data(), static_cast<int>(blob.size()), SQLITE_TRANSIENT);
      ASSERT_EQ(sqlite3_step(st), SQLITE_DONE);
      sqlite3_finalize(st);
    }
    sqlite3_close(db);
  }
  Running svc(base_config(dir));
  ASSERT_EQ(svc.error(), "");
  auto c = svc.client();
  auto info = c.Get("/v2/sessions/s1");
  ASSERT_TRUE(info);
  EXPECT_NE(info->body.find("\"observations\":" + std::to_string(w.observations.size())), std::string::npos)
      << info->body;
  auto v = c.Post("/v2/sessions/s1/attribute", "", "application/json");
  ASSERT_TRUE(v);
  EXPECT_EQ(v->body, embedded_verdict(w.observations));
  // New batches continue the numbering after the migrated ones.
  auto more = c.Post("/v2/sessions/s1/observations", ndjson(w.observations, 0, 5), "application/x-ndjson");
  ASSERT_TRUE(more);
  EXPECT_EQ(more->status, 200) << more->body;
}

TEST(ServiceHttp, ConcurrentClientsLoseNothing) {
  const auto& w = sample();
  TempDir dir;
  Config cfg = base_config(dir);
  cfg.work_queue = 256;
  Running svc(cfg);
  ASSERT_EQ(svc.error(), "");
  auto c0 = svc.client();
  std::string shared = create_session(c0, w.context_json);
  const int clients = 16;
  size_t n = w.observations.size();
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < clients; ++t) {
    threads.emplace_back([&, t] {
      auto c = svc.client();
      // Each client sends every 16th slice of the workload into the shared session...
      for (size_t from = static_cast<size_t>(t) * 16; from < n; from += clients * 16) {
        auto r = c.Post("/v2/sessions/" + shared + "/observations", ndjson(w.observations, from, from + 16),
                        "application/x-ndjson");
        if (!r || r->status != 200) failures++;
      }
      // ...and runs a private session of its own.
      std::string own = create_session(c, w.context_json);
      auto r = c.Post("/v2/sessions/" + own + "/observations", ndjson(w.observations, 0, 50), "application/x-ndjson");
      if (!r || r->status != 200) failures++;
      auto v = c.Post("/v2/sessions/" + own + "/attribute", "", "application/json");
      if (!v || v->status != 200) failures++;
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(failures.load(), 0);
  auto info = c0.Get("/v2/sessions/" + shared);
  EXPECT_NE(info->body.find("\"observations\":" + std::to_string(n)), std::string::npos) << info->body;
  auto v = c0.Post("/v2/sessions/" + shared + "/attribute", "", "application/json");
  EXPECT_EQ(v->body, embedded_verdict(w.observations));
  auto list = c0.Get("/v2/sessions?limit=1000");
  EXPECT_NE(list->body.find("\"total\":" + std::to_string(clients + 1)), std::string::npos);
}

TEST(ServiceHttp, RestartKeepsSessionsAndVerdicts) {
  const auto& w = sample();
  TempDir dir;
  std::string id, before;
  size_t n = w.observations.size();
  {
    Running svc(base_config(dir));
    ASSERT_EQ(svc.error(), "");
    auto c = svc.client();
    id = create_session(c, w.context_json);
    for (size_t from = 0; from < n; from += 100)
      ASSERT_EQ(c.Post("/v2/sessions/" + id + "/observations", ndjson(w.observations, from, from + 100),
                       "application/x-ndjson")->status, 200);
    ASSERT_EQ(c.Post("/v2/sessions/" + id + "/connector_reports", R"([{"connector":"files","observations":5}])",
                     "application/json")->status, 200);
    before = c.Post("/v2/sessions/" + id + "/attribute", "", "application/json")->body;
    std::string closed = create_session(c, w.context_json);
    ASSERT_EQ(c.Delete("/v2/sessions/" + closed)->status, 204);
    id += "|" + closed;
  }
  std::string closed = id.substr(33);
  id.resize(32);
  Running svc(base_config(dir));
  ASSERT_EQ(svc.error(), "");
  auto c = svc.client();
  auto info = c.Get("/v2/sessions/" + id);
  ASSERT_EQ(info->status, 200);
  EXPECT_NE(info->body.find("\"observations\":" + std::to_string(n)), std::string::npos);
  EXPECT_NE(info->body.find("\"connector_reports\":1"), std::string::npos);
  EXPECT_EQ(c.Get("/v2/sessions/" + id + "/verdicts/latest")->body, before);
  EXPECT_EQ(c.Post("/v2/sessions/" + id + "/attribute", "", "application/json")->body, before);
  expect_problem(c.Get("/v2/sessions/" + closed), 410, "session_closed");
}

TEST(ServiceHttp, BearerTokenRequiredWhenConfigured) {
  TempDir dir;
  Config cfg = base_config(dir);
  cfg.auth_token = "t0ken-with-entropy";
  Running svc(cfg);
  ASSERT_EQ(svc.error(), "");
  auto c = svc.client();
  EXPECT_EQ(c.Get("/v2/healthz")->status, 200);
  EXPECT_EQ(c.Get("/v2/readyz")->status, 200);
  auto r = c.Get("/v2/sessions");
  expect_problem(r, 401, "unauthorized");
  EXPECT_NE(r->get_header_value("WWW-Authenticate").find("Bearer"), std::string::npos);
  c.set_bearer_token_auth("wrong");
  expect_problem(c.Get("/metrics"), 401, "unauthorized");
  c.set_bearer_token_auth("t0ken-with-entropy");
  EXPECT_EQ(c.Get("/v2/sessions")->status, 200);
  EXPECT_EQ(c.Get("/metrics")->status, 200);
}

TEST(ServiceHttp, TextIngestMatchesEmbeddedIngestText) {
  // The blueprint's embedded path scans bundle files with Session::ingest_text; POST .../text
  // lets a remote client get the same bytes, and it survives a restart.
  fs::path dir = fs::path(ATTRIBUTION_SOURCE_DIR) / "samples/xid79-nccl-watchdog-cascade";
  auto m = parse_bundle_manifest(read_file(dir / "workload.yaml"), "workload.yaml");
  ASSERT_TRUE(m.ok()) << m.error;
  Session embedded(rules(), m.value.context);
  for (const auto& src : m.value.sources) {
    TextSource ts = src.defaults;
    ts.name = src.path;
    embedded.ingest_text(ts, read_file(dir / src.path));
  }
  std::string expected = embedded.attribute().json;
  TempDir tmp;
  std::string id;
  {
    Running svc(base_config(tmp));
    ASSERT_EQ(svc.error(), "");
    auto c = svc.client();
    id = create_session(c, context_to_json(m.value.context));
    for (const auto& src : m.value.sources) {
      const auto& d = src.defaults;
      httplib::Params q = {{"source", src.path}, {"kind", std::string(to_string(d.kind))}};
      if (!d.node.empty()) q.emplace("node", d.node);
      if (d.rank != kNoRank) q.emplace("rank", std::to_string(d.rank));
      if (!d.gpu.empty()) q.emplace("gpu", d.gpu);
      if (d.boot_time != kNoTime) q.emplace("boot_time", format_rfc3339(d.boot_time));
      if (d.utc_offset_s) q.emplace("utc_offset_s", std::to_string(d.utc_offset_s));
      if (!d.note.empty()) q.emplace("note", d.note);
      std::string path = "/v2/sessions/" + id + "/text?" + httplib::detail::params_to_query_str(q);
      auto r = c.Post(path, read_file(dir / src.path), "text/plain");
      ASSERT_TRUE(r);
      ASSERT_EQ(r->status, 200) << r->body;
    }
    auto v = c.Post("/v2/sessions/" + id + "/attribute", "", "application/json");
    EXPECT_EQ(v->body, expected);
    expect_problem(c.Post("/v2/sessions/" + id + "/text", "x", "text/plain"), 400, "invalid_parameter");
    expect_problem(c.Post("/v2/sessions/" + id + "/text?source=a&boot_time=soon", "x", "text/plain"), 400,
                   "invalid_parameter");
  }
  Running again(base_config(tmp));
  ASSERT_EQ(again.error(), "");
  auto c = again.client();
  EXPECT_EQ(c.Post("/v2/sessions/" + id + "/attribute", "", "application/json")->body, expected);
}

TEST(ServiceHttp, IdleSessionsExpireAfterTtl) {
  const auto& w = sample();
  TempDir dir;
  Config cfg = base_config(dir);
  cfg.session_ttl_s = 1;
  Running svc(cfg);
  ASSERT_EQ(svc.error(), "");
  auto c = svc.client();
  std::string id = create_session(c, w.context_json);
  EXPECT_EQ(c.Get("/v2/sessions/" + id)->status, 200);
  int status = 200;
  wait_until([&] {
    status = c.Get("/v2/sessions/" + id)->status;
    return status != 200;
  });
  EXPECT_EQ(status, 410);
  auto m = c.Get("/metrics");
  EXPECT_NE(m->body.find("attribution_sessions 0"), std::string::npos);
}

TEST(ServiceHttp, LongLinesAreTruncatedAndCounted) {
  const auto& w = sample();
  TempDir dir;
  Config cfg = base_config(dir);
  cfg.max_line_bytes = 1024;
  Running svc(cfg);
  ASSERT_EQ(svc.error(), "");
  auto c = svc.client();
  std::string id = create_session(c, w.context_json);
  std::string body = "{\"kind\":\"applog\",\"text\":\"" + std::string(5000, 'x') + "\"}\n";
  auto r = c.Post("/v2/sessions/" + id + "/observations", body, "application/x-ndjson");
  ASSERT_EQ(r->status, 200);
  EXPECT_NE(r->body.find("\"truncated\":1"), std::string::npos) << r->body;
  EXPECT_NE(c.Get("/metrics")->body.find("attribution_lines_truncated_total 1"), std::string::npos);
}

TEST(ServiceHttp, RefusesNonLoopbackWithoutToken) {
  TempDir dir;
  Config cfg = base_config(dir);
  cfg.listen = "0.0.0.0:0";
  Service s(cfg, rules());
  std::string err;
  EXPECT_FALSE(s.init(err));
  EXPECT_NE(err.find("bearer token"), std::string::npos) << err;
}

}  // namespace
}  // namespace attribution::service
