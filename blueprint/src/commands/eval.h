// `attribution-blueprint eval DIR...`: a corpus of labelled incidents (bundles with an
// expected.yaml answer key, tests/real/README.md) as a regression suite for the rules. Every case
// runs through the embedded engine exactly as `analyze` does; the verdicts are judged against their
// answer keys and summarised (accuracy, confident-wrong, culprit hits, domain confusion, precision
// per quality level, tags, and the error-like lines no rule recognised across the corpus).
#pragma once

#include <iosfwd>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

namespace attribution::blueprint {

struct EvalOptions {
  std::vector<std::string> dirs;
  std::string output = "text";  // text | json
  std::string rules;            // empty = default location
  unsigned jobs = 0;            // cases analysed in parallel (0 = all cores); each case scans on one thread
  double min_accuracy = -1;         // percent; < 0 = not checked
  long max_confident_wrong = -1;    // < 0 = not checked
  double min_culprit_rate = -1;     // percent of cases with a culprit key; < 0 = not checked
};

// The answer key of one case (expected.yaml).
struct Expectation {
  std::vector<std::string> domains;
  std::vector<std::string> outcomes;
  std::string quality_floor;    // empty = insufficient
  std::string quality_ceiling;  // empty = definitive
  bool undetermined = false;
  std::vector<std::string> culprit_nodes;
  std::vector<int> culprit_ranks;
  std::vector<std::string> tags;
  std::string note, widened;
};

// Parses expected.yaml. Unknown keys, unknown domains or quality levels, outcomes outside the
// domain taxonomy and wrong types are errors "<file>:<line>:<column>: <message>".
bool parse_expectation(const std::string& text, const std::string& file, Expectation& out, std::string& error);

// What a verdict said, as far as the judgement needs it.
struct VerdictDigest {
  std::string domain, outcome, quality, root_symptom, root_node;
  int root_rank = -1;
  std::set<int> root_ranks;  // the root group's ranks
  std::vector<std::string> affected_nodes;
  std::vector<std::string> candidate_nodes;
  std::vector<int> candidate_ranks;
};
VerdictDigest digest_verdict(const nlohmann::json& verdict);

struct Judgement {
  bool correct = false;
  bool confident_wrong = false;
  int culprit_hit = -1;  // -1: the case names no culprit; 0 miss; 1 hit
  std::vector<std::string> reasons;  // why it is wrong
};
Judgement judge(const Expectation& expected, const VerdictDigest& got);

int run_eval(const EvalOptions& options, std::ostream& out, std::ostream& err);

}  // namespace attribution::blueprint
