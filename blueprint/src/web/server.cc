// HTTP side of the dashboard: cpp-httplib (ECOSYSTEM §1.1: TCP_NODELAY on, runtime limits, a
// bounded thread pool), GET only, JSON API under /api/, the front end from the binary.
#include <httplib.h>
#include <pthread.h>
#include <signal.h>

#include <charconv>
#include <mutex>
#include <fstream>
#include <iostream>
#include <sstream>
#include <thread>

#include "fabric/store_fabric.h"
#include "web/assets.h"
#include "web/reader.h"
#include "web/web.h"

namespace attribution::blueprint::web {

using nlohmann::json;

namespace {

struct BadRequest : std::runtime_error {
  using std::runtime_error::runtime_error;
};

void send_json(httplib::Response& res, int status, const json& body) {
  res.status = status;
  res.set_header("Cache-Control", "no-store");
  res.set_content(body.dump(-1, ' ', false, json::error_handler_t::replace), "application/json");
}

void send_error(httplib::Response& res, int status, const std::string& code, const std::string& message) {
  send_json(res, status, {{"error", {{"code", code}, {"message", message}}}});
}

std::string param(const httplib::Request& req, const char* name) {
  return req.has_param(name) ? req.get_param_value(name) : std::string();
}

RunFilter filter_of(const httplib::Request& req) {
  RunFilter f;
  f.outcome = param(req, "outcome");
  f.domain = param(req, "domain");
  f.quality = param(req, "quality");
  f.node = param(req, "node");
  f.cluster = param(req, "cluster");
  f.q = param(req, "q");
  for (auto [name, slot] : {std::pair{"from", &f.from_ns}, std::pair{"to", &f.to_ns}}) {
    std::string v = param(req, name);
    if (v.empty()) continue;
    int64_t ns = 0;
    if (!parse_time_ns(v, ns)) throw BadRequest(std::string("'") + name + "' is not an RFC 3339 time: " + v);
    *slot = ns;
  }
  return f;
}

int int_param(const httplib::Request& req, const char* name, int def, int lo, int hi) {
  std::string v = param(req, name);
  if (v.empty()) return def;
  int n = 0;
  auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
  if (ec != std::errc() || p != v.data() + v.size() || n < lo || n > hi)
    throw BadRequest(std::string("'") + name + "' must be an integer in [" + std::to_string(lo) + ", " +
                     std::to_string(hi) + "]");
  return n;
}

std::string_view content_type_of(std::string_view name) {
  auto ends = [&](std::string_view s) { return name.size() >= s.size() && name.substr(name.size() - s.size()) == s; };
  if (ends(".html")) return "text/html; charset=utf-8";
  if (ends(".js") || ends(".mjs")) return "text/javascript; charset=utf-8";
  if (ends(".css")) return "text/css; charset=utf-8";
  if (ends(".svg")) return "image/svg+xml";
  if (ends(".json")) return "application/json";
  if (ends(".png")) return "image/png";
  if (ends(".ico")) return "image/x-icon";
  return "application/octet-stream";
}

bool safe_asset_name(const std::string& name) {
  if (name.empty() || name.size() > 128 || name[0] == '.') return false;
  for (char c : name)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == '_')) return false;
  return name.find("..") == std::string::npos;
}

bool parse_listen(const std::string& listen, std::string& host, int& port) {
  auto colon = listen.rfind(':');
  if (colon == std::string::npos) return false;
  host = listen.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  if (host.empty()) host = "127.0.0.1";
  std::string p = listen.substr(colon + 1);
  auto [end, ec] = std::from_chars(p.data(), p.data() + p.size(), port);
  return ec == std::errc() && end == p.data() + p.size() && port >= 0 && port <= 65535;
}

void set_security_headers(httplib::Response& res) {
  res.set_header("X-Content-Type-Options", "nosniff");
  res.set_header("Referrer-Policy", "no-referrer");
  res.set_header("X-Frame-Options", "DENY");
  res.set_header("Content-Security-Policy",
                 "default-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'; script-src 'self'; "
                 "connect-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'");
}

}  // namespace

int run_web(const WebOptions& options, std::ostream& out, std::ostream& err) {
  std::string host;
  int port = 0;
  if (!parse_listen(options.listen, host, port)) {
    err << "attribution-blueprint web: --listen must be HOST:PORT, got '" << options.listen << "'\n";
    return 2;
  }
  if (options.db.empty() == options.postgres.empty()) {
    err << "attribution-blueprint web: give exactly one of --db PATH or --postgres DSN\n";
    return 2;
  }
  std::unique_ptr<StoreReader> store;
  try {
    store = options.db.empty() ? open_postgres_reader(options.postgres, std::max(2, options.threads))
                               : open_sqlite_reader(options.db, std::max(2, options.threads));
  } catch (const std::exception& e) {
    err << "attribution-blueprint web: " << e.what() << "\n";
    return 1;
  }
  if (!options.assets.empty() && !std::ifstream(options.assets + "/index.html")) {
    err << "attribution-blueprint web: --assets " << options.assets << " has no index.html\n";
    return 2;
  }

  // SIGINT/SIGTERM are handled by a waiter thread (sigwait), never in a signal handler.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

  httplib::Server svr;
  svr.set_tcp_nodelay(true);
  const int threads = std::max(2, options.threads);
  svr.new_task_queue = [threads] { return new httplib::ThreadPool(static_cast<size_t>(threads)); };
  svr.set_payload_max_length(64 * 1024);
  svr.set_read_timeout(10, 0);
  svr.set_write_timeout(10, 0);
  svr.set_keep_alive_max_count(100);
  svr.set_keep_alive_timeout(5);

  StoreReader& db = *store;
  auto guarded = [](auto fn) {
    return [fn](const httplib::Request& req, httplib::Response& res) {
      set_security_headers(res);
      try {
        fn(req, res);
      } catch (const BadRequest& e) {
        send_error(res, 400, "bad_request", e.what());
      } catch (const std::exception& e) {
        send_error(res, 500, "internal", e.what());
      }
    };
  };

  svr.Get("/api/health", guarded([&](const httplib::Request&, httplib::Response& res) {
            send_json(res, 200, {{"ok", true}, {"store", db.describe()}, {"read_only", true}});
          }));
  svr.Get("/api/facets", guarded([&](const httplib::Request&, httplib::Response& res) {
            send_json(res, 200, db.facets());
          }));
  svr.Get("/api/runs", guarded([&](const httplib::Request& req, httplib::Response& res) {
            RunFilter f = filter_of(req);
            int limit = int_param(req, "limit", 50, 1, 500);
            std::optional<PageCursor> after;
            if (std::string c = param(req, "cursor"); !c.empty()) {
              PageCursor pc;
              if (!parse_cursor(c, pc)) throw BadRequest("'cursor' is not a cursor returned by this API");
              after = pc;
            }
            send_json(res, 200, db.list_runs(f, after, limit));
          }));
  svr.Get("/api/runs/counts", guarded([&](const httplib::Request& req, httplib::Response& res) {
            send_json(res, 200, db.counts(filter_of(req)));
          }));
  svr.Get(R"(/api/runs/(\d{1,18}))", guarded([&](const httplib::Request& req, httplib::Response& res) {
            std::string verdict;
            auto run = db.get_run(std::stoll(req.matches[1].str()), &verdict);
            if (!run) return send_error(res, 404, "not_found", "no run " + req.matches[1].str());
            json v = json::parse(verdict, nullptr, false);
            json body = {{"run", std::move(*run)}, {"verdict", v.is_discarded() ? json(nullptr) : std::move(v)}};
            if (body["verdict"].is_null()) body["verdict_error"] = "the stored verdict is not valid JSON";
            send_json(res, 200, body);
          }));
  svr.Get(R"(/api/runs/(\d{1,18})/verdict\.json)", guarded([&](const httplib::Request& req, httplib::Response& res) {
            std::string verdict;
            auto run = db.get_run(std::stoll(req.matches[1].str()), &verdict);
            if (!run) return send_error(res, 404, "not_found", "no run " + req.matches[1].str());
            res.set_header("Cache-Control", "no-store");
            res.set_content(verdict, "application/json");  // the stored bytes, unchanged
          }));
  svr.Get("/api/fleet", guarded([&](const httplib::Request& req, httplib::Response& res) {
            send_json(res, 200, db.fleet(filter_of(req), int_param(req, "limit", 100, 1, 1000)));
          }));
  // Fabric (docs/fabric.md §6): topology, fleet findings, a component's runs. The fabric store is
  // opened read-only on first use (an older store without the fabric tables answers 404).
  std::mutex fabric_mu;
  std::unique_ptr<FabricStore> fabric_store;
  auto with_fabric = [&](auto fn) {
    std::lock_guard<std::mutex> lock(fabric_mu);
    if (!fabric_store) fabric_store = open_fabric_store(options.db, options.postgres, true);
    return fn(*fabric_store);
  };
  auto time_param = [](const httplib::Request& req, const char* name, int64_t def) {
    std::string v = param(req, name);
    if (v.empty()) return def;
    int64_t ns = 0;
    if (!parse_time_ns(v, ns)) throw BadRequest(std::string("'") + name + "' is not a time (RFC 3339 or ns)");
    return ns;
  };
  svr.Get("/api/fabric/topology", guarded([&](const httplib::Request& req, httplib::Response& res) {
            int64_t at = time_param(req, "at", INT64_MAX);
            with_fabric([&](FabricStore& fs) {
              std::string error;
              auto t = fs.topology_at(at, error);
              if (!t) return send_error(res, 404, "not_found", error.empty() ? "no topology stored" : error);
              send_json(res, 200, t->to_json());
            });
          }));
  svr.Get("/api/fabric/findings", guarded([&](const httplib::Request& req, httplib::Response& res) {
            std::string status = param(req, "status");
            if (status != "" && status != "open" && status != "all") throw BadRequest("'status' is open or all");
            with_fabric([&](FabricStore& fs) {
              json findings;
              std::string error;
              if (!fs.list_findings(status == "all" ? "" : "open", findings, error))
                return send_error(res, 404, "not_found", error);
              send_json(res, 200, {{"findings", std::move(findings)}});
            });
          }));
  svr.Get("/api/fabric/component", guarded([&](const httplib::Request& req, httplib::Response& res) {
            std::string id = param(req, "id");
            if (id.empty()) throw BadRequest("'id' (a component id) is required");
            int64_t from = time_param(req, "from", INT64_MIN), to = time_param(req, "to", INT64_MAX);
            int limit = int_param(req, "limit", 100, 1, 1000);
            with_fabric([&](FabricStore& fs) {
              json body;
              std::string error;
              if (!component_runs(fs, id, from, to, limit, body, error)) return send_error(res, 404, "not_found", error);
              send_json(res, 200, body);
            });
          }));
  svr.Get(R"(/api/.*)", guarded([](const httplib::Request& req, httplib::Response& res) {
            send_error(res, 404, "not_found", "no API route " + req.path);
          }));

  // The front end: embedded copy, or a directory (--assets) for front-end work.
  std::string assets_dir = options.assets;
  auto serve_asset = guarded([assets_dir](const httplib::Request& req, httplib::Response& res) {
    std::string path = req.path == "/" || req.path == "/index.html" ? "/" : req.path;
    if (!assets_dir.empty()) {
      std::string name = path == "/" ? "index.html" : path.substr(std::string("/assets/").size());
      std::ifstream in(assets_dir + "/" + name, std::ios::binary);
      if (!safe_asset_name(name) || !in) return send_error(res, 404, "not_found", "no asset " + req.path);
      std::stringstream ss;
      ss << in.rdbuf();
      res.set_header("Cache-Control", "no-cache");
      res.set_content(ss.str(), std::string(content_type_of(name)));
      return;
    }
    size_t n = 0;
    const EmbeddedAsset* a = embedded_assets(n);
    for (size_t i = 0; i < n; ++i) {
      if (a[i].path == path) {
        res.set_header("Cache-Control", "no-cache");
        res.set_content(std::string(a[i].body), std::string(a[i].content_type));
        return;
      }
    }
    send_error(res, 404, "not_found", "no asset " + req.path);
  });
  svr.Get("/", serve_asset);
  svr.Get("/index.html", serve_asset);
  svr.Get(R"(/assets/[A-Za-z0-9._-]+)", serve_asset);
  // Read-only: every other method is refused.
  auto read_only = guarded([](const httplib::Request&, httplib::Response& res) {
    res.set_header("Allow", "GET, HEAD");
    send_error(res, 405, "method_not_allowed", "the dashboard is read-only");
  });
  svr.Post(".*", read_only);
  svr.Put(".*", read_only);
  svr.Patch(".*", read_only);
  svr.Delete(".*", read_only);
  svr.Options(".*", read_only);
  svr.set_error_handler([](const httplib::Request&, httplib::Response& res) {
    if (res.body.empty()) {
      set_security_headers(res);
      res.set_content(json{{"error", {{"code", res.status == 404 ? "not_found" : "error"},
                                      {"message", "HTTP " + std::to_string(res.status)}}}}
                          .dump(),
                      "application/json");
    }
  });

  int bound = port == 0 ? svr.bind_to_any_port(host) : (svr.bind_to_port(host, port) ? port : -1);
  if (bound < 0) {
    err << "attribution-blueprint web: cannot listen on " << options.listen << "\n";
    return 1;
  }
  bool loopback = host == "127.0.0.1" || host == "::1" || host == "localhost";
  std::string shown = host.find(':') != std::string::npos ? "[" + host + "]" : host;
  out << "attribution dashboard (read-only) over " << db.describe() << "\n"
      << "listening on http://" << shown << ":" << bound << "/" << std::endl;
  if (!loopback)
    err << "warning: the dashboard has no authentication; put a reverse proxy in front of " << options.listen << "\n";

  std::thread waiter([&svr, &stop_signals] {
    int sig = 0;
    sigwait(&stop_signals, &sig);
    svr.stop();
  });
  bool ok = svr.listen_after_bind();
  if (svr.is_running()) svr.stop();
  pthread_kill(waiter.native_handle(), SIGTERM);  // wakes the waiter if the server stopped by itself
  waiter.join();
  return ok ? 0 : 1;
}

}  // namespace attribution::blueprint::web
