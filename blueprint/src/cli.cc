// The blueprint's command line: the app, the registry runner, and the core commands
// (analyze, rules lint|test|inventory|patterns, version).
#include "cli.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <iostream>

#include "attribution/engine.h"
#include "commands/analyze.h"
#include "commands/rules_cmd.h"

namespace attribution::blueprint {

std::vector<std::pair<std::string, CommandSetup>>& cli_registry() {
  static std::vector<std::pair<std::string, CommandSetup>> registry;
  return registry;
}

namespace {

void setup_core_commands(CLI::App& app, int& exit_code) {
  static AnalyzeOptions analyze;
  auto* a = app.add_subcommand("analyze", "Attribute one workload bundle (SPEC §7) and print its verdict");
  a->add_option("bundle", analyze.bundle, "Bundle directory (holds workload.yaml)")->required();
  a->add_option("-o,--output", analyze.output, "json (default) or text")->check(CLI::IsMember({"json", "text"}));
  a->add_option("--rules", analyze.rules, "Rules directory or file (default: installed rules)")
      ->envname("ATTRIBUTION_RULES_DIR");
  a->add_option("--service-url", analyze.service_url, "Use attribution-service at this URL instead of the embedded engine")
      ->envname("ATTRIBUTION_SERVICE_URL");
  a->add_option("--token", analyze.token, "Bearer token for the service")->envname("ATTRIBUTION_SERVICE_TOKEN");
  a->add_flag("--service-keep-session", analyze.keep_session,
              "Keep the job's session and verdict in the service's store (a re-run then returns the stored verdict "
              "instead of attributing again)");
  a->add_flag("--service-stats", analyze.service_stats,
              "Print the service client's counts to stderr: batches sent, acknowledged, replayed; requests retried");
  a->add_option("-j,--threads", analyze.threads, "Scanner threads (default: all cores)");
  a->add_option("--chunk-bytes", analyze.chunk_bytes, "Bytes scanned per chunk (default 2 MiB: the chunk stays in cache between read and scan)")->check(CLI::Range(4096, 1 << 30));
  a->callback([&exit_code] {
    analyze.free_session = false;  // the process ends after the verdict is printed
    exit_code = run_analyze(analyze, std::cout, std::cerr);
  });

  static std::string location, output = "text";
  auto* rules = app.add_subcommand("rules", "Work with rule files")->require_subcommand(1);
  auto* lint = rules->add_subcommand("lint", "Load and validate rules; errors name file:line:column");
  lint->add_option("location", location, "Rules directory or file (default: installed rules)");
  lint->add_option("-o,--output", output, "text or json")->check(CLI::IsMember({"json", "text"}));
  lint->callback([&exit_code] { exit_code = run_rules_lint(location, output, std::cout, std::cerr); });
  auto* test = rules->add_subcommand("test", "Run every rule's fixtures through the real scanner");
  test->add_option("location", location, "Rules directory or file (default: installed rules)");
  test->add_option("-o,--output", output, "text or json")->check(CLI::IsMember({"json", "text"}));
  test->callback([&exit_code] { exit_code = run_rules_test(location, output, std::cout, std::cerr); });
  static bool verbose = false;
  auto* inventory = rules->add_subcommand(
      "inventory", "Check the message inventory (RULES/inventory/*.yaml): each example against the rules");
  inventory->add_option("location", location, "Rules directory (default: installed rules)");
  inventory->add_option("-o,--output", output, "text or json")->check(CLI::IsMember({"json", "text"}));
  inventory->add_flag("-v,--verbose", verbose, "List every entry, with the symptoms its example produces");
  inventory->callback(
      [&exit_code] { exit_code = run_rules_inventory(location, output, verbose, std::cout, std::cerr); });
  auto* patterns = rules->add_subcommand("patterns", "Print every extractor pattern (for rg -f / grep -P -f)");
  patterns->add_option("location", location, "Rules directory or file (default: installed rules)");
  patterns->callback([&exit_code] { exit_code = run_rules_patterns(location, std::cout, std::cerr); });

  auto* version = app.add_subcommand("version", "Print the engine version");
  version->callback([&exit_code] {
    std::cout << "attribution-blueprint " << engine_version() << "\n";
    exit_code = 0;
  });
}

CliRegistrar core_registrar("core", &setup_core_commands);

}  // namespace

int run_cli(int argc, char** argv) {
  CLI::App app{"attribution-blueprint: find out why a distributed GPU job failed"};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string(engine_version()));
  int exit_code = 0;
  auto registry = cli_registry();
  std::sort(registry.begin(), registry.end());
  for (const auto& [name, setup] : registry) setup(app, exit_code);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return kExitUsage;  // CLI11 uses 100+; our usage errors are 2
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << "\n";
    return kExitError;
  }
  return exit_code;
}

}  // namespace attribution::blueprint
