// `rules lint|test|inventory|patterns [LOCATION]` for rule authors.
#pragma once

#include <iosfwd>
#include <string>

namespace attribution::blueprint {

int run_rules_lint(const std::string& location, const std::string& output, std::ostream& out, std::ostream& err);
int run_rules_test(const std::string& location, const std::string& output, std::ostream& out, std::ostream& err);
// Runs every message inventory example (RULES/inventory/*.yaml) through the rules; exit 1 on a failure.
int run_rules_inventory(const std::string& location, const std::string& output, bool verbose, std::ostream& out,
                        std::ostream& err);
// One pattern per line (RE2/PCRE syntax, usable with `rg -f` and `grep -P -f`).
int run_rules_patterns(const std::string& location, std::ostream& out, std::ostream& err);

}  // namespace attribution::blueprint
