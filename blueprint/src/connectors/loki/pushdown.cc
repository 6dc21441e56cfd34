#include "connectors/loki/pushdown.h"

#include <fmt/format.h>
#include <re2/re2.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <set>

#include "attribution/rules.h"
#include "connectors/files/template.h"

namespace attribution::blueprint {

std::vector<CatalogPattern> catalog_patterns(const std::vector<RuleText>& files, std::string& error) {
  std::vector<CatalogPattern> out;
  for (const auto& f : files) {
    try {
      YAML::Node doc = YAML::Load(f.text);
      YAML::Node xs = doc["extractors"];
      if (!xs || !xs.IsSequence()) continue;
      for (const auto& x : xs) {
        if (!x["pattern"]) continue;
        CatalogPattern p;
        p.id = x["id"] ? x["id"].as<std::string>() : "";
        p.pattern = tolerate_blanks(x["pattern"].as<std::string>());  // as the engine compiles it
        p.atom_pattern = tolerate_blanks(x["pattern"].as<std::string>(), std::string_view(&kBlankRunMarker, 1));
        p.case_insensitive = x["case_insensitive"] && x["case_insensitive"].as<bool>();
        if (YAML::Node kinds = x["kinds"]; kinds && kinds.IsSequence()) {
          for (const auto& k : kinds)
            if (auto kind = parse_observation_kind(k.as<std::string>())) p.kinds_mask |= 1u << static_cast<int>(*kind);
        }
        // The rows an extractor reads above its line (`context:`) must reach the engine too: each
        // is a pattern of its own for the filter, with the extractor's kinds and case.
        std::vector<CatalogPattern> context;
        if (YAML::Node c = x["context"]; c && c.IsMap()) {
          auto add = [&](const YAML::Node& v, const char* what) {
            if (!v || !v.IsScalar()) return;
            CatalogPattern row = p;
            row.id = fmt::format("{} (context {})", p.id, what);
            row.pattern = tolerate_blanks(v.as<std::string>());
            row.atom_pattern = tolerate_blanks(v.as<std::string>(), std::string_view(&kBlankRunMarker, 1));
            context.push_back(std::move(row));
          };
          if (YAML::Node rows = c["rows"]; rows && rows.IsSequence())
            for (const auto& r : rows) add(r, "row");
          add(c["require"], "require");
          add(c["stop"], "stop");
        }
        out.push_back(std::move(p));
        for (auto& row : context) out.push_back(std::move(row));
      }
    } catch (const YAML::Exception& e) {
      error = fmt::format("{}: {}", f.name, e.what());
      return {};
    }
  }
  return out;
}

std::string to_go_re2(const std::string& pattern) {
  std::string out;
  out.reserve(pattern.size());
  for (size_t i = 0; i < pattern.size(); ++i) {
    char c = pattern[i];
    if (c == '\\' && i + 1 < pattern.size()) {
      out += c;
      out += pattern[++i];
      continue;
    }
    if (c == '(' && pattern.compare(i, 4, "(?P<") == 0) {
      size_t close = pattern.find('>', i + 4);
      if (close != std::string::npos) {
        out += "(?:";
        i = close;
        continue;
      }
    }
    out += c;
  }
  return out;
}

namespace {

std::string escape_atom(const std::string& atom) {
  std::string out;
  for (unsigned char c : atom) {
    if (c == static_cast<unsigned char>(kBlankRunMarker)) {
      out += " +";
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c < 0x20 || c == 0x7f) {
      out += fmt::format("\\x{:02x}", c);
    } else {
      out += regex_escape(std::string(1, static_cast<char>(c)));
    }
  }
  return out;
}

}  // namespace

Pushdown build_pushdown(const std::vector<CatalogPattern>& patterns, ObservationKind kind, const std::string& mode) {
  Pushdown pd;
  pd.mode = mode;
  unsigned bit = 1u << static_cast<int>(kind);
  std::vector<const CatalogPattern*> use;
  for (const auto& p : patterns)
    if (p.kinds_mask == 0 || (p.kinds_mask & bit)) use.push_back(&p);
  pd.patterns = use.size();
  if (mode == "off") return pd;
  if (use.empty()) {
    pd.mode = "off";
    pd.note = "no extractor applies to this kind";
    return pd;
  }
  if (mode == "patterns") {
    std::string re;
    for (const auto* p : use) {
      if (!re.empty()) re += '|';
      std::string g = to_go_re2(p->pattern);
      re += p->case_insensitive ? "(?i:" + g + ")" : "(?:" + g + ")";
    }
    Pushdown lit = build_pushdown(patterns, kind, "literals");
    if (lit.mode == "literals") {
      pd.prefilter = std::move(lit.regex);
      pd.atoms = lit.atoms;
    } else {
      pd.note = "no literal prefilter: " + lit.note;
    }
    pd.regex = std::move(re);
    return pd;
  }
  // literals: per pattern, the required atoms (FilteredRE2's prefilter analysis), then a greedy
  // reduction to the most specific atoms that still cover the pattern: a set S is enough when the
  // pattern cannot match with every atom outside S present (probed with AllPotentials). This keeps
  // "nvrm: xid (pci:" and drops a generic " in " that the same pattern also requires.
  std::vector<std::string> atoms;
  for (const auto* p : use) {
    std::vector<std::string> mine;
    const std::string& for_atoms = p->atom_pattern.empty() ? p->pattern : p->atom_pattern;
    if (!required_atoms(for_atoms, p->case_insensitive, mine)) {
      pd.mode = "off";
      pd.note = fmt::format("{} has no required literal", p->id);
      return pd;
    }
    atoms.insert(atoms.end(), mine.begin(), mine.end());
  }
  // Minimise: an atom that contains another atom adds nothing to an OR.
  std::sort(atoms.begin(), atoms.end(), [](const auto& a, const auto& b) {
    return a.size() != b.size() ? a.size() < b.size() : a < b;
  });
  atoms.erase(std::unique(atoms.begin(), atoms.end()), atoms.end());
  std::vector<std::string> kept;
  for (const auto& a : atoms) {
    bool covered = false;
    for (const auto& k : kept)
      if (a.find(k) != std::string::npos) {
        covered = true;
        break;
      }
    if (!covered) kept.push_back(a);
  }
  std::sort(kept.begin(), kept.end());
  std::string re = "(?i)";
  for (size_t i = 0; i < kept.size(); ++i) {
    if (i) re += '|';
    re += escape_atom(kept[i]);
  }
  pd.atoms = kept.size();
  pd.regex = std::move(re);
  return pd;
}

std::string logql_regex_filter(const std::string& regex) {
  if (regex.find('`') == std::string::npos) return "|~ `" + regex + "`";
  return "|~ \"" + quote_escape(regex) + "\"";
}

std::string logql_line_filters(const Pushdown& pushdown) {
  if (pushdown.regex.empty()) return "";
  if (pushdown.prefilter.empty()) return logql_regex_filter(pushdown.regex);
  return logql_regex_filter(pushdown.prefilter) + " " + logql_regex_filter(pushdown.regex);
}

}  // namespace attribution::blueprint
