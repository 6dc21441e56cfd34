// The rules directory, as both binaries find, read and compile it (one search order, one file
// naming, one compiled-database cache), so the blueprint and the service load the same rules and
// report the same rules digest.
//
// Thread-safety: every function here may be called from any thread; they share no state (the
// cache is files written by rename, so concurrent processes are safe too).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "attribution/rules.h"

namespace attribution::edge {

// The subdirectory of a rules directory that holds the message inventory (not rules).
inline constexpr const char* kInventoryDirName = "inventory";

// Where rules are when nothing names them (no flag, no config key), first that exists:
//   1. $ATTRIBUTION_RULES_DIR (non-empty)
//   2. <binary dir>/../share/attribution/rules   (an installed prefix: bin/ + share/)
//   3. <binary dir>/rules                         (rules copied beside the binary)
//   4. the checkout the binary was built from (<source>/rules): a binary run from its build tree
//   5. /usr/share/attribution/rules
// Returns the first candidate that is a directory; if none is, the checkout's path (so the error
// that follows names a real place). Never empty.
std::string default_rules_location();

// `configured` when not empty (a flag or config value), else default_rules_location().
std::string resolve_rules_location(const std::string& configured);

// Reads every *.yaml/*.yml, *.py and rule data file (*.csv, *.json: is_rule_data_file) under `location` (a directory: recursively, sorted by path, except its
// inventory/ subdirectory) or the file itself. Names in RuleText are "<dir name>/<path inside it>"
// (e.g. "rules/gpu.yaml") whatever the directory's location, or the file's name for a single
// file, so the rules digest does not depend on where the rules are installed.
// Returns false with `error` ("<path>: ...") on I/O problems or when there are no rule files.
bool read_rule_files(const std::string& location, std::vector<RuleText>& out, std::string& error);

// Reads <rules_location>/inventory/*.yaml (sorted by name); names are the paths.
bool read_inventory_files(const std::string& rules_location, std::vector<RuleText>& out, std::string& error);

// Where compiled rule databases are cached: $ATTRIBUTION_CACHE_DIR (set but empty disables), else
// $XDG_CACHE_HOME/attribution, else ~/.cache/attribution; "" when none applies (no caching).
std::string compiled_cache_dir();

// Reads and loads the rules at `location`, using the compiled-database cache (only the first load
// after a rules change compiles; a stale or foreign cache entry is detected by the core and
// ignored). Prints nothing. Returns the rules, or nullptr with one message per problem in
// `errors` (file:line:column where the loader knows it). Warnings are appended when asked for.
std::shared_ptr<const RuleSet> load_rules_from(const std::string& location, std::vector<std::string>& errors,
                                               std::vector<std::string>* warnings = nullptr);

}  // namespace attribution::edge
