// `attribution-blueprint web`: the read-only dashboard over the verdict store (SPEC §9,
// docs/dashboard.md). Serves the embedded front end (dashboard/src) and a JSON API under /api/.
#pragma once

#include <iosfwd>
#include <string>

namespace attribution::blueprint::web {

struct WebOptions {
  std::string db;                         // SQLite file, opened read-only
  std::string postgres;                   // or a PostgreSQL DSN (read-only sessions)
  std::string listen = "127.0.0.1:8080";  // host:port ("[::1]:8080" for IPv6)
  std::string assets;                     // serve the front end from this directory instead of the embedded copy
  int threads = 8;                        // HTTP worker threads (one per keep-alive connection)
};

// Runs until SIGINT/SIGTERM. Exit codes: 0 stopped cleanly, 1 cannot open the store or bind, 2 usage.
int run_web(const WebOptions& options, std::ostream& out, std::ostream& err);

}  // namespace attribution::blueprint::web
