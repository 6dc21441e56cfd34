// `attribution-blueprint topology import|show|check` and `fleet fabric` (docs/fabric.md §5).
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <charconv>
#include <fstream>
#include <iostream>
#include <sstream>

#include "attribution/codec.h"
#include "cli.h"
#include "fabric/store_fabric.h"
#include "stores/store.h"

namespace attribution::blueprint {
namespace {

using nlohmann::json;

struct StoreOptions {
  std::string db, postgres;
};

void add_store_options(CLI::App* cmd, StoreOptions& o) {
  auto* db = cmd->add_option("--db", o.db, "Verdict store: SQLite file")->envname("ATTRIBUTION_DB");
  auto* pg = cmd->add_option("--postgres", o.postgres, "Verdict store: PostgreSQL DSN")->envname("ATTRIBUTION_POSTGRES_DSN");
  db->excludes(pg);
  pg->excludes(db);
}

// "7d", "12h", "30m", "90s" → ns.
bool parse_duration(const std::string& text, int64_t& ns) {
  if (text.size() < 2) return false;
  int64_t n = 0;
  auto r = std::from_chars(text.data(), text.data() + text.size() - 1, n);
  if (r.ec != std::errc() || r.ptr != text.data() + text.size() - 1 || n <= 0) return false;
  int64_t unit = 0;
  switch (text.back()) {
    case 'd': unit = 86400; break;
    case 'h': unit = 3600; break;
    case 'm': unit = 60; break;
    case 's': unit = 1; break;
    default: return false;
  }
  ns = n * unit * 1'000'000'000;
  return true;
}

bool parse_time(const std::string& text, int64_t& ns) {
  auto t = parse_rfc3339(text);
  if (!t.ok()) return false;
  ns = t.value;
  return true;
}

bool read_file(const std::string& path, std::string& out, std::ostream& err) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    err << "error: " << path << ": cannot read\n";
    return false;
  }
  std::stringstream ss;
  ss << in.rdbuf();
  out = ss.str();
  return true;
}

// Builds one topology from the files; prints file:line errors.
bool build_topology(const std::vector<std::string>& files, fabric::Topology& t, std::ostream& err) {
  fabric::TopologyBuilder b;
  std::vector<fabric::InputError> errors;
  bool ok = true;
  for (const auto& f : files) {
    std::string text;
    if (!read_file(f, text, err)) return false;
    ok = b.add_file(f, text, errors) && ok;
  }
  if (ok) ok = b.build(t, errors);
  for (const auto& e : errors) err << "error: " << e.to_string() << "\n";
  if (ok) t.valid_from_ns = b.yaml_valid_from();
  return ok;
}

int topology_import(const std::vector<std::string>& files, const std::string& valid_from, const StoreOptions& so,
                    std::ostream& out, std::ostream& err) {
  fabric::Topology t;
  if (!build_topology(files, t, err)) return 1;
  if (!valid_from.empty()) {
    int64_t ns = 0;
    if (!parse_time(valid_from, ns)) {
      err << "error: --valid-from: not an RFC 3339 time: " << valid_from << "\n";
      return 2;
    }
    t.valid_from_ns = ns;
  }
  t.imported_at = now_rfc3339();
  if (t.valid_from_ns == fabric::kNoValidFrom) parse_time(t.imported_at, t.valid_from_ns);
  try {
    auto store = open_fabric_store(so.db, so.postgres);
    std::string error;
    if (!store->put_topology(t, error)) {
      err << "error: " << error << "\n";
      return 1;
    }
    out << fmt::format("topology {} stored in {}: valid from {}, {} switches, {} hosts, {} links, {} NVLink domains ({})\n",
                       t.id, store->describe(), format_rfc3339(t.valid_from_ns), t.switches.size(), t.hosts.size(),
                       t.links.size(), t.nvlink_domains.size(), t.digest);
    return 0;
  } catch (const std::exception& e) {
    err << "error: " << e.what() << "\n";
    return 1;
  }
}

int topology_show(const std::string& at, const std::string& output, const StoreOptions& so, std::ostream& out,
                  std::ostream& err) {
  int64_t at_ns = INT64_MAX;
  if (!at.empty() && !parse_time(at, at_ns)) {
    err << "error: --at: not an RFC 3339 time: " << at << "\n";
    return 2;
  }
  try {
    auto store = open_fabric_store(so.db, so.postgres);
    std::string error;
    auto t = store->topology_at(at_ns, error);
    if (!t) {
      err << "error: " << (error.empty() ? store->describe() + ": no topology stored" : error) << "\n";
      return 1;
    }
    out << (output == "json" ? t->to_json().dump(1) + "\n" : t->to_text());
    return 0;
  } catch (const std::exception& e) {
    err << "error: " << e.what() << "\n";
    return 1;
  }
}

int fleet_fabric(const std::string& since, const std::string& until, const std::string& output, bool no_store,
                 const StoreOptions& so, std::ostream& out, std::ostream& err) {
  int64_t since_ns = 0;
  if (!parse_duration(since, since_ns)) {
    err << "error: --since: not a duration like 7d, 12h, 30m: " << since << "\n";
    return 2;
  }
  std::optional<int64_t> to;
  if (!until.empty()) {
    int64_t ns = 0;
    if (!parse_time(until, ns)) {
      err << "error: --until: not an RFC 3339 time: " << until << "\n";
      return 2;
    }
    to = ns;
  }
  try {
    auto store = open_fabric_store(so.db, so.postgres);
    json doc;
    std::string error;
    if (!run_fleet_fabric(*store, since_ns, to, no_store, doc, error)) {
      err << "error: " << error << "\n";
      return 1;
    }
    out << (output == "json" ? doc.dump(1) + "\n" : fabric::findings_text(doc));
    return 0;
  } catch (const std::exception& e) {
    err << "error: " << e.what() << "\n";
    return 1;
  }
}

void setup_fabric_commands(CLI::App& app, int& exit_code) {
  auto* topo = app.add_subcommand("topology", "The fabric topology (docs/fabric.md): import, show, check")
                   ->require_subcommand(1);
  static std::vector<std::string> files;
  static std::string valid_from, at, output = "text";
  static StoreOptions store;
  auto* imp = topo->add_subcommand("import", "Parse ibnetdiscover output and topology YAML; store a new version");
  imp->add_option("files", files, "ibnetdiscover output and/or topology YAML files")->required();
  imp->add_option("--valid-from", valid_from, "RFC 3339 time the topology is valid from (default: the YAML's, else now)");
  add_store_options(imp, store);
  imp->callback([&exit_code] { exit_code = topology_import(files, valid_from, store, std::cout, std::cerr); });
  auto* show = topo->add_subcommand("show", "Print the stored topology valid at a time (default: the newest)");
  show->add_option("--at", at, "RFC 3339 time");
  show->add_option("-o,--output", output, "text (default) or json")->check(CLI::IsMember({"json", "text"}));
  add_store_options(show, store);
  show->callback([&exit_code] { exit_code = topology_show(at, output, store, std::cout, std::cerr); });
  auto* check = topo->add_subcommand("check", "Parse topology files and print a summary or file:line errors");
  check->add_option("files", files, "ibnetdiscover output and/or topology YAML files")->required();
  check->add_option("-o,--output", output, "text (default) or json")->check(CLI::IsMember({"json", "text"}));
  check->callback([&exit_code] {
    fabric::Topology t;
    if (!build_topology(files, t, std::cerr)) {
      exit_code = 1;
      return;
    }
    std::cout << (output == "json" ? t.to_json().dump(1) + "\n" : t.to_text());
    exit_code = 0;
  });

  auto* fleet = app.add_subcommand("fleet", "Fleet-wide analyses over the verdict store")->require_subcommand(1);
  static std::string since = "7d", until;
  static bool no_store = false;
  auto* fab = fleet->add_subcommand("fabric", "Links, switch ports, switches and NVLink domains behind failures across jobs");
  fab->add_option("--since", since, "Window length ending at --until (7d, 24h, 90m)")->capture_default_str();
  fab->add_option("--until", until, "Window end, RFC 3339 (default: the newest stored run)");
  fab->add_option("-o,--output", output, "text (default) or json")->check(CLI::IsMember({"json", "text"}));
  fab->add_flag("--no-store", no_store, "Print the findings without storing them");
  add_store_options(fab, store);
  fab->callback([&exit_code] { exit_code = fleet_fabric(since, until, output, no_store, store, std::cout, std::cerr); });
}

CliRegistrar fabric_registrar("fabric", &setup_fabric_commands);

}  // namespace
}  // namespace attribution::blueprint
