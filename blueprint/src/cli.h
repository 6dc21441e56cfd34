// Subcommand registry: each cli_*.cc adds its subcommands to the app through a static
// CliRegistrar, so areas (run/watch, web, ...) extend the CLI without editing one shared file.
// Only cli_*.cc files include CLI11 (it is slow to compile).
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace CLI {
class App;
}

namespace attribution::blueprint {

// Adds subcommands to `app`; their callbacks store the process exit code in `exit_code`.
using CommandSetup = void (*)(CLI::App& app, int& exit_code);

std::vector<std::pair<std::string, CommandSetup>>& cli_registry();

struct CliRegistrar {
  CliRegistrar(const char* name, CommandSetup setup) { cli_registry().emplace_back(name, setup); }
};

int run_cli(int argc, char** argv);

}  // namespace attribution::blueprint
