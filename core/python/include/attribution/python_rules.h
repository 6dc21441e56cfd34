// Python rules: *.py files in a rules directory, loaded beside the YAML (docs/rules.md, "Python
// rules"). This library embeds Debian's CPython 3.11; the core only sees the ExternalRule
// records it produces (attribution/rule_extension.h).
//
// Like the core it does no I/O: the caller reads the rule files and the site data beside them and
// passes their text. A rule may import the `attribution` module and a small pure standard-library
// subset (math, re, collections, itertools, functools, ...); it sees no clock, randomness,
// network or files; its module state is frozen after load; each call runs within a time budget
// (counted Python steps) and a memory budget (bytes allocated). A call that raises or exceeds a
// budget becomes a rule report in the verdict — attribute() always returns a verdict.
//
// Thread-safety: every function may be called from any thread. One process-wide lock (a mutex
// plus the GIL) serializes all Python: loading, refiner and field-hook calls, fixtures. Threads
// that scan text never take it (Python does not run per input line), so parallel scanning is not
// serialized; attribute() calls of different sessions are serialized only while a Python rule
// runs. The interpreter is never finalized (rule sets may outlive main's locals).
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "attribution/rule_extension.h"
#include "attribution/rules.h"

namespace attribution::python {

struct PythonBudget {
  uint64_t steps = 2'000'000;          // Python trace events (calls, lines, loop iterations) per call
  int64_t memory_bytes = 64LL << 20;   // bytes a call may allocate (net) beyond what it was given
};

// "*.py".
bool is_python_rule_file(std::string_view name);

// Step 1 for Python: runs every *.py among `files` (once, module level, within the budget) in a
// restricted namespace and adds what it registered (refiners, field hooks, with their fixtures)
// to `records`. A rule's site data are the data files (is_rule_data_file) of its own directory,
// by base name. Errors (SyntaxError with line and column, forbidden constructs, an exception at
// load) go to `records` with file:line:column. Every *.py and data file should also be added as
// a rule source (add_rule_source) by the caller, in its place in the file order.
void read_python_rules(const std::vector<RuleText>& files, RuleRecords& records, const PythonBudget& budget = {});

// load_rules() for YAML and Python rules together: YAML files read by the core, *.py by
// read_python_rules(), data files as sources only; then collected and compiled. The digest covers
// every file, in order. Without any *.py this equals attribution::load_rules(files, cache).
LoadResult load_rules(const std::vector<RuleText>& files, std::string_view compiled_cache = {},
                      const PythonBudget& budget = {});

// Python's version ("3.11.2"), or why the interpreter could not start.
std::string interpreter_version();

}  // namespace attribution::python
