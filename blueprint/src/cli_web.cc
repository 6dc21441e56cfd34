// `attribution-blueprint web`: the read-only dashboard (blueprint/src/web, docs/dashboard.md).
#include <CLI/CLI.hpp>
#include <iostream>

#include "cli.h"
#include "web/web.h"

namespace attribution::blueprint {
namespace {

void setup_web_command(CLI::App& app, int& exit_code) {
  static web::WebOptions options;
  auto* w = app.add_subcommand("web", "Serve the read-only dashboard over a verdict store");
  auto* db = w->add_option("--db", options.db, "Verdict store: SQLite file (opened read-only)")->envname("ATTRIBUTION_DB");
  auto* pg = w->add_option("--postgres", options.postgres, "Verdict store: PostgreSQL DSN (read-only sessions)")
                 ->envname("ATTRIBUTION_POSTGRES_DSN");
  db->excludes(pg);
  pg->excludes(db);
  w->add_option("--listen", options.listen, "HOST:PORT to listen on (port 0 picks a free port)")
      ->envname("ATTRIBUTION_WEB_LISTEN")
      ->capture_default_str();
  w->add_option("--assets", options.assets, "Serve the front end from this directory instead of the built-in copy");
  w->add_option("--threads", options.threads, "HTTP worker threads")->check(CLI::Range(2, 256))->capture_default_str();
  w->callback([&exit_code] { exit_code = web::run_web(options, std::cout, std::cerr); });
}

CliRegistrar web_registrar("web", &setup_web_command);

}  // namespace
}  // namespace attribution::blueprint
