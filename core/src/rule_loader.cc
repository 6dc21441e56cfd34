// YAML rule files → RuleSet. Every message carries file:line:column (yaml-cpp marks are 0-based).
#include <fmt/format.h>
#include <openssl/evp.h>
#include <re2/filtered_re2.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <cstdlib>
#include <deque>
#include <set>
#include <tuple>

#include "attribution/text.h"
#include "vectorscan_form.h"
#include "rule_set.h"

namespace attribution {

std::string LoadMessage::to_string() const {
  return fmt::format("{}:{}:{}: {}", file, line, column, message);
}

bool glob_match(const std::string& glob, const std::string& id) {
  if (!glob.empty() && glob.back() == '*') {
    return id.compare(0, glob.size() - 1, glob, 0, glob.size() - 1) == 0;
  }
  return glob == id;
}

SymptomAttrs RuleSet::attributes(const std::string& symptom_id,
                                 const Fields& fields) const {
  auto cat = fields.find("_catalog");
  if (cat != fields.end()) {
    auto key = fields.find("_catalog_key");
    for (const auto& c : catalogs) {
      if (c.id != cat->second) continue;
      if (key != fields.end()) {
        auto e = c.entries.find(key->second);
        if (e != c.entries.end()) return e->second;
      }
      if (c.fallback) return *c.fallback;
    }
  }
  auto exact = symptom_exact.find(symptom_id);
  if (exact != symptom_exact.end()) return exact->second;
  for (const auto& [prefix, attrs] : symptom_prefix) {
    if (glob_match(prefix, symptom_id)) return attrs;
  }
  SymptomAttrs unknown;
  unknown.label = symptom_id;
  return unknown;
}

namespace {

constexpr uint32_t kTextKindsMask =
    (1u << static_cast<int>(ObservationKind::kAppLog)) |
    (1u << static_cast<int>(ObservationKind::kSyslog)) |
    (1u << static_cast<int>(ObservationKind::kNodeReport)) |
    (1u << static_cast<int>(ObservationKind::kScheduler)) |
    (1u << static_cast<int>(ObservationKind::kK8sEvent));

// Canonical fabric location keys (docs/fabric.md §2).
const std::set<std::string> kFabricKeys = {"hca",        "hca_port", "iface",   "pci",     "peer",
                                           "peer_gid",   "peer_lid", "local_gid", "switch_guid",
                                           "switch_port", "switch", "counter", "value",   "nvswitch",
                                           "nvlink",     "fm"};
const std::set<std::string> kDomains = {"gpu",     "network",     "node",    "storage",
                                        "scheduler", "application", "unknown", "none"};
const std::set<std::string> kBuiltins = {"xid_followups",     "shared_software_xid",
                                         "peer_convergence",  "ib_error_at_start",
                                         "late_cuda_oom",     "seqnum_straggler",
                                         "scheduler_state",   "repeat_gpu_fault",
                                         "slurm_teardown",    "victim_domain",
                                         "version_outlier",   "rank_census",
                                         "cuda_oom_held_elsewhere"};

}  // namespace

// Real logs widen blanks (column alignment, a paste through a terminal, two spaces after a
// colon): a literal space in a pattern (outside a character class, not already quantified)
// matches a run of spaces. "exit code 1" also matches "exit  code   1".
std::string tolerate_blanks(std::string_view pattern, std::string_view blank_run) {
  std::string out;
  out.reserve(pattern.size() + 8);
  bool in_class = false;
  for (size_t i = 0; i < pattern.size(); ++i) {
    char c = pattern[i];
    if (c == '\\') {
      out += c;
      if (i + 1 < pattern.size()) out += pattern[++i];
      continue;
    }
    if (in_class) {
      if (c == ']') in_class = false;
      out += c;
      continue;
    }
    if (c == '[') {
      in_class = true;
      out += c;
      if (i + 1 < pattern.size() && pattern[i + 1] == '^') out += pattern[++i];
      if (i + 1 < pattern.size() && pattern[i + 1] == ']') out += pattern[++i];  // literal ']' first
      continue;
    }
    if (c != ' ') {
      out += c;
      continue;
    }
    size_t j = i;
    while (j < pattern.size() && pattern[j] == ' ') ++j;
    bool quantified = j < pattern.size() && (pattern[j] == '*' || pattern[j] == '+' || pattern[j] == '?' || pattern[j] == '{');
    if (quantified) {
      out.append(j - i, ' ');
    } else {
      out.append(j - i - 1, ' ');
      out += blank_run;
    }
    i = j - 1;
  }
  return out;
}

bool required_atoms(const std::string& pattern, bool case_insensitive, std::vector<std::string>& atoms) {
  atoms.clear();
  RE2::Options o;  // UTF-8, as a log store reads the pattern; callers scanning bytes skip non-ASCII atoms
  o.set_case_sensitive(!case_insensitive);
  o.set_log_errors(false);
  re2::FilteredRE2 filter(3);
  int id = 0;
  if (filter.Add(pattern, o, &id) != RE2::NoError) return false;
  std::vector<std::string> mine;
  filter.Compile(&mine);
  std::vector<int> hits;
  filter.AllPotentials({}, &hits);
  if (mine.empty() || !hits.empty()) return false;  // some match needs none of the literals
  // Greedy reduction, shortest atoms first: an atom is dropped when the pattern still cannot match
  // with every dropped atom present and the kept ones absent (this keeps "nvrm: xid (pci:" and drops
  // a generic " in " the same pattern also requires).
  std::vector<size_t> order(mine.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return mine[a].size() != mine[b].size() ? mine[a].size() < mine[b].size() : a < b;
  });
  std::vector<bool> kept(mine.size(), true);
  for (size_t cand : order) {
    kept[cand] = false;
    std::vector<int> present;
    for (size_t i = 0; i < mine.size(); ++i)
      if (!kept[i]) present.push_back(static_cast<int>(i));
    hits.clear();
    filter.AllPotentials(present, &hits);
    if (!hits.empty()) kept[cand] = true;  // needed
  }
  for (size_t i = 0; i < mine.size(); ++i)
    if (kept[i]) atoms.push_back(mine[i]);
  return true;
}

bool blanks_collapse_safe(std::string_view pattern) {
  // What the last atom can match: 0 no blank, 1 a blank among others ('.', [^x], \S-free
  // classes with a blank), 2 only blanks (' ', '\ ', \s, [ \t]).
  int prev_kind = 0;
  bool prev_required = false;  // the last atom must match at least once
  size_t i = 0;
  while (i < pattern.size()) {
    char c = pattern[i];
    int kind = 0;
    if (c == '\\') {
      char e = i + 1 < pattern.size() ? pattern[i + 1] : '\0';
      kind = e == ' ' || e == 's' ? 2 : (e == 'W' || e == 'D' || e == 'H' ? 1 : 0);
      i += 2;
    } else if (c == '[') {
      size_t j = i + 1;
      bool negated = j < pattern.size() && pattern[j] == '^';
      if (negated) ++j;
      bool blank = false, other = false;
      bool first = true;
      while (j < pattern.size() && (first || pattern[j] != ']')) {
        first = false;
        if (pattern[j] == '\\' && j + 1 < pattern.size()) {
          char e = pattern[j + 1];
          if (e == 's' || e == ' ' || e == 't') blank = true;
          else other = true;
          if (negated && e == 'S') blank = true;
          j += 2;
          continue;
        }
        if (pattern.compare(j, 9, "[:space:]") == 0 || pattern.compare(j, 9, "[:blank:]") == 0) {
          blank = true;
          j += 9;
          continue;
        }
        if (pattern[j] == ' ') blank = true;
        else other = true;
        ++j;
      }
      i = j + 1;
      kind = negated ? (blank ? 0 : 1) : (blank ? (other ? 1 : 2) : 0);
    } else if (c == ' ') {
      kind = 2;
      ++i;
    } else if (c == '.') {
      kind = 1;
      ++i;
    } else if (c == '(' || c == ')' || c == '|' || c == '^' || c == '$') {
      // Group edges and alternatives: what follows does not sit next to the last atom for sure.
      if (c == '(' && i + 1 < pattern.size() && pattern[i + 1] == '?') {
        size_t j = i + 2;
        while (j < pattern.size() && pattern[j] != ':' && pattern[j] != ')' && pattern[j] != '<' &&
               pattern[j] != '=' && pattern[j] != '!' && pattern[j] != 'P')
          ++j;
        i = j;  // the group's kind marker is read as an ordinary atom next
      }
      ++i;
      prev_kind = 0;
      prev_required = false;
      continue;
    } else {
      ++i;
    }
    // The atom's quantifier.
    size_t min = 1;
    if (i < pattern.size()) {
      char q = pattern[i];
      if (q == '*' || q == '?') {
        min = 0;
        ++i;
      } else if (q == '+') {
        ++i;
      } else if (q == '{') {
        size_t j = i + 1;
        size_t m = 0;
        bool digits = false;
        while (j < pattern.size() && pattern[j] >= '0' && pattern[j] <= '9') {
          m = m * 10 + static_cast<size_t>(pattern[j] - '0');
          digits = true;
          ++j;
        }
        if (digits) {
          min = m;
          while (j < pattern.size() && pattern[j] != '}') ++j;
          i = j + 1;
        }
      }
      if (i < pattern.size() && (pattern[i] == '?' || pattern[i] == '+')) ++i;  // lazy / possessive
    }
    if (kind != 0 && min >= 2) return false;
    bool required = min >= 1;
    if (kind == 2 && required && prev_kind == 2 && prev_required) return false;
    prev_kind = kind;
    prev_required = required;
  }
  return true;
}

namespace {

Position position(const std::string& file, const YAML::Mark& m) { return {file, m.line + 1, m.column + 1}; }

}  // namespace

// ---------------------------------------------------------------------------------------------
// The records of step 1 (reading): each rule as written, with the positions later steps need for
// their messages. Nothing here is compiled (no RE2, no Vectorscan) and nothing is cross-checked
// (ids, catalog names): that is collecting (step 2) and compiling (step 3).

struct ExtractorRecord {
  Extractor rule;  // everything but the compiled regex (rule.re stays null until step 3)
  Position id_pos;
  Position pattern_pos;
  Position scan_pos;  // of `scan:`, when the rule has one
  std::map<std::string, Position> template_pos;  // "symptom", "node", "rank", "gpu", "catalog"
  std::vector<Position> field_pos;               // one per rule.fields entry
};
struct MetricRecord {
  MetricExtractor rule;
  Position id_pos;
};
struct CatalogRecord {
  Catalog rule;
  Position id_pos;
};
struct SymptomRecordEntry {
  std::string id;
  SymptomAttrs attrs;
  Position id_pos;
};
struct RefinerRecord {
  Refiner rule;
  Position id_pos;
};
// One file's records, each kind in file order.
struct FileRecords {
  std::vector<CatalogRecord> catalogs;
  std::vector<SymptomRecordEntry> symptoms;
  std::vector<ExtractorRecord> extractors;
  std::vector<MetricRecord> metric_extractors;
  std::vector<RefinerRecord> refiners;
};

struct RuleRecords::Impl {
  std::vector<RuleText> files;   // every file given, in order (the digest and RuleSet::sources)
  std::vector<FileRecords> read;  // step 1 output, one per file read
  LoadResult messages;            // errors and warnings of every step so far
  // Step 2 output: the rule set under construction (everything but extractors) and the
  // extractors still to compile, in collection order.
  std::shared_ptr<RuleSet> collected;
  std::vector<ExtractorRecord> to_compile;
  std::vector<ExternalRule> external;  // rules of other languages, in the order added
  bool collected_done = false;
};

RuleRecords::RuleRecords() : impl_(std::make_unique<Impl>()) {}
RuleRecords::~RuleRecords() = default;
RuleRecords::RuleRecords(RuleRecords&&) noexcept = default;
RuleRecords& RuleRecords::operator=(RuleRecords&&) noexcept = default;

namespace {

// Step 1 for YAML: one file's text → FileRecords. Checks what one rule alone can show (shape,
// known keys and values, templates, durations, fixtures).
class Reader {
 public:
  Reader(LoadResult& result, FileRecords& out) : result_(result), out_(out) {}

  void error(const std::string& file, const YAML::Mark& m, std::string msg) {
    result_.errors.push_back({file, m.line + 1, m.column + 1, std::move(msg)});
  }
  void warning(const std::string& file, const YAML::Mark& m, std::string msg) {
    result_.warnings.push_back({file, m.line + 1, m.column + 1, std::move(msg)});
  }

  bool check_keys(const std::string& file, const YAML::Node& node,
                  std::initializer_list<std::string_view> allowed, std::string_view what) {
    if (!node.IsMap()) {
      error(file, node.Mark(), fmt::format("{} must be a mapping", what));
      return false;
    }
    bool ok = true;
    for (const auto& kv : node) {
      std::string key = kv.first.Scalar();
      if (std::find(allowed.begin(), allowed.end(), key) == allowed.end()) {
        error(file, kv.first.Mark(),
              fmt::format("unknown key '{}' in {} (allowed: {})", key, what,
                          fmt::join(allowed, ", ")));
        ok = false;
      }
    }
    return ok;
  }

  std::optional<std::string> scalar(const std::string& file, const YAML::Node& node,
                                    std::string_view key, bool required) {
    YAML::Node v = node[std::string(key)];
    if (!v) {
      if (required) error(file, node.Mark(), fmt::format("missing required key '{}'", key));
      return std::nullopt;
    }
    if (!v.IsScalar()) {
      error(file, v.Mark(), fmt::format("'{}' must be a scalar", key));
      return std::nullopt;
    }
    return v.Scalar();
  }

  std::optional<Template> parse_template(const std::string& file, const YAML::Node& at,
                                         const std::string& text) {
    Template t;
    size_t i = 0;
    std::string lit;
    while (i < text.size()) {
      if (text[i] == '{') {
        size_t close = text.find('}', i);
        if (close == std::string::npos) {
          error(file, at.Mark(), fmt::format("unclosed '{{' in template '{}'", text));
          return std::nullopt;
        }
        if (!lit.empty()) t.pieces.push_back({false, lit}), lit.clear();
        std::string field = text.substr(i + 1, close - i - 1);
        if (field.empty()) {
          error(file, at.Mark(), fmt::format("empty placeholder in template '{}'", text));
          return std::nullopt;
        }
        t.pieces.push_back({true, field});
        i = close + 1;
      } else {
        lit += text[i++];
      }
    }
    if (!lit.empty()) t.pieces.push_back({false, lit});
    return t;
  }

  // A true/false scalar; anything else is an error at its position.
  bool parse_flag(const std::string& file, const YAML::Node& v, const std::string& key, bool& out) {
    if (v.Scalar() != "true" && v.Scalar() != "false") {
      error(file, v.Mark(), fmt::format("{} must be true or false, not '{}'", key, v.Scalar()));
      return false;
    }
    out = v.Scalar() == "true";
    return true;
  }

  bool parse_attrs(const std::string& file, const YAML::Node& n, SymptomAttrs& a,
                   bool allow_extra) {
    if (!n.IsMap()) {
      error(file, n.Mark(), "symptom attributes must be a mapping");
      return false;
    }
    bool ok = true;
    for (const auto& kv : n) {
      std::string key = kv.first.Scalar();
      if (key == "id") continue;
      if (!kv.second.IsScalar()) {
        error(file, kv.second.Mark(), fmt::format("'{}' must be a scalar", key));
        ok = false;
        continue;
      }
      const std::string& v = kv.second.Scalar();
      if (key == "label") {
        a.label = v;
      } else if (key == "domain") {
        if (!kDomains.count(v)) {
          error(file, kv.second.Mark(), fmt::format("unknown domain '{}'", v));
          ok = false;
        }
        a.domain = v;
      } else if (key == "outcome") {
        auto dot = v.find('.');
        if (dot == std::string::npos || !kDomains.count(v.substr(0, dot))) {
          error(file, kv.second.Mark(),
                fmt::format("outcome '{}' must be <domain>.<what> with a known domain", v));
          ok = false;
        }
        a.outcome = v;
      } else if (key == "role") {
        if (v != "cause" && v != "victim" && v != "context") {
          error(file, kv.second.Mark(),
                fmt::format("role must be cause, victim or context, not '{}'", v));
          ok = false;
        }
        a.role = v;
      } else if (key == "priority") {
        int p = -1;
        auto r = std::from_chars(v.data(), v.data() + v.size(), p);
        if (r.ec != std::errc() || p < 0 || p > 100) {
          error(file, kv.second.Mark(), fmt::format("priority must be 0-100, not '{}'", v));
          ok = false;
        }
        a.priority = p;
      } else if (key == "evidence") {
        if (v != "direct" && v != "indirect" && v != "generic") {
          error(file, kv.second.Mark(), "evidence must be direct, indirect or generic");
          ok = false;
        }
        a.indirect = v == "indirect";
        a.generic = v == "generic";
      } else if (key == "terminal" || key == "drains_node") {
        ok &= parse_flag(file, kv.second, key, key == "terminal" ? a.terminal : a.drains_node);
      } else if (allow_extra) {
        a.extra[key] = v;
      } else {
        error(file, kv.first.Mark(),
              fmt::format("unknown key '{}' in symptom (allowed: id, label, domain, outcome, "
                          "role, priority, evidence, terminal, drains_node)",
                          key));
        ok = false;
      }
    }
    if (a.outcome.empty()) a.outcome = a.domain + ".unknown";
    if (a.role == "cause" && a.outcome.rfind(a.domain + ".", 0) != 0 && a.domain != "unknown") {
      error(file, n.Mark(),
            fmt::format("outcome '{}' is not in domain '{}'", a.outcome, a.domain));
      ok = false;
    }
    a.resolved = true;
    return ok;
  }

  std::vector<Fixture> parse_fixtures(const std::string& file, const YAML::Node& list,
                                      std::string_view input_key) {
    std::vector<Fixture> out;
    if (!list) return out;
    if (!list.IsSequence()) {
      error(file, list.Mark(), "fixtures must be a list");
      return out;
    }
    for (const auto& f : list) {
      if (!check_keys(file, f, {input_key, "expect"}, "fixture")) continue;
      Fixture fx;
      fx.pos = {file, f.Mark().line + 1, f.Mark().column + 1};
      auto input = scalar(file, f, input_key, true);
      if (!input) continue;
      fx.input = *input;
      YAML::Node e = f["expect"];
      if (!e) {
        error(file, f.Mark(), "fixture needs 'expect' (a mapping, or 'none')");
        continue;
      }
      if (e.IsScalar() && e.Scalar() == "none") {
        fx.expect_none = true;
      } else if (e.IsMap()) {
        for (const auto& kv : e) {
          if (!kv.second.IsScalar()) {
            error(file, kv.second.Mark(), "fixture expectations must be scalars");
            continue;
          }
          fx.expect[kv.first.Scalar()] = kv.second.Scalar();
        }
      } else {
        error(file, e.Mark(), "'expect' must be a mapping or 'none'");
        continue;
      }
      out.push_back(std::move(fx));
    }
    return out;
  }

  std::optional<CatalogRef> parse_catalog_ref(const std::string& file, const YAML::Node& n) {
    if (!check_keys(file, n, {"id", "key"}, "catalog reference")) return std::nullopt;
    auto id = scalar(file, n, "id", true);
    auto key = scalar(file, n, "key", true);
    if (!id || !key) return std::nullopt;
    auto t = parse_template(file, n, *key);
    if (!t) return std::nullopt;
    CatalogRef ref;
    ref.name = *id;
    ref.catalog = SIZE_MAX;  // resolved once every file is loaded
    ref.key = *t;
    return ref;
  }

  // `fabric: {hca: "{hca}", peer: "{peer}"}` (docs/fabric.md §2): canonical keys only. A
  // placeholder that the line does not capture leaves that key out (fixtures check the keys).
  bool parse_fabric(const std::string& file, const YAML::Node& n, std::vector<std::pair<std::string, Template>>& out) {
    YAML::Node f = n["fabric"];
    if (!f) return true;
    if (!f.IsMap()) {
      error(file, f.Mark(), "fabric must be a mapping of location key → template");
      return false;
    }
    for (const auto& kv : f) {
      const std::string key = kv.first.Scalar();
      if (!kFabricKeys.count(key)) {
        error(file, kv.first.Mark(), fmt::format("unknown fabric key '{}' (one of: {})", key, fmt::join(kFabricKeys, ", ")));
        return false;
      }
      if (!kv.second.IsScalar()) {
        error(file, kv.second.Mark(), fmt::format("fabric.{} must be a template string", key));
        return false;
      }
      auto t = parse_template(file, kv.second, kv.second.Scalar());
      if (!t) return false;
      out.emplace_back(key, std::move(*t));
    }
    return true;
  }

  // `context: {lines: N, rows: [pattern, ...], require: pattern, stop: pattern}` (rule_set.h
  // LineContext). Patterns are compiled in step 3, where their errors get their positions.
  static constexpr size_t kMaxContextLines = 1000;
  bool parse_context(const std::string& file, const YAML::Node& n, std::optional<LineContext>& out) {
    YAML::Node c = n["context"];
    if (!c) return true;
    if (!check_keys(file, c, {"lines", "rows", "require", "stop"}, "context")) return false;
    LineContext ctx;
    auto lines = scalar(file, c, "lines", true);
    if (!lines) return false;
    auto r = std::from_chars(lines->data(), lines->data() + lines->size(), ctx.lines);
    if (r.ec != std::errc() || r.ptr != lines->data() + lines->size() || ctx.lines == 0 || ctx.lines > kMaxContextLines) {
      error(file, c["lines"].Mark(), fmt::format("context.lines must be a whole number from 1 to {}", kMaxContextLines));
      return false;
    }
    auto pattern_at = [&](const YAML::Node& v, std::string_view what) -> std::optional<LineContext::Pattern> {
      if (!v.IsScalar() || v.Scalar().empty()) {
        error(file, v.Mark(), fmt::format("context.{} must be a non-empty pattern string", what));
        return std::nullopt;
      }
      LineContext::Pattern p;
      p.text = v.Scalar();
      p.pos = position(file, v.Mark());
      return p;
    };
    if (YAML::Node rows = c["rows"]) {
      if (!rows.IsSequence()) {
        error(file, rows.Mark(), "context.rows must be a list of patterns");
        return false;
      }
      for (const auto& row : rows) {
        auto p = pattern_at(row, "rows");
        if (!p) return false;
        ctx.rows.push_back(std::move(*p));
      }
    }
    for (const char* key : {"require", "stop"}) {
      if (YAML::Node v = c[key]) {
        auto p = pattern_at(v, key);
        if (!p) return false;
        (std::string_view(key) == "require" ? ctx.require : ctx.stop) = std::move(*p);
      }
    }
    if (ctx.rows.empty() && !ctx.require) {
      error(file, c.Mark(), "context needs rows to read or a line to require");
      return false;
    }
    out = std::move(ctx);
    return true;
  }

  void load_extractor(const std::string& file, const YAML::Node& n) {
    if (!check_keys(file, n,
                    {"id", "description", "kinds", "pattern", "scan", "case_insensitive", "precedence",
                     "symptom", "catalog", "node", "rank", "gpu", "fields", "fabric", "context", "fixtures"},
                    "extractor"))
      return;
    ExtractorRecord rec;
    Extractor& x = rec.rule;
    auto id = scalar(file, n, "id", true);
    if (!id) return;
    x.id = *id;
    rec.id_pos = position(file, n["id"].Mark());
    x.pos = {file, n.Mark().line + 1, n.Mark().column + 1};
    x.description = scalar(file, n, "description", false).value_or("");
    if (x.description.empty()) warning(file, n.Mark(), fmt::format("extractor '{}' has no description", x.id));
    auto pattern = scalar(file, n, "pattern", true);
    auto symptom = scalar(file, n, "symptom", true);
    if (!pattern || !symptom) return;
    x.pattern = tolerate_blanks(*pattern);
    x.scan_pattern = *pattern;
    if (auto scan = scalar(file, n, "scan", false)) {
      x.scan_pattern = *scan;
      x.scan_superset = true;
      rec.scan_pos = position(file, n["scan"].Mark());
    }
    x.collapse_safe = blanks_collapse_safe(x.scan_pattern);
    if (auto ci = scalar(file, n, "case_insensitive", false)) x.case_insensitive = *ci == "true";
    if (auto pr = scalar(file, n, "precedence", false)) {
      auto r = std::from_chars(pr->data(), pr->data() + pr->size(), x.precedence);
      if (r.ec != std::errc()) {
        error(file, n["precedence"].Mark(), "precedence must be an integer");
        return;
      }
    }
    x.kinds_mask = kTextKindsMask;
    if (YAML::Node kinds = n["kinds"]) {
      x.kinds_mask = 0;
      if (!kinds.IsSequence()) {
        error(file, kinds.Mark(), "kinds must be a list");
        return;
      }
      for (const auto& k : kinds) {
        auto kind = parse_observation_kind(k.Scalar());
        if (!kind || *kind == ObservationKind::kNodeMetrics) {
          error(file, k.Mark(),
                fmt::format("unknown text kind '{}' (applog, syslog, node_report, scheduler, "
                            "k8s_event)",
                            k.Scalar()));
          return;
        }
        x.kinds_mask |= 1u << static_cast<int>(*kind);
      }
    }
    rec.pattern_pos = position(file, n["pattern"].Mark());
    // Templates are parsed here; that their fields are named captures is checked when the
    // pattern is compiled (step 3).
    auto read_template = [&](const char* key, Template& out) -> bool {
      auto s = scalar(file, n, key, false);
      if (!s) return true;
      auto t = parse_template(file, n[key], *s);
      if (!t) return false;
      rec.template_pos[key] = position(file, n[key].Mark());
      out = *t;
      return true;
    };
    if (!read_template("symptom", x.symptom) || !read_template("node", x.node) ||
        !read_template("rank", x.rank) || !read_template("gpu", x.gpu))
      return;
    if (YAML::Node c = n["catalog"]) {
      x.catalog = parse_catalog_ref(file, c);
      if (!x.catalog) return;
      rec.template_pos["catalog"] = position(file, c.Mark());
    }
    if (YAML::Node f = n["fields"]) {
      for (const auto& v : f) {
        x.fields.push_back(v.Scalar());
        rec.field_pos.push_back(position(file, v.Mark()));
      }
    }
    if (!parse_fabric(file, n, x.fabric)) return;
    if (!parse_context(file, n, x.context)) return;
    x.fixtures = parse_fixtures(file, n["fixtures"], "line");
    bool has_positive = std::any_of(x.fixtures.begin(), x.fixtures.end(),
                                    [](const Fixture& f) { return !f.expect_none; });
    if (!has_positive) {
      error(file, n.Mark(), fmt::format("extractor '{}' needs at least one positive fixture", x.id));
      return;
    }
    out_.extractors.push_back(std::move(rec));
  }

  void load_metric_extractor(const std::string& file, const YAML::Node& n) {
    if (!check_keys(file, n,
                    {"id", "description", "metric", "when", "symptom", "catalog", "node",
                     "node_fallback", "gpu", "evidence", "fabric", "fixtures"},
                    "metric extractor"))
      return;
    MetricRecord rec;
    MetricExtractor& m = rec.rule;
    auto id = scalar(file, n, "id", true);
    auto metric = scalar(file, n, "metric", true);
    auto symptom = scalar(file, n, "symptom", true);
    if (!id || !metric || !symptom) return;
    m.id = *id;
    rec.id_pos = position(file, n["id"].Mark());
    m.pos = {file, n.Mark().line + 1, n.Mark().column + 1};
    m.description = scalar(file, n, "description", false).value_or("");
    m.metric = *metric;
    std::string when = scalar(file, n, "when", false).value_or("> 0");
    size_t i = 0;
    while (i < when.size() && when[i] == ' ') ++i;
    size_t op_start = i;
    while (i < when.size() && (when[i] == '>' || when[i] == '<' || when[i] == '=' || when[i] == '!')) ++i;
    m.op = when.substr(op_start, i - op_start);
    while (i < when.size() && when[i] == ' ') ++i;
    std::string num = when.substr(i);
    auto r = std::from_chars(num.data(), num.data() + num.size(), m.threshold);
    static const std::set<std::string> kOps = {">", ">=", "<", "<=", "==", "!="};
    if (!kOps.count(m.op) || r.ec != std::errc()) {
      error(file, n["when"] ? n["when"].Mark() : n.Mark(),
            fmt::format("'when' must be '<op> <number>' with op one of > >= < <= == !=, not '{}'", when));
      return;
    }
    auto tmpl = [&](const char* key, Template& out) -> bool {
      auto s = scalar(file, n, key, false);
      if (!s) return true;
      auto t = parse_template(file, n[key], *s);
      if (!t) return false;
      out = *t;
      return true;
    };
    if (!tmpl("symptom", m.symptom) || !tmpl("node", m.node) || !tmpl("gpu", m.gpu)) return;
    if (YAML::Node fb = n["node_fallback"]) {
      for (const auto& v : fb) {
        auto t = parse_template(file, v, v.Scalar());
        if (!t) return;
        m.node_fallback.push_back(*t);
      }
    }
    if (YAML::Node c = n["catalog"]) {
      m.catalog = parse_catalog_ref(file, c);
      if (!m.catalog) return;
    }
    m.indirect = scalar(file, n, "evidence", false).value_or("indirect") == "indirect";
    if (!parse_fabric(file, n, m.fabric)) return;
    m.fixtures = parse_fixtures(file, n["fixtures"], "sample");
    if (m.fixtures.empty()) {
      error(file, n.Mark(), fmt::format("metric extractor '{}' needs at least one fixture", m.id));
      return;
    }
    out_.metric_extractors.push_back(std::move(rec));
  }

  void load_catalog(const std::string& file, const YAML::Node& n) {
    if (!check_keys(file, n, {"id", "description", "entries", "default"}, "catalog")) return;
    CatalogRecord rec;
    Catalog& c = rec.rule;
    auto id = scalar(file, n, "id", true);
    if (!id) return;
    c.id = *id;
    rec.id_pos = position(file, n["id"].Mark());
    c.description = scalar(file, n, "description", false).value_or("");
    YAML::Node entries = n["entries"];
    if (!entries || !entries.IsMap()) {
      error(file, n.Mark(), fmt::format("catalog '{}' needs 'entries' (a mapping)", c.id));
      return;
    }
    for (const auto& kv : entries) {
      SymptomAttrs a;
      if (parse_attrs(file, kv.second, a, true)) c.entries[kv.first.Scalar()] = std::move(a);
    }
    if (YAML::Node d = n["default"]) {
      SymptomAttrs a;
      if (parse_attrs(file, d, a, true)) c.fallback = std::move(a);
    }
    out_.catalogs.push_back(std::move(rec));
  }

  void load_symptom(const std::string& file, const YAML::Node& n) {
    if (!check_keys(file, n, {"id", "label", "domain", "outcome", "role", "priority", "evidence", "terminal", "drains_node"},
                    "symptom"))
      return;
    auto id = scalar(file, n, "id", true);
    if (!id) return;
    SymptomAttrs a;
    if (!parse_attrs(file, n, a, false)) return;
    if (a.label.empty()) a.label = *id;
    out_.symptoms.push_back({*id, std::move(a), position(file, n["id"].Mark())});
  }

  static int64_t parse_duration(const std::string& s, bool& ok) {
    ok = false;
    if (s.empty()) return 0;
    int64_t v = 0;
    size_t i = 0;
    while (i < s.size() && s[i] >= '0' && s[i] <= '9' && i < 9) v = v * 10 + (s[i++] - '0');
    if (i == 0) return 0;
    std::string unit = s.substr(i);
    int64_t mult = 0;
    if (unit == "ms") mult = 1000000LL;
    else if (unit == "s" || unit.empty()) mult = 1000000000LL;
    else if (unit == "m") mult = 60LL * 1000000000LL;
    else if (unit == "h") mult = 3600LL * 1000000000LL;
    else return 0;
    int64_t ns = 0;
    // At most 30 days: refiner windows are about one job, and time sums stay far from overflow.
    if (__builtin_mul_overflow(v, mult, &ns) || ns > 30LL * 86400 * 1000000000LL) return 0;
    ok = true;
    return ns;
  }

  void load_refiner(const std::string& file, const YAML::Node& n) {
    if (!check_keys(file, n,
                    {"id", "description", "phase", "builtin", "cause", "cause_role", "explains",
                     "scope", "within", "before", "recovery", "outranks", "same_event"},
                    "refiner"))
      return;
    RefinerRecord rec;
    Refiner& r = rec.rule;
    auto id = scalar(file, n, "id", true);
    if (!id) return;
    r.id = *id;
    rec.id_pos = position(file, n["id"].Mark());
    r.pos = {file, n.Mark().line + 1, n.Mark().column + 1};
    r.description = scalar(file, n, "description", false).value_or("");
    std::string phase = scalar(file, n, "phase", false).value_or("DEFAULT");
    static const std::map<std::string, Phase> kPhases = {{"EARLY", Phase::kEarly},
                                                         {"DEFAULT", Phase::kDefault},
                                                         {"LATE", Phase::kLate},
                                                         {"FINAL", Phase::kFinal},
                                                         {"POST_OUTCOME", Phase::kPostOutcome}};
    auto ph = kPhases.find(phase);
    if (ph == kPhases.end()) {
      error(file, n["phase"].Mark(),
            fmt::format("unknown phase '{}' (EARLY, DEFAULT, LATE, FINAL, POST_OUTCOME)", phase));
      return;
    }
    r.phase = ph->second;
    if (auto b = scalar(file, n, "builtin", false)) {
      if (!kBuiltins.count(*b)) {
        error(file, n["builtin"].Mark(),
              fmt::format("unknown builtin refiner '{}' (known: {})", *b, fmt::join(kBuiltins, ", ")));
        return;
      }
      r.builtin = *b;
      out_.refiners.push_back(std::move(rec));
      return;
    }
    auto list = [&](const char* key, std::vector<std::string>& out) -> bool {
      YAML::Node v = n[key];
      if (!v) {
        error(file, n.Mark(), fmt::format("refiner '{}' needs '{}' (or 'builtin')", r.id, key));
        return false;
      }
      if (v.IsScalar()) {
        out.push_back(v.Scalar());
      } else if (v.IsSequence()) {
        for (const auto& e : v) out.push_back(e.Scalar());
      } else {
        error(file, v.Mark(), fmt::format("'{}' must be a symptom id or a list of them", key));
        return false;
      }
      return true;
    };
    if (!list("cause", r.cause) || !list("explains", r.explains)) return;
    r.cause_role = scalar(file, n, "cause_role", false).value_or("");
    if (n["recovery"] && !parse_flag(file, n["recovery"], "recovery", r.recovery)) return;
    if (n["outranks"] && !parse_flag(file, n["outranks"], "outranks", r.outranks)) return;
    if (n["same_event"] && !parse_flag(file, n["same_event"], "same_event", r.same_event)) return;
    r.scope = scalar(file, n, "scope", false).value_or("job");
    static const std::set<std::string> kScopes = {"job", "same_node", "same_gpu", "same_rank"};
    if (!kScopes.count(r.scope)) {
      error(file, n["scope"].Mark(),
            fmt::format("unknown scope '{}' (job, same_node, same_gpu, same_rank)", r.scope));
      return;
    }
    for (const char* key : {"within", "before"}) {
      if (auto d = scalar(file, n, key, false)) {
        bool ok = false;
        int64_t v = parse_duration(*d, ok);
        if (!ok) {
          error(file, n[key].Mark(), fmt::format("'{}' must be a duration like 30s, 10m, 2h (at most 30 days)", key));
          return;
        }
        (std::string_view(key) == "within" ? r.within_ns : r.before_ns) = v;
      }
    }
    out_.refiners.push_back(std::move(rec));
  }

  void read_file(const RuleText& f) {
    YAML::Node root;
    try {
      root = YAML::Load(f.text);
    } catch (const YAML::Exception& e) {
      result_.errors.push_back({f.name, e.mark.line + 1, e.mark.column + 1, e.msg});
      return;
    }
    if (root.IsNull()) return;
    if (!check_keys(f.name, root,
                    {"version", "catalogs", "extractors", "metric_extractors", "symptoms",
                     "refiners"},
                    "rules file"))
      return;
    if (auto v = scalar(f.name, root, "version", false); v && *v != "1") {
      error(f.name, root["version"].Mark(),
            fmt::format("rule-language version '{}' is not supported (this engine reads 1)", *v));
      return;
    }
    auto each = [&](const char* key, auto&& fn) {
      YAML::Node list = root[key];
      if (!list) return;
      if (!list.IsSequence()) {
        error(f.name, list.Mark(), fmt::format("'{}' must be a list", key));
        return;
      }
      for (const auto& item : list) {
        try {
          fn(item);
        } catch (const YAML::Exception& e) {
          error(f.name, item.Mark(), e.what());
        }
      }
    };
    each("catalogs", [&](const YAML::Node& n) { load_catalog(f.name, n); });
    each("symptoms", [&](const YAML::Node& n) { load_symptom(f.name, n); });
    each("extractors", [&](const YAML::Node& n) { load_extractor(f.name, n); });
    each("metric_extractors", [&](const YAML::Node& n) { load_metric_extractor(f.name, n); });
    each("refiners", [&](const YAML::Node& n) { load_refiner(f.name, n); });
  }

 private:
  LoadResult& result_;
  FileRecords& out_;
};

std::string sha256_hex(const std::vector<RuleText>& files) {
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  EVP_DigestInit_ex(ctx, EVP_sha256(), nullptr);
  for (const auto& f : files) {
    EVP_DigestUpdate(ctx, f.name.data(), f.name.size());
    EVP_DigestUpdate(ctx, "\0", 1);
    EVP_DigestUpdate(ctx, f.text.data(), f.text.size());
    EVP_DigestUpdate(ctx, "\0", 1);
  }
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_DigestFinal_ex(ctx, md, &len);
  EVP_MD_CTX_free(ctx);
  std::string hex;
  for (unsigned i = 0; i < len; ++i) hex += fmt::format("{:02x}", md[i]);
  return "sha256:" + hex;
}

// The extractors of a kind that go to one of its two databases (rule_set.h, KindDatabase).
std::vector<uint32_t> members_of(const RuleSet& rs, int kind, bool collapsed) {
  std::vector<uint32_t> members;
  for (uint32_t i = 0; i < rs.extractors.size(); ++i) {
    const Extractor& x = rs.extractors[i];
    bool in_collapsed = x.collapse_safe || !x.scan_atoms.empty();
    if ((x.kinds_mask & (1u << kind)) && in_collapsed == collapsed) members.push_back(i);
  }
  return members;
}

// The error words a database takes: all of them, on the collapsed text (a hit of several words that
// spans a cut run of blanks is dropped by the scanner, so they match as they always did).
std::vector<uint32_t> words_of(int kind, bool collapsed) {
  std::vector<uint32_t> words;
  if (kind == static_cast<int>(ObservationKind::kNodeMetrics) || !collapsed) return words;
  for (uint32_t w = 0; w < kErrorWordCount; ++w) words.push_back(w);
  return words;
}

// A Vectorscan expression matching `literal` exactly: every byte but letters and digits as \xHH.
std::string literal_expression(const std::string& literal) {
  std::string out;
  for (unsigned char c : literal) {
    if (std::isalnum(c)) {
      out += static_cast<char>(c);
    } else {
      out += fmt::format("\\x{:02x}", c);
    }
  }
  return out;
}

// Looks `x` up by its required literals in the collapsed text when it cannot be scanned there as
// written (Extractor::scan_atoms); leaves it to the exact database when it has no usable literal.
void choose_scan_atoms(Extractor& x) {
  x.scan_atoms.clear();
  if (x.collapse_safe) return;
  std::vector<std::string> atoms;
  if (!required_atoms(x.pattern, x.case_insensitive, atoms)) return;
  for (std::string& a : atoms) {
    // A blank at either end of a literal may be the first of a run the collapsed copy cuts to one:
    // keep the longest blank-free piece (still in every match). ASCII only (Vectorscan folds ASCII
    // case), at least 3 bytes.
    if (a.find(' ') != std::string::npos) {
      std::string best;
      size_t p = 0;
      while (p <= a.size()) {
        size_t q = a.find(' ', p);
        if (q == std::string::npos) q = a.size();
        if (q - p > best.size()) best = a.substr(p, q - p);
        p = q + 1;
      }
      a = best;
    }
    bool ok = a.size() >= 3;
    for (unsigned char c : a) ok = ok && c < 0x80 && c != '\t' && c != '\n' && c != '\r';
    if (!ok) return;
  }
  std::sort(atoms.begin(), atoms.end());
  atoms.erase(std::unique(atoms.begin(), atoms.end()), atoms.end());
  x.scan_atoms = std::move(atoms);
}

// Compiles one of a kind's databases. A pattern Vectorscan rejects is retried in prefilter mode
// (the capture step confirms every candidate anyway). False when the rule set cannot be scanned
// (errors say why).
bool compile_database(RuleSet& rs, int kind, bool collapsed, ScanDatabase& out, LoadResult& result) {
  std::vector<uint32_t> members = members_of(rs, kind, collapsed);
  std::vector<uint32_t> words = words_of(kind, collapsed);
  if (members.empty() && words.empty()) return true;
  for (int attempt = 0; attempt < 256; ++attempt) {
    std::vector<const char*> exprs;
    std::vector<unsigned> flags;
    std::vector<unsigned> ids;
    std::deque<std::string> atom_exprs;  // escaped literals and scanned patterns; a deque keeps exprs' pointers valid
    std::vector<int> expr_member;        // expression index → index into members (-1: an error word)
    for (uint32_t j = 0; j < members.size(); ++j) {
      const Extractor& x = rs.extractors[members[j]];
      if (collapsed && !x.collapse_safe) {
        for (const std::string& atom : x.scan_atoms) {
          exprs.push_back(atom_exprs.emplace_back(literal_expression(atom)).c_str());
          flags.push_back(HS_FLAG_CASELESS);
          ids.push_back(j);
          expr_member.push_back(static_cast<int>(j));
        }
        continue;
      }
      // Negated classes stop at a newline in what Vectorscan scans: the same lines match, and
      // Vectorscan finds them wherever the line sits in memory (vectorscan_form.h).
      exprs.push_back(atom_exprs.emplace_back(detail::exclude_newline_from_negated_classes(collapsed ? x.scan_pattern : x.pattern)).c_str());
      unsigned f = HS_FLAG_MULTILINE;
      if (x.case_insensitive) f |= HS_FLAG_CASELESS;
      if (x.prefilter) f |= HS_FLAG_PREFILTER;
      flags.push_back(f);
      ids.push_back(j);
      expr_member.push_back(static_cast<int>(j));
    }
    for (uint32_t w = 0; w < words.size(); ++w) {
      exprs.push_back(kErrorWords[words[w]].literal);
      flags.push_back(HS_FLAG_CASELESS);
      ids.push_back(static_cast<uint32_t>(members.size()) + w);
      expr_member.push_back(-1);
    }
    hs_compile_error_t* err = nullptr;
    hs_database_t* db = nullptr;
    hs_error_t rc = hs_compile_multi(exprs.data(), flags.data(), ids.data(), static_cast<unsigned>(exprs.size()),
                                     HS_MODE_BLOCK, nullptr, &db, &err);
    if (rc == HS_SUCCESS) {
      out.db = db;
      out.extractors = std::move(members);
      out.words = std::move(words);
      return true;
    }
    int bad_expr = err != nullptr ? err->expression : -1;
    std::string msg = err != nullptr && err->message != nullptr ? err->message : "unknown";
    if (err != nullptr) hs_free_compile_error(err);
    int bad = bad_expr >= 0 && static_cast<size_t>(bad_expr) < expr_member.size() ? expr_member[bad_expr] : -1;
    if (bad < 0) {
      result.errors.push_back({"", 0, 0, "Vectorscan could not compile the rule set: " + msg});
      return false;
    }
    Extractor& x = rs.extractors[members[bad]];
    if (collapsed && !x.collapse_safe) {  // its literals did not compile: scan it exactly
      x.scan_atoms.clear();
      members = members_of(rs, kind, collapsed);
      continue;
    }
    if (x.prefilter) {
      result.errors.push_back({x.pos.file, x.pos.line, x.pos.column,
                               fmt::format("extractor '{}': pattern cannot be scanned: {}", x.id, msg)});
      return false;
    }
    x.prefilter = true;
  }
  result.errors.push_back({"", 0, 0, "Vectorscan could not compile the rule set"});
  return false;
}

// Extractors of a collapsed database that Vectorscan does not report on one of their own fixture
// lines, blank-collapsed, in the contexts `rules test` runs them in (fixtures.cc): alone, after
// unrelated text of several lengths, and 40 times between lines that end in runs of blanks, where
// every occurrence must be found. Vectorscan 5.4.9 misses some pattern shapes with only single
// blanks between words that it finds in their tolerant form (e.g. 'Termination timeout (?:for
// `[^`]*` )?of' in a long line, '^\s+Reason:\s+...\s*$' after other lines); such an extractor is
// scanned on the original text instead.
std::vector<uint32_t> missed_on_collapsed(const RuleSet& rs, const ScanDatabase& part) {
  std::vector<uint32_t> missed;
  if (part.db == nullptr) return missed;
  hs_scratch_t* scratch = nullptr;
  if (hs_alloc_scratch(part.db, &scratch) != HS_SUCCESS) return missed;
  struct Hits {
    unsigned want;
    std::vector<unsigned long long> ends;
  };
  auto on_hit = [](unsigned id, unsigned long long, unsigned long long to, unsigned, void* ctx) -> int {
    auto* h = static_cast<Hits*>(ctx);
    if (id == h->want) h->ends.push_back(to);
    return 0;
  };
  std::string collapsed;
  std::vector<std::pair<size_t, size_t>> shifts;
  // The number of lines of `text` holding a reported match end.
  auto lines_found = [&](std::string_view text, unsigned want) {
    std::string_view scanned = text;
    if (collapse_blank_runs(text.data(), text.size(), collapsed, shifts) != 0) scanned = collapsed;
    Hits hits{want, {}};
    hs_scan(part.db, scanned.data(), static_cast<unsigned>(scanned.size()), 0, scratch, on_hit, &hits);
    std::set<uint64_t> lines;
    for (unsigned long long to : hits.ends) {
      size_t pos = to == 0 ? 0 : static_cast<size_t>(to) - 1;
      if (pos > 0 && scanned[pos] == '\n') --pos;  // a match that swallowed the newline
      lines.insert(count_newlines(scanned.data(), pos));
    }
    return lines.size();
  };
  for (uint32_t j = 0; j < part.extractors.size(); ++j) {
    const Extractor& x = rs.extractors[part.extractors[j]];
    bool ok = true;
    for (const Fixture& f : x.fixtures) {
      if (!ok) break;
      if (!RE2::PartialMatch(fixture_line(f.input), *x.re)) continue;
      ok = lines_found(f.input, j) >= 1;
      for (size_t n : kFixtureNoiseLengths) {
        if (ok) ok = lines_found(fixture_after_noise(f.input, n), j) >= 1;
      }
      if (ok) ok = lines_found(fixture_repeated(f.input), j) >= kFixtureRepeats;
    }
    if (!ok) missed.push_back(part.extractors[j]);
  }
  hs_free_scratch(scratch);
  return missed;
}

// Compiles each kind's two databases. A pattern put in prefilter mode by the second database is
// compiled that way in both from then on (the flag is the extractor's; the cache records it). An
// extractor that cannot be scanned on collapsed text as written is looked for there by its required
// literals (Extractor::scan_atoms), or, without usable literals, in the exact database. One the
// collapsed database misses on its own fixtures takes the next of those steps, for every kind, and
// everything is compiled again; if moving keeps uncovering misses, every extractor is scanned on the
// original text (slower, never wrong).
void compile_databases(RuleSet& rs, LoadResult& result) {
  constexpr int kRounds = 8;
  for (Extractor& x : rs.extractors) choose_scan_atoms(x);
  for (int round = 0; round <= kRounds; ++round) {
    const bool last = round == kRounds;
    if (last) {
      for (Extractor& x : rs.extractors) {
        x.collapse_safe = false;
        x.scan_atoms.clear();
      }
    }
    std::array<std::unique_ptr<KindDatabase>, kObservationKindCount> dbs;
    std::set<uint32_t> missed;
    for (int kind = 0; kind < kObservationKindCount; ++kind) {
      auto db = std::make_unique<KindDatabase>();
      if (!compile_database(rs, kind, true, db->collapsed, result)) return;
      if (!compile_database(rs, kind, false, db->exact, result)) return;
      if (!last) {
        for (uint32_t x : missed_on_collapsed(rs, db->collapsed)) missed.insert(x);
      }
      if (db->collapsed.db == nullptr && db->exact.db == nullptr) continue;
      dbs[kind] = std::move(db);
    }
    if (missed.empty()) {
      rs.dbs = std::move(dbs);
      return;
    }
    for (uint32_t i : missed) {
      Extractor& x = rs.extractors[i];
      if (x.collapse_safe) {  // missed as written: try its literals
        x.collapse_safe = false;
        choose_scan_atoms(x);
      } else {  // missed even by its literals: the original text
        x.scan_atoms.clear();
      }
    }
  }
}

// Cache layout: "attribution-hs/6\n<digest>\n<hs_version>\n<prefilter ids,>\n<exact ids,>\n<atom
// ids,>\n" (exact: extractors not scanned on collapsed text as written, !collapse_safe; atom: those of
// them looked for there by their literals) then per kind and database "<kind> <c|e> <size>\n<bytes>"
// (c: collapsed, e: exact; KindDatabase).
// 2: error words; 3: blanks tolerated; 4: two databases per kind; 5: literal lookup (scan_atoms);
// 6: negated classes stop at a newline in the scanned patterns (vectorscan_form.h).
constexpr std::string_view kCacheMagic = "attribution-hs/6";

bool load_cached_databases(RuleSet& rs, const std::string& digest, std::string_view cache) {
  auto take_line = [&](std::string_view& in, std::string_view& line) {
    size_t nl = in.find('\n');
    if (nl == std::string_view::npos) return false;
    line = in.substr(0, nl);
    in.remove_prefix(nl + 1);
    return true;
  };
  std::string_view in = cache, line;
  if (!take_line(in, line) || line != kCacheMagic) return false;
  if (!take_line(in, line) || line != digest) return false;
  if (!take_line(in, line) || line != hs_version()) return false;
  auto id_set = [&](std::string_view ids, std::vector<bool>& out) {
    out.assign(rs.extractors.size(), false);
    size_t p = 0;
    while (p < ids.size()) {
      size_t comma = ids.find(',', p);
      std::string_view id = ids.substr(p, comma == std::string_view::npos ? std::string_view::npos : comma - p);
      size_t v = 0;
      auto r = std::from_chars(id.data(), id.data() + id.size(), v);
      if (r.ec != std::errc() || v >= out.size()) return false;
      out[v] = true;
      p = comma == std::string_view::npos ? ids.size() : comma + 1;
    }
    return true;
  };
  std::vector<bool> prefilter, exact, by_atoms;
  if (!take_line(in, line) || !id_set(line, prefilter)) return false;
  if (!take_line(in, line) || !id_set(line, exact)) return false;
  if (!take_line(in, line) || !id_set(line, by_atoms)) return false;
  for (size_t i = 0; i < rs.extractors.size(); ++i) {
    Extractor& x = rs.extractors[i];
    x.collapse_safe = !exact[i];
    x.scan_atoms.clear();
    if (by_atoms[i]) {
      choose_scan_atoms(x);  // the same literals the databases were compiled with (deterministic)
      if (x.scan_atoms.empty()) return false;
    }
  }
  std::array<std::unique_ptr<KindDatabase>, kObservationKindCount> dbs;
  while (!in.empty()) {
    if (!take_line(in, line)) return false;
    int kind = -1;
    size_t size = 0;
    size_t sp = line.find(' ');
    if (sp == std::string_view::npos || sp + 3 > line.size() || line[sp + 2] != ' ') return false;
    char which = line[sp + 1];
    if (which != 'c' && which != 'e') return false;
    std::from_chars(line.data(), line.data() + sp, kind);
    std::from_chars(line.data() + sp + 3, line.data() + line.size(), size);
    if (kind < 0 || kind >= kObservationKindCount || size > in.size()) return false;
    if (!dbs[kind]) dbs[kind] = std::make_unique<KindDatabase>();
    ScanDatabase& db = which == 'c' ? dbs[kind]->collapsed : dbs[kind]->exact;
    if (db.db != nullptr || hs_deserialize_database(in.data(), size, &db.db) != HS_SUCCESS) return false;
    in.remove_prefix(size);
    db.extractors = members_of(rs, kind, which == 'c');
    db.words = words_of(kind, which == 'c');
  }
  for (size_t i = 0; i < rs.extractors.size(); ++i) rs.extractors[i].prefilter = prefilter[i];
  rs.dbs = std::move(dbs);
  rs.from_cache = true;
  return true;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Step 1: reading.

namespace {
bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}
}  // namespace

bool is_rule_data_file(std::string_view name) {
  return ends_with(name, ".csv") || ends_with(name, ".json") || ends_with(name, ".data.yaml") ||
         ends_with(name, ".data.yml");
}

void read_rules(const RuleText& file, RuleRecords& records) {
  RuleRecords::Impl& r = *records.impl_;
  r.files.push_back(file);
  if (is_rule_data_file(file.name)) return;
  if (ends_with(file.name, ".py")) {
    r.messages.errors.push_back({file.name, 0, 0,
                                 "a Python rule: this program loads YAML rules only (Python rules load through "
                                 "the attribution_rules_python library)"});
    return;
  }
  r.read.emplace_back();
  Reader(r.messages, r.read.back()).read_file(file);
}

void add_rule_source(RuleRecords& records, const RuleText& file) { records.impl_->files.push_back(file); }
void add_external_rule(RuleRecords& records, ExternalRule rule) { records.impl_->external.push_back(std::move(rule)); }
void add_load_error(RuleRecords& records, LoadMessage message) {
  records.impl_->messages.errors.push_back(std::move(message));
}
void add_load_warning(RuleRecords& records, LoadMessage message) {
  records.impl_->messages.warnings.push_back(std::move(message));
}

// ---------------------------------------------------------------------------------------------
// Step 2: collecting. Every file's records into one rule set, in file order: ids unique across
// files (catalogs, symptoms and rules each in their own namespace), catalog references resolved
// by name (a catalog may be defined in a later file), symptom globs ordered longest first.

void collect_rules(RuleRecords& records) {
  RuleRecords::Impl& r = *records.impl_;
  if (r.collected_done) return;
  r.collected_done = true;
  auto rs = std::make_shared<RuleSet>();
  rs->sources = r.files;
  std::map<std::string, std::string> ids;  // namespaced id → "file:line" of its first definition
  auto unique_id = [&](const std::string& key, const std::string& shown, const Position& at) {
    auto [it, inserted] = ids.emplace(key, fmt::format("{}:{}", at.file, at.line));
    if (!inserted) {
      r.messages.errors.push_back(
          {at.file, at.line, at.column, fmt::format("duplicate id '{}' (first defined at {})", shown, it->second)});
    }
    return inserted;
  };
  for (FileRecords& f : r.read) {
    for (auto& c : f.catalogs) {
      if (unique_id("catalog:" + c.rule.id, "catalog:" + c.rule.id, c.id_pos)) rs->catalogs.push_back(std::move(c.rule));
    }
    for (auto& s : f.symptoms) {
      if (!unique_id("symptom:" + s.id, "symptom:" + s.id, s.id_pos)) continue;
      if (s.id.back() == '*') {
        rs->symptom_prefix.emplace_back(s.id, std::move(s.attrs));
      } else {
        rs->symptom_exact[s.id] = std::move(s.attrs);
      }
    }
    for (auto& x : f.extractors) {
      if (unique_id(x.rule.id, x.rule.id, x.id_pos)) r.to_compile.push_back(std::move(x));
    }
    for (auto& m : f.metric_extractors) {
      if (unique_id(m.rule.id, m.rule.id, m.id_pos)) rs->metric_extractors.push_back(std::move(m.rule));
    }
    for (auto& rf : f.refiners) {
      if (unique_id(rf.rule.id, rf.rule.id, rf.id_pos)) rs->refiners.push_back(std::move(rf.rule));
    }
  }
  r.read.clear();
  // Rules of other languages: ids unique with the YAML ones, known phases, a field hook's
  // extractor defined (in any file).
  static const std::set<std::string> kPhaseNames = {"EARLY", "DEFAULT", "LATE", "FINAL", "POST_OUTCOME"};
  std::set<std::string> extractor_ids;
  for (const auto& x : r.to_compile) extractor_ids.insert(x.rule.id);
  for (auto& e : r.external) {
    const Position& at = e.where;
    auto fail = [&](std::string msg) { r.messages.errors.push_back({at.file, at.line, at.column, std::move(msg)}); };
    if (!unique_id(e.id, e.id, at)) continue;
    if (e.kind == ExternalRule::Kind::kRefiner) {
      if (!kPhaseNames.count(e.phase)) {
        fail(fmt::format("rule '{}': unknown phase '{}' (EARLY, DEFAULT, LATE, FINAL, POST_OUTCOME)", e.id, e.phase));
        continue;
      }
      if (!e.refiner) {
        fail(fmt::format("rule '{}': no function", e.id));
        continue;
      }
    } else {
      if (!extractor_ids.count(e.extractor)) {
        fail(fmt::format("field hook '{}': no extractor '{}' in the rules", e.id, e.extractor));
        continue;
      }
      if (!e.hook) {
        fail(fmt::format("rule '{}': no function", e.id));
        continue;
      }
    }
    rs->external_rules.push_back(std::move(e));
  }
  r.external.clear();
  auto resolve = [&](std::optional<CatalogRef>& ref, const Position& pos) {
    if (!ref) return;
    for (size_t i = 0; i < rs->catalogs.size(); ++i) {
      if (rs->catalogs[i].id == ref->name) {
        ref->catalog = i;
        return;
      }
    }
    r.messages.errors.push_back({pos.file, pos.line, pos.column, fmt::format("unknown catalog '{}'", ref->name)});
  };
  for (auto& x : r.to_compile) resolve(x.rule.catalog, x.rule.pos);
  for (auto& m : rs->metric_extractors) resolve(m.catalog, m.pos);
  std::stable_sort(rs->symptom_prefix.begin(), rs->symptom_prefix.end(),
                   [](const auto& a, const auto& b) { return a.first.size() > b.first.size(); });
  r.collected = std::move(rs);
}

// ---------------------------------------------------------------------------------------------
// Step 3: compiling. Each extractor's pattern into RE2 (its templates, catalog key and fields
// must name its captures), then one Vectorscan database per observation kind (or the cached
// ones), scratch space and the summary.

namespace {

bool compile_extractor(ExtractorRecord& rec, detail::PcreMatcher& matcher, LoadResult& result) {
  Extractor& x = rec.rule;
  auto fail = [&](const Position& at, std::string msg) {
    result.errors.push_back({at.file, at.line, at.column, std::move(msg)});
    return false;
  };
  RE2::Options opts;
  opts.set_encoding(RE2::Options::EncodingLatin1);
  opts.set_case_sensitive(!x.case_insensitive);
  opts.set_log_errors(false);
  x.re = std::make_unique<RE2>(x.pattern, opts);
  if (!x.re->ok()) return fail(rec.pattern_pos, fmt::format("extractor '{}': bad pattern: {}", x.id, x.re->error()));
  x.group_names.assign(static_cast<size_t>(x.re->NumberOfCapturingGroups()) + 1, "");
  for (const auto& [name, idx] : x.re->NamedCapturingGroups()) x.group_names[idx] = name;
  // The capture step's fast engine, kept only where it agrees with RE2 on every fixture line.
  x.pcre = detail::compile_pcre(x.pattern, x.case_insensitive, *x.re);
  // RE2's answers come from a throwaway copy: matching makes RE2 keep its DFA caches (about 40 KB
  // a pattern), which the run's own object should build only for patterns that get candidates.
  if (x.pcre && !x.fixtures.empty()) {
    RE2 reference(x.pattern, opts);
    for (const Fixture& f : x.fixtures) {
      if (!detail::pcre_agrees(reference, *x.pcre, matcher, f.input, /*jit=*/false)) {
        x.pcre.reset();
        break;
      }
    }
  }
  if (x.scan_superset) {
    // `scan:` must find every line the pattern finds: checked on the rule's own fixtures (the
    // lines the pattern matches), with blanks tolerated as the pattern's are.
    RE2 scan(tolerate_blanks(x.scan_pattern), opts);
    if (!scan.ok()) return fail(rec.scan_pos, fmt::format("extractor '{}': bad scan expression: {}", x.id, scan.error()));
    for (const Fixture& f : x.fixtures) {
      std::string_view line = fixture_line(f.input);
      if (RE2::PartialMatch(line, *x.re) && !RE2::PartialMatch(line, scan)) {
        return fail(rec.scan_pos, fmt::format("extractor '{}': scan expression does not match fixture line '{}', which "
                                              "the pattern matches (scan must find every line the pattern finds)",
                                              x.id, line));
      }
    }
  }
  std::set<std::string> captures(x.group_names.begin(), x.group_names.end());
  if (x.context) {
    auto compile_context = [&](LineContext::Pattern& p) {
      RE2::Options o = opts;
      p.re = std::make_unique<RE2>(tolerate_blanks(p.text), o);
      if (!p.re->ok()) {
        return fail(p.pos, fmt::format("extractor '{}': bad context pattern: {}", x.id, p.re->error()));
      }
      p.group_names.assign(static_cast<size_t>(p.re->NumberOfCapturingGroups()) + 1, "");
      for (const auto& [name, idx] : p.re->NamedCapturingGroups()) p.group_names[idx] = name;
      return true;
    };
    for (auto& row : x.context->rows) {
      if (!compile_context(row)) return false;
      captures.insert(row.group_names.begin(), row.group_names.end());
    }
    if (x.context->require && !compile_context(*x.context->require)) return false;
    if (x.context->stop && !compile_context(*x.context->stop)) return false;
  }
  captures.erase("");
  for (const auto& [key, tmpl] : std::initializer_list<std::pair<const char*, const Template*>>{
           {"symptom", &x.symptom}, {"node", &x.node}, {"rank", &x.rank}, {"gpu", &x.gpu}}) {
    for (const auto& p : tmpl->pieces) {
      if (p.is_field && !captures.count(p.text)) {
        return fail(rec.template_pos[key],
                    fmt::format("extractor '{}': {} uses {{{}}} but the pattern has no such named capture", x.id,
                                key, p.text));
      }
    }
  }
  if (x.catalog) {
    for (const auto& p : x.catalog->key.pieces) {
      if (p.is_field && !captures.count(p.text)) {
        return fail(rec.template_pos["catalog"], fmt::format("catalog key uses {{{}}}, not a named capture", p.text));
      }
    }
  }
  for (size_t i = 0; i < x.fields.size(); ++i) {
    if (!captures.count(x.fields[i])) {
      return fail(rec.field_pos[i], fmt::format("field '{}' is not a named capture", x.fields[i]));
    }
  }
  return true;
}

}  // namespace

namespace {

// A label field no extractor of the symptom can fill: the verdict would print nothing where the label
// promises a value (render_label renders a missing field empty). Checked on each positive fixture the pattern matches: its
// captures render the symptom id, which picks the label (exact entry, else glob) as a run would;
// fields the pattern or its context rows define, kept by `fields:`, may fill the label (an optional
// group that did not match is empty, not missing). Catalogue symptoms, whose labels come from their
// entries, and extractors with a field hook (which may add fields) are not checked.
void warn_unfilled_label_fields(const RuleSet& rs, LoadResult& result) {
  for (const Extractor& x : rs.extractors) {
    if (x.catalog || !x.re || rs.field_hooks.count(x.id)) continue;
    std::set<std::string> defined(x.group_names.begin(), x.group_names.end());
    if (x.context) {
      for (const auto& row : x.context->rows) defined.insert(row.group_names.begin(), row.group_names.end());
    }
    defined.erase("");
    if (!x.fields.empty()) defined = std::set<std::string>(x.fields.begin(), x.fields.end());
    std::set<std::string> reported;
    for (const Fixture& f : x.fixtures) {
      if (f.expect_none) continue;
      std::string_view line = fixture_line(f.input);
      int groups = x.re->NumberOfCapturingGroups();
      std::vector<re2::StringPiece> sub(static_cast<size_t>(groups) + 1);
      if (!x.re->Match(line, 0, line.size(), RE2::UNANCHORED, sub.data(), groups + 1)) continue;
      std::map<std::string, std::string> captured;
      for (int i = 1; i <= groups; ++i) {
        if (!x.group_names[i].empty()) captured[x.group_names[i]] = std::string(sub[i].data(), sub[i].size());
      }
      std::string id;
      if (!x.symptom.render(
              [&](const std::string& k) -> const std::string* {
                auto it = captured.find(k);
                return it == captured.end() ? nullptr : &it->second;
              },
              id))
        continue;
      const std::string label = rs.attributes(id, {}).label;
      for (size_t open = label.find('{'); open != std::string::npos; open = label.find('{', open + 1)) {
        size_t close = label.find('}', open);
        if (close == std::string::npos) break;
        std::string field = label.substr(open + 1, close - open - 1);
        if (defined.count(field) || !reported.insert(field).second) continue;
        result.warnings.push_back(
            {x.pos.file, x.pos.line, x.pos.column,
             fmt::format("extractor '{}': the label of symptom '{}' uses {{{}}}, which the pattern never captures "
                         "(the verdict would show nothing there)",
                         x.id, id, field)});
      }
    }
  }
}

// Messages of every step in file order, then line and column (the steps find them in their own
// order); messages without a file last.
void sort_messages(const std::vector<RuleText>& files, std::vector<LoadMessage>& messages) {
  std::map<std::string, size_t> order;
  for (size_t i = 0; i < files.size(); ++i) order.emplace(files[i].name, i);
  auto key = [&](const LoadMessage& m) {
    auto it = order.find(m.file);
    return std::make_tuple(it == order.end() ? files.size() : it->second, m.line, m.column);
  };
  std::stable_sort(messages.begin(), messages.end(),
                   [&](const LoadMessage& x, const LoadMessage& y) { return key(x) < key(y); });
}

}  // namespace

LoadResult compile_rules(RuleRecords&& records, std::string_view compiled_cache) {
  collect_rules(records);
  RuleRecords::Impl& r = *records.impl_;
  LoadResult result = std::move(r.messages);
  std::shared_ptr<RuleSet> rs = std::move(r.collected);
  detail::PcreMatcher fixture_matcher;
  for (auto& x : r.to_compile) {
    if (compile_extractor(x, fixture_matcher, result)) rs->extractors.push_back(std::move(x.rule));
  }
  r.to_compile.clear();
  std::string digest = sha256_hex(r.files);
  if (result.errors.empty() && (compiled_cache.empty() || !load_cached_databases(*rs, digest, compiled_cache)))
    compile_databases(*rs, result);
  if (result.errors.empty()) {
    for (const auto& db : rs->dbs) {
      if (!db) continue;
      for (const ScanDatabase* part : {&db->collapsed, &db->exact}) {
        if (part->db != nullptr && hs_alloc_scratch(part->db, &rs->scratch_prototype) != HS_SUCCESS) {
          result.errors.push_back({"", 0, 0, "Vectorscan could not allocate scratch space"});
          break;
        }
      }
    }
  }
  sort_messages(r.files, result.errors);
  sort_messages(r.files, result.warnings);
  if (!result.errors.empty()) return result;
  RuleSetInfo& info = rs->info;
  info.digest = digest;
  info.compiled_from_cache = rs->from_cache;
  info.files = r.files.size();
  info.extractors = rs->extractors.size();
  info.metric_extractors = rs->metric_extractors.size();
  info.catalogs = rs->catalogs.size();
  for (const auto& c : rs->catalogs) info.catalog_entries += c.entries.size();
  info.refiners = rs->refiners.size();
  for (const auto& x : rs->extractors) {
    info.fixtures += x.fixtures.size();
    info.prefilter_patterns += x.prefilter ? 1 : 0;
    info.exact_scan_patterns += !x.collapse_safe && x.scan_atoms.empty() ? 1 : 0;
    rs->pcre_patterns += x.pcre ? 1 : 0;
  }
  for (const auto& m : rs->metric_extractors) info.fixtures += m.fixtures.size();
  for (size_t i = 0; i < rs->external_rules.size(); ++i) {
    const ExternalRule& e = rs->external_rules[i];
    if (e.kind == ExternalRule::Kind::kFieldHook) {
      rs->field_hooks[e.extractor].push_back(i);
      ++info.field_hooks;
    } else {
      ++info.external_refiners;
    }
    info.fixtures += e.fixtures.size();
  }
  warn_unfilled_label_fields(*rs, result);
  sort_messages(r.files, result.warnings);
  result.rules = std::move(rs);
  return result;
}

LoadResult load_rules(const std::vector<RuleText>& files, std::string_view compiled_cache) {
  RuleRecords records;
  for (const auto& f : files) read_rules(f, records);
  collect_rules(records);
  return compile_rules(std::move(records), compiled_cache);
}

RuleSetInfo describe(const RuleSet& rules) { return rules.info; }

std::string rules_digest(const std::vector<RuleText>& files) { return sha256_hex(files); }

std::string serialize_compiled(const RuleSet& rules) {
  std::string out = fmt::format("{}\n{}\n{}\n", kCacheMagic, rules.info.digest, hs_version());
  std::vector<std::string> prefilter;
  for (size_t i = 0; i < rules.extractors.size(); ++i) {
    if (rules.extractors[i].prefilter) prefilter.push_back(std::to_string(i));
  }
  out += fmt::format("{}\n", fmt::join(prefilter, ","));
  std::vector<std::string> exact;
  for (size_t i = 0; i < rules.extractors.size(); ++i) {
    if (!rules.extractors[i].collapse_safe) exact.push_back(std::to_string(i));
  }
  out += fmt::format("{}\n", fmt::join(exact, ","));
  std::vector<std::string> by_atoms;
  for (size_t i = 0; i < rules.extractors.size(); ++i) {
    if (!rules.extractors[i].collapse_safe && !rules.extractors[i].scan_atoms.empty()) by_atoms.push_back(std::to_string(i));
  }
  out += fmt::format("{}\n", fmt::join(by_atoms, ","));
  for (int kind = 0; kind < kObservationKindCount; ++kind) {
    const auto& db = rules.dbs[kind];
    if (!db) continue;
    for (const auto& [which, part] : {std::pair<char, const ScanDatabase*>{'c', &db->collapsed}, {'e', &db->exact}}) {
      if (part->db == nullptr) continue;
      char* bytes = nullptr;
      size_t size = 0;
      if (hs_serialize_database(part->db, &bytes, &size) != HS_SUCCESS) return "";
      out += fmt::format("{} {} {}\n", kind, which, size);
      out.append(bytes, size);
      std::free(bytes);
    }
  }
  return out;
}

std::vector<PatternInfo> list_patterns(const RuleSet& rules) {
  std::vector<PatternInfo> out;
  for (const auto& x : rules.extractors) out.push_back({x.id, x.pattern, x.case_insensitive});
  return out;
}

}  // namespace attribution
