// `eval DIR...`: the labelled-incident corpus as a regression suite for the rules (commands/eval.h).
#include <CLI/CLI.hpp>
#include <iostream>

#include "cli.h"
#include "commands/eval.h"

namespace attribution::blueprint {
namespace {

void setup_eval_command(CLI::App& app, int& exit_code) {
  static EvalOptions eval;
  auto* e = app.add_subcommand("eval", "Run labelled cases (bundles with expected.yaml) and score the verdicts");
  e->add_option("dirs", eval.dirs, "Case directories, or directories holding cases (e.g. tests/real/)")->required();
  e->add_option("-o,--output", eval.output, "text (default) or json")->check(CLI::IsMember({"json", "text"}));
  e->add_option("--rules", eval.rules, "Rules directory or file (default: installed rules)")
      ->envname("ATTRIBUTION_RULES_DIR");
  e->add_option("-j,--jobs", eval.jobs, "Cases analysed in parallel (default: all cores)");
  e->add_option("--min-accuracy", eval.min_accuracy, "Exit 1 when fewer than PCT % of the cases are correct")
      ->check(CLI::Range(0.0, 100.0));
  e->add_option("--max-confident-wrong", eval.max_confident_wrong,
                "Exit 1 when more than N verdicts are definitive and wrong")
      ->check(CLI::NonNegativeNumber);
  e->add_option("--min-culprit-rate", eval.min_culprit_rate,
                "Exit 1 when fewer than PCT % of the cases naming a culprit hit it")
      ->check(CLI::Range(0.0, 100.0));
  e->callback([&exit_code] { exit_code = run_eval(eval, std::cout, std::cerr); });
}

CliRegistrar eval_registrar("eval", &setup_eval_command);

}  // namespace
}  // namespace attribution::blueprint
