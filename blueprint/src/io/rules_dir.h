// Finds and reads rule files: --rules DIR|FILE, else $ATTRIBUTION_RULES_DIR, else the rules
// installed beside the binary (../share/attribution/rules), else the source tree's rules/.
#pragma once

#include <string>
#include <vector>

#include "attribution/rules.h"

namespace attribution::blueprint {

std::string default_rules_location();
// The subdirectory of a rules directory that holds the message inventory (not rules).
inline constexpr const char* kInventoryDirName = "inventory";

// Reads every *.yaml under `location` (a directory, sorted by name, recursively, except its
// inventory/ subdirectory) or the file itself.
// Names in RuleText are the paths as given. Returns false with `error` on I/O problems.
bool read_rule_files(const std::string& location, std::vector<RuleText>& out, std::string& error);

// Reads <rules_location>/inventory/*.yaml (sorted by name); names are the paths.
bool read_inventory_files(const std::string& rules_location, std::vector<RuleText>& out, std::string& error);

// Where compiled rule databases are cached: $ATTRIBUTION_CACHE_DIR (empty disables), else
// $XDG_CACHE_HOME/attribution, else ~/.cache/attribution.
std::string compiled_cache_dir();

// Reads and loads (using the compiled-database cache); prints nothing. On failure `errors` holds one message per problem.
std::shared_ptr<const RuleSet> load_rules_from(const std::string& location, std::vector<std::string>& errors,
                                               std::vector<std::string>* warnings = nullptr);

}  // namespace attribution::blueprint
