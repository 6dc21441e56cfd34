#include "commands/rules_cmd.h"

#include <fmt/format.h>

#include <algorithm>

#include <iostream>
#include <nlohmann/json.hpp>

#include "commands/analyze.h"
#include "attribution/edge/rules_dir.h"

namespace attribution::blueprint {

int run_rules_lint(const std::string& location, const std::string& output, std::ostream& out, std::ostream& err) {
  std::vector<std::string> errors, warnings;
  auto rules = edge::load_rules_from(edge::resolve_rules_location(location), errors, &warnings);
  if (output == "json") {
    nlohmann::json j = {{"ok", rules != nullptr}, {"errors", errors}, {"warnings", warnings}};
    if (rules) {
      RuleSetInfo i = describe(*rules);
      j["summary"] = {{"digest", i.digest}, {"files", i.files}, {"extractors", i.extractors},
                      {"metric_extractors", i.metric_extractors}, {"catalogs", i.catalogs},
                      {"catalog_entries", i.catalog_entries}, {"refiners", i.refiners}, {"fixtures", i.fixtures},
                      {"prefilter_patterns", i.prefilter_patterns}, {"exact_scan_patterns", i.exact_scan_patterns},
                      {"python_refiners", i.external_refiners},
                      {"python_field_hooks", i.field_hooks}};
    }
    out << j.dump(2) << "\n";
    return rules ? kExitOk : kExitError;
  }
  for (const auto& w : warnings) err << "warning: " << w << "\n";
  for (const auto& e : errors) err << "error: " << e << "\n";
  if (!rules) {
    err << fmt::format("{} error(s)\n", errors.size());
    return kExitError;
  }
  RuleSetInfo i = describe(*rules);
  out << fmt::format(
      "ok: {} files, {} extractors, {} metric extractors, {} catalogs ({} entries), {} refiners, {} fixtures, "
      "{} prefilter patterns, {} Python refiners, {} Python field hooks\n{}\n",
      i.files, i.extractors, i.metric_extractors, i.catalogs, i.catalog_entries, i.refiners, i.fixtures,
      i.prefilter_patterns, i.external_refiners, i.field_hooks, i.digest);
  return kExitOk;
}

int run_rules_test(const std::string& location, const std::string& output, std::ostream& out, std::ostream& err) {
  std::vector<std::string> errors;
  auto rules = edge::load_rules_from(edge::resolve_rules_location(location), errors);
  if (!rules) {
    for (const auto& e : errors) err << "error: " << e << "\n";
    return kExitError;
  }
  auto results = run_fixtures(*rules);
  size_t passed = 0, failed = 0;
  nlohmann::json failures = nlohmann::json::array();
  for (const auto& r : results) {
    if (r.passed) {
      ++passed;
      continue;
    }
    ++failed;
    if (output == "json") {
      failures.push_back({{"file", r.file}, {"line", r.line}, {"rule", r.rule_id}, {"message", r.message}});
    } else {
      out << fmt::format("FAIL {}:{}: {}: {}\n", r.file, r.line, r.rule_id, r.message);
    }
  }
  if (output == "json") {
    out << nlohmann::json{{"passed", passed}, {"failed", failed}, {"failures", failures}}.dump(2) << "\n";
  } else {
    out << fmt::format("{} passed, {} failed\n", passed, failed);
  }
  return failed == 0 ? kExitOk : kExitError;
}

int run_rules_inventory(const std::string& location_in, const std::string& output, bool verbose, std::ostream& out,
                        std::ostream& err) {
  std::string location = edge::resolve_rules_location(location_in);
  std::vector<std::string> errors;
  auto rules = edge::load_rules_from(location, errors);
  if (!rules) {
    for (const auto& e : errors) err << "error: " << e << "\n";
    return kExitError;
  }
  std::vector<RuleText> files;
  std::string error;
  if (!edge::read_inventory_files(location, files, error)) {
    err << "error: " << error << "\n";
    return kExitError;
  }
  InventoryResult result = check_inventory(*rules, files);
  if (output == "json") {
    nlohmann::json producers = nlohmann::json::array();
    for (const auto& p : result.producers) {
      nlohmann::json failures = nlohmann::json::array(), notes = nlohmann::json::array();
      for (const auto& e : p.entries) {
        nlohmann::json j = {{"file", e.file}, {"line", e.line}, {"id", e.id}, {"status", e.status},
                            {"produced", e.produced}};
        if (!e.passed) {
          j["message"] = e.message;
          failures.push_back(j);
        } else if (e.status == "ignored" && !e.produced.empty()) {
          notes.push_back(j);
        }
      }
      producers.push_back({{"producer", p.producer}, {"file", p.file}, {"source", p.source}, {"messages", p.messages},
                           {"matched", p.matched}, {"ignored", p.ignored}, {"failures", failures},
                           {"ignored_with_symptoms", notes}});
    }
    std::vector<std::string> errs;
    for (const auto& e : result.errors) errs.push_back(e.to_string());
    out << nlohmann::json{{"ok", result.ok()}, {"errors", errs}, {"producers", producers}}.dump(2) << "\n";
    return result.ok() ? kExitOk : kExitError;
  }
  for (const auto& e : result.errors) err << "error: " << e.to_string() << "\n";
  size_t messages = 0, matched = 0, ignored = 0, failures = 0;
  for (const auto& p : result.producers) {
    out << fmt::format("{} ({}): {} messages, {} matched, {} ignored, {} failures\n", p.producer, p.file, p.messages,
                       p.matched, p.ignored, p.failures);
    messages += p.messages, matched += p.matched, ignored += p.ignored, failures += p.failures;
    for (const auto& e : p.entries) {
      if (!e.passed) {
        out << fmt::format("  FAIL {}:{}: {} ({}): {}\n", e.file, e.line, e.id, e.status, e.message);
      } else if (e.status == "ignored" && !e.produced.empty()) {
        // Allowed (no cause), but said: a victim/context symptom still reaches the timeline.
        out << fmt::format("  note {}:{}: {} (ignored) produces {}\n", e.file, e.line, e.id, fmt::join(e.produced, ", "));
      } else if (verbose) {
        out << fmt::format("  ok   {}:{}: {} ({}){}{}\n", e.file, e.line, e.id, e.status,
                           e.produced.empty() ? "" : " -> ", fmt::join(e.produced, ", "));
      }
    }
  }
  out << fmt::format("total: {} producers, {} messages, {} matched, {} ignored, {} failures{}\n",
                     result.producers.size(), messages, matched, ignored, failures,
                     result.errors.empty() ? "" : fmt::format(", {} inventory error(s)", result.errors.size()));
  return result.ok() ? kExitOk : kExitError;
}

namespace {

// `pattern` with every named group "(?P<name>...)" / "(?<name>...)" made non-capturing "(?:...)":
// the same matches, and no group names for rg to reject when it joins the patterns of `rg -f`
// into one regex (the catalogue repeats names such as rank and node across patterns). Escapes and
// character classes are copied as they are.
std::string plain_groups(const std::string& pattern) {
  std::string out;
  out.reserve(pattern.size());
  size_t i = 0;
  while (i < pattern.size()) {
    char c = pattern[i];
    if (c == '\\' && i + 1 < pattern.size()) {
      out.append(pattern, i, 2);
      i += 2;
      continue;
    }
    if (c == '[') {  // a class: up to the first unescaped ']' that is not its first member
      size_t j = i + 1;
      if (j < pattern.size() && pattern[j] == '^') ++j;
      if (j < pattern.size() && pattern[j] == ']') ++j;
      while (j < pattern.size() && pattern[j] != ']') j += pattern[j] == '\\' ? 2 : 1;
      j = std::min(j + 1, pattern.size());
      out.append(pattern, i, j - i);
      i = j;
      continue;
    }
    size_t name_at = pattern.compare(i, 4, "(?P<") == 0 ? i + 4
                     : (pattern.compare(i, 3, "(?<") == 0 && i + 3 < pattern.size() && pattern[i + 3] != '=' &&
                        pattern[i + 3] != '!')
                         ? i + 3
                         : std::string::npos;
    if (name_at != std::string::npos) {
      size_t close = pattern.find('>', name_at);
      if (close != std::string::npos) {
        out += "(?:";
        i = close + 1;
        continue;
      }
    }
    out += c;
    ++i;
  }
  return out;
}

}  // namespace

int run_rules_patterns(const std::string& location, std::ostream& out, std::ostream& err) {
  std::vector<std::string> errors;
  auto rules = edge::load_rules_from(edge::resolve_rules_location(location), errors);
  if (!rules) {
    for (const auto& e : errors) err << "error: " << e << "\n";
    return kExitError;
  }
  for (const auto& p : list_patterns(*rules)) {
    out << (p.case_insensitive ? "(?i)" : "") << plain_groups(p.pattern) << "\n";
  }
  return kExitOk;
}

}  // namespace attribution::blueprint
