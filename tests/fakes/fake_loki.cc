#include "fake_loki.h"

#include <httplib.h>
#include <re2/re2.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <fstream>
#include <nlohmann/json.hpp>

#include "attribution/codec.h"

namespace attribution::testing {
namespace {

struct LabelMatcher {
  std::string name, op, value;
  std::shared_ptr<RE2> re;
};
struct LineFilter {
  std::string op, value;
  std::shared_ptr<RE2> re;
};
struct Query {
  std::vector<LabelMatcher> labels;
  std::vector<LineFilter> filters;
};

void skip_ws(const std::string& s, size_t& i) {
  while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
}

bool read_string(const std::string& s, size_t& i, std::string& out, std::string& error) {
  skip_ws(s, i);
  if (i >= s.size()) {
    error = "parse error: expected string";
    return false;
  }
  char q = s[i];
  if (q == '`') {
    size_t close = s.find('`', i + 1);
    if (close == std::string::npos) {
      error = "parse error: unterminated raw string";
      return false;
    }
    out = s.substr(i + 1, close - i - 1);
    i = close + 1;
    return true;
  }
  if (q != '"') {
    error = "parse error: expected string at " + std::to_string(i);
    return false;
  }
  out.clear();
  for (++i; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 1 < s.size()) {
      char c = s[++i];
      out += c == 'n' ? '\n' : c == 't' ? '\t' : c;
    } else if (s[i] == '"') {
      ++i;
      return true;
    } else {
      out += s[i];
    }
  }
  error = "parse error: unterminated string";
  return false;
}

bool parse_query(const std::string& s, Query& q, std::string& error) {
  size_t i = 0;
  skip_ws(s, i);
  if (i >= s.size() || s[i] != '{') {
    error = "parse error : queries require at least one regexp or equality matcher that does not have an empty-compatible value";
    return false;
  }
  ++i;
  for (;;) {
    skip_ws(s, i);
    if (i < s.size() && s[i] == '}') {
      ++i;
      break;
    }
    size_t b = i;
    while (i < s.size() && (std::isalnum(static_cast<unsigned char>(s[i])) || s[i] == '_')) ++i;
    LabelMatcher m;
    m.name = s.substr(b, i - b);
    skip_ws(s, i);
    for (const char* op : {"=~", "!~", "!=", "="}) {
      if (s.compare(i, std::strlen(op), op) == 0) {
        m.op = op;
        i += std::strlen(op);
        break;
      }
    }
    if (m.name.empty() || m.op.empty()) {
      error = "parse error: bad label matcher at " + std::to_string(b);
      return false;
    }
    if (!read_string(s, i, m.value, error)) return false;
    if (m.op == "=~" || m.op == "!~") {
      m.re = std::make_shared<RE2>(m.value);
      if (!m.re->ok()) {
        error = "parse error: bad regex " + m.value;
        return false;
      }
    }
    q.labels.push_back(std::move(m));
    skip_ws(s, i);
    if (i < s.size() && s[i] == ',') ++i;
  }
  for (;;) {
    skip_ws(s, i);
    if (i >= s.size()) break;
    LineFilter f;
    for (const char* op : {"|=", "!=", "|~", "!~"}) {
      if (s.compare(i, 2, op) == 0) {
        f.op = op;
        i += 2;
        break;
      }
    }
    if (f.op.empty()) {
      error = "parse error: unsupported pipeline stage at " + std::to_string(i);
      return false;
    }
    if (!read_string(s, i, f.value, error)) return false;
    if (f.op == "|~" || f.op == "!~") {
      f.re = std::make_shared<RE2>(f.value);
      if (!f.re->ok()) {
        error = "parse error: invalid regex: " + f.re->error();
        return false;
      }
    }
    q.filters.push_back(std::move(f));
  }
  return true;
}

bool labels_match(const Query& q, const std::map<std::string, std::string>& labels) {
  for (const auto& m : q.labels) {
    auto it = labels.find(m.name);
    std::string v = it == labels.end() ? "" : it->second;
    bool ok = m.op == "=" ? v == m.value : m.op == "!=" ? v != m.value
            : m.op == "=~" ? RE2::FullMatch(v, *m.re) : !RE2::FullMatch(v, *m.re);
    if (!ok) return false;
  }
  return true;
}

bool line_matches(const Query& q, const std::string& line) {
  for (const auto& f : q.filters) {
    bool ok = f.op == "|=" ? line.find(f.value) != std::string::npos
            : f.op == "!=" ? line.find(f.value) == std::string::npos
            : f.op == "|~" ? RE2::PartialMatch(line, *f.re) : !RE2::PartialMatch(line, *f.re);
    if (!ok) return false;
  }
  return true;
}

// Loki's time parameter rule: RFC 3339, or digits (≤10 → seconds, else nanoseconds).
bool parse_time(const std::string& v, int64_t& out) {
  if (v.empty()) return false;
  bool digits = std::all_of(v.begin(), v.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); });
  if (digits) {
    int64_t n = 0;
    if (std::from_chars(v.data(), v.data() + v.size(), n).ec != std::errc()) return false;
    out = v.size() <= 10 ? n * 1000000000LL : n;
    return true;
  }
  auto t = parse_rfc3339(v);
  if (!t.ok()) return false;
  out = t.value;
  return true;
}

}  // namespace

struct FakeLoki::Impl {
  httplib::Server server;
};

FakeLoki::FakeLoki(FakeLokiOptions options) : impl_(std::make_unique<Impl>()), options_(std::move(options)) {}

FakeLoki::~FakeLoki() { stop(); }

void FakeLoki::add_stream(FakeLokiStream stream) {
  std::lock_guard<std::mutex> lock(mu_);
  streams_.push_back(std::move(stream));
}

bool FakeLoki::load_jsonl(const std::string& path, std::string& error) {
  std::ifstream in(path);
  if (!in) {
    error = path + ": cannot open";
    return false;
  }
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    auto j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_discarded()) {
      error = path + ": bad JSON line";
      return false;
    }
    FakeLokiStream s;
    for (auto it = j["stream"].begin(); it != j["stream"].end(); ++it) s.labels[it.key()] = it.value().get<std::string>();
    for (const auto& v : j["values"]) s.entries.emplace_back(std::stoll(v[0].get<std::string>()), v[1].get<std::string>());
    add_stream(std::move(s));
  }
  return true;
}

std::vector<std::string> FakeLoki::queries() const {
  std::lock_guard<std::mutex> lock(mu_);
  return queries_;
}

void FakeLoki::reset_counters() {
  std::lock_guard<std::mutex> lock(mu_);
  requests_ = 0;
  bytes_sent_ = 0;
  queries_.clear();
}

int FakeLoki::query_range(const std::map<std::string, std::string>& params, const std::string& tenant,
                          std::string& body) {
  auto get = [&](const char* k) {
    auto it = params.find(k);
    return it == params.end() ? std::string() : it->second;
  };
  if (!options_.tenant.empty() && tenant.empty()) {
    body = "no org id\n";
    return 401;
  }
  Query q;
  std::string error;
  if (!parse_query(get("query"), q, error)) {
    body = error + "\n";
    return 400;
  }
  int64_t now = std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch()).count();
  int64_t end = now, start = now - 3600LL * 1000000000LL;
  if (!get("end").empty() && !parse_time(get("end"), end)) {
    body = "invalid parameter \"end\"\n";
    return 400;
  }
  if (!get("start").empty() && !parse_time(get("start"), start)) {
    body = "invalid parameter \"start\"\n";
    return 400;
  }
  int limit = 100;
  if (!get("limit").empty()) limit = std::stoi(get("limit"));
  if (limit > options_.max_entries_limit) {
    body = "max entries limit per query exceeded, limit > max_entries_limit (" + std::to_string(limit) + " > " +
           std::to_string(options_.max_entries_limit) + ")\n";
    return 400;
  }
  bool forward = get("direction") == "forward";
  struct Hit {
    int64_t t;
    size_t stream;
    const std::string* line;
  };
  std::vector<Hit> hits;
  std::lock_guard<std::mutex> lock(mu_);
  queries_.push_back(get("query"));
  for (size_t s = 0; s < streams_.size(); ++s) {
    const auto& st = streams_[s];
    if (!options_.tenant.empty() && st.labels.count("__tenant__") && st.labels.at("__tenant__") != tenant) continue;
    if (!labels_match(q, st.labels)) continue;
    for (const auto& [t, line] : st.entries)
      if (t >= start && t < end && line_matches(q, line)) hits.push_back({t, s, &line});
  }
  std::stable_sort(hits.begin(), hits.end(), [&](const Hit& a, const Hit& b) { return forward ? a.t < b.t : a.t > b.t; });
  if (hits.size() > static_cast<size_t>(limit)) hits.resize(static_cast<size_t>(limit));
  std::map<size_t, nlohmann::json> by_stream;
  for (const auto& h : hits) {
    auto& j = by_stream[h.stream];
    if (j.is_null()) {
      nlohmann::json labels = nlohmann::json::object();
      for (const auto& [k, v] : streams_[h.stream].labels)
        if (k != "__tenant__") labels[k] = v;
      j = {{"stream", labels}, {"values", nlohmann::json::array()}};
    }
    j["values"].push_back({std::to_string(h.t), *h.line});
  }
  nlohmann::json result = nlohmann::json::array();
  for (auto& [s, j] : by_stream) result.push_back(std::move(j));
  nlohmann::json doc = {{"status", "success"},
                        {"data",
                         {{"resultType", "streams"},
                          {"result", std::move(result)},
                          {"stats", {{"summary", {{"totalEntriesReturned", hits.size()}}}}}}}};
  body = doc.dump();
  return 200;
}

int FakeLoki::start(int port) {
  auto handler = [this](const httplib::Request& req, httplib::Response& res,
                        const std::map<std::string, std::string>& form) {
    uint64_t n = ++requests_;
    if (static_cast<int>(n) <= options_.fail_first) {
      res.status = options_.fail_status;
      if (options_.fail_status == 429) res.set_header("Retry-After", "0");
      res.set_content("injected failure\n", "text/plain");
      bytes_sent_ += res.body.size();
      return;
    }
    std::map<std::string, std::string> params;
    for (const auto& [k, v] : req.params) params[k] = v;
    for (const auto& [k, v] : form) params[k] = v;
    std::string body;
    res.status = query_range(params, req.get_header_value("X-Scope-OrgID"), body);
    res.set_content(body, res.status == 200 ? "application/json" : "text/plain; charset=utf-8");
    bytes_sent_ += body.size();
  };
  impl_->server.Get("/loki/api/v1/query_range",
                    [handler](const httplib::Request& req, httplib::Response& res) { handler(req, res, {}); });
  // Loki (Go net/http) takes large form bodies; Debian's libcpp-httplib caps parsed forms at
  // 8 KiB, so the body is read and decoded here.
  impl_->server.Post("/loki/api/v1/query_range", [handler](const httplib::Request& req, httplib::Response& res,
                                                           const httplib::ContentReader& reader) {
    std::string body;
    reader([&](const char* data, size_t n) {
      body.append(data, n);
      return body.size() < (16u << 20);
    });
    std::map<std::string, std::string> form;
    size_t i = 0;
    while (i <= body.size()) {
      size_t amp = body.find('&', i);
      if (amp == std::string::npos) amp = body.size();
      std::string kv = body.substr(i, amp - i);
      size_t eq = kv.find('=');
      if (eq != std::string::npos)
        form[httplib::detail::decode_url(kv.substr(0, eq), true)] = httplib::detail::decode_url(kv.substr(eq + 1), true);
      i = amp + 1;
    }
    handler(req, res, form);
  });
  impl_->server.Get("/ready", [](const httplib::Request&, httplib::Response& res) { res.set_content("ready\n", "text/plain"); });
  if (port == 0) {
    port_ = impl_->server.bind_to_any_port("127.0.0.1");
  } else {
    port_ = impl_->server.bind_to_port("127.0.0.1", port) ? port : -1;
  }
  if (port_ < 0) return -1;
  thread_ = std::thread([this] { impl_->server.listen_after_bind(); });
  for (int i = 0; i < 200 && !impl_->server.is_running(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  return port_;
}

void FakeLoki::stop() {
  if (thread_.joinable()) {
    impl_->server.stop();
    thread_.join();
  }
}

std::string FakeLoki::url() const { return "http://127.0.0.1:" + std::to_string(port_); }

}  // namespace attribution::testing
