#include "commands/eval.h"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <thread>

#include "commands/analyze.h"
#include "attribution/edge/rules_dir.h"

namespace attribution::blueprint {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const std::vector<std::string> kDomains = {"gpu",       "network",     "node",    "storage",
                                           "scheduler", "application", "unknown", "none"};
const std::vector<std::string> kQualities = {"insufficient", "ambiguous", "probable", "definitive"};

int quality_rank(const std::string& q) {
  auto it = std::find(kQualities.begin(), kQualities.end(), q);
  return it == kQualities.end() ? -1 : static_cast<int>(it - kQualities.begin());
}

template <class T>
bool contains(const std::vector<T>& v, const T& x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

std::string where(const std::string& file, const YAML::Mark& m) {
  if (m.is_null()) return file;
  return fmt::format("{}:{}:{}", file, m.line + 1, m.column + 1);
}

// Reads a scalar or a sequence of scalars (a single value is accepted for a list).
bool string_list(const YAML::Node& n, const std::string& file, const std::string& key, std::vector<std::string>& out,
                 std::string& error) {
  if (n.IsNull()) return true;
  if (n.IsScalar()) {
    out.push_back(n.Scalar());
    return true;
  }
  if (!n.IsSequence()) {
    error = fmt::format("{}: '{}' must be a list", where(file, n.Mark()), key);
    return false;
  }
  for (const auto& e : n) {
    if (!e.IsScalar()) {
      error = fmt::format("{}: '{}' entries must be strings", where(file, e.Mark()), key);
      return false;
    }
    out.push_back(e.Scalar());
  }
  return true;
}

std::string read_file(const fs::path& path, bool& ok) {
  std::ifstream in(path, std::ios::binary);
  ok = static_cast<bool>(in);
  std::ostringstream ss;
  if (ok) ss << in.rdbuf();
  return ss.str();
}

struct CaseRef {
  std::string name;
  fs::path dir;
};

bool is_case_dir(const fs::path& dir) {
  std::error_code ec;
  return fs::is_regular_file(dir / "expected.yaml", ec);
}

void find_cases(const fs::path& dir, const fs::path& base, std::vector<CaseRef>& out) {
  std::error_code ec;
  if (is_case_dir(dir)) {
    std::string name = fs::relative(dir, base, ec).generic_string();
    if (ec || name.empty() || name == ".") {
      fs::path abs = fs::weakly_canonical(dir, ec);
      name = (ec ? dir : abs).filename().string();
      if (name.empty()) name = dir.string();
    }
    out.push_back({name, dir});
    return;
  }
  std::vector<fs::path> subdirs;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    std::string fname = it->path().filename().string();
    if (fname.empty() || fname[0] == '.' || fname[0] == '_') continue;
    std::error_code e2;
    if (it->is_directory(e2) && !it->is_symlink(e2)) subdirs.push_back(it->path());
  }
  std::sort(subdirs.begin(), subdirs.end());
  for (const auto& s : subdirs) find_cases(s, base, out);
}

struct CaseResult {
  CaseRef ref;
  bool ok = false;  // judged (no error)
  std::string error;
  Expectation expected;
  bool expected_ok = false;
  VerdictDigest got;
  Judgement judgement;
  json unrecognized = json::array();
};

CaseResult run_case(const CaseRef& ref, const std::shared_ptr<const RuleSet>& rules) {
  CaseResult r;
  r.ref = ref;
  try {
    fs::path exp_path = ref.dir / "expected.yaml";
    bool readable = false;
    std::string text = read_file(exp_path, readable);
    if (!readable) {
      r.error = fmt::format("{}: cannot read", exp_path.string());
      return r;
    }
    if (!parse_expectation(text, exp_path.string(), r.expected, r.error)) return r;
    r.expected_ok = true;
    std::error_code ec;
    if (!fs::is_regular_file(ref.dir / "workload.yaml", ec)) {
      r.error = fmt::format("{}: no workload.yaml beside expected.yaml", ref.dir.string());
      return r;
    }
    Bundle bundle;
    if (!read_bundle(ref.dir.string(), bundle, r.error)) return r;
    AnalyzeOptions options;
    options.threads = 1;
    AnalysisResult result = analyze_bundle(std::move(bundle), rules, options);
    json v = json::parse(result.verdict.json);
    r.got = digest_verdict(v);
    r.judgement = judge(r.expected, r.got);
    if (v.contains("unrecognized") && v["unrecognized"].is_array()) r.unrecognized = v["unrecognized"];
    r.ok = true;
  } catch (const std::exception& e) {
    r.error = fmt::format("{}: {}", ref.dir.string(), e.what());
  }
  return r;
}


std::string join(const std::vector<std::string>& v, const char* sep) { return fmt::format("{}", fmt::join(v, sep)); }

std::string expected_text(const Expectation& e) {
  std::string s = e.undetermined ? "undetermined" : "";
  if (!e.domains.empty()) s += (s.empty() ? "" : " or ") + join(e.domains, "|");
  if (!e.outcomes.empty()) s += "/" + join(e.outcomes, "|");
  if (!e.quality_floor.empty() || !e.quality_ceiling.empty()) {
    s += fmt::format(" [{}..{}]", e.quality_floor.empty() ? kQualities.front() : e.quality_floor,
                     e.quality_ceiling.empty() ? kQualities.back() : e.quality_ceiling);
  }
  return s;
}

std::string got_text(const VerdictDigest& g) {
  std::string s = fmt::format("{} {} {}", g.domain, g.outcome, g.quality);
  if (!g.root_symptom.empty()) {
    s += " root " + g.root_symptom;
    if (!g.root_node.empty()) s += "@" + g.root_node;
  }
  return s;
}

double percent(size_t a, size_t b) { return b == 0 ? 0.0 : std::round(1000.0 * a / b) / 10.0; }

json expectation_json(const Expectation& e) {
  json j = {{"domains", e.domains}, {"outcomes", e.outcomes}, {"undetermined", e.undetermined},
            {"culprit_nodes", e.culprit_nodes}, {"culprit_ranks", e.culprit_ranks}, {"tags", e.tags}};
  j["quality_floor"] = e.quality_floor.empty() ? json(nullptr) : json(e.quality_floor);
  j["quality_ceiling"] = e.quality_ceiling.empty() ? json(nullptr) : json(e.quality_ceiling);
  return j;
}

// The corpus-wide view of the verdicts' `unrecognized` entries, by normalised key.
struct UnrecognizedTotal {
  std::string key, text;
  uint64_t count = 0;
  std::vector<std::string> cases;  // in case order
};

std::vector<UnrecognizedTotal> rank_unrecognized(const std::vector<CaseResult>& results, size_t limit) {
  std::map<std::string, UnrecognizedTotal> by_key;
  for (const auto& r : results) {
    for (const auto& u : r.unrecognized) {
      if (!u.is_object() || !u.contains("key")) continue;
      std::string key = u.value("key", "");
      UnrecognizedTotal& t = by_key[key];
      if (t.key.empty()) {
        t.key = key;
        t.text = u.value("text", "");
      }
      t.count += u.value("count", uint64_t{0});
      if (t.cases.empty() || t.cases.back() != r.ref.name) t.cases.push_back(r.ref.name);
    }
  }
  std::vector<UnrecognizedTotal> out;
  for (auto& [k, t] : by_key) out.push_back(std::move(t));
  std::sort(out.begin(), out.end(), [](const UnrecognizedTotal& a, const UnrecognizedTotal& b) {
    if (a.cases.size() != b.cases.size()) return a.cases.size() > b.cases.size();
    if (a.count != b.count) return a.count > b.count;
    return a.key < b.key;
  });
  if (out.size() > limit) out.resize(limit);
  return out;
}

constexpr size_t kCorpusUnrecognized = 25;
constexpr size_t kExampleCases = 3;

}  // namespace

bool parse_expectation(const std::string& text, const std::string& file, Expectation& out, std::string& error) {
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    error = fmt::format("{}: {}", where(file, e.mark), e.msg);
    return false;
  }
  if (!root.IsMap()) {
    error = fmt::format("{}: expected a mapping of answer-key fields", where(file, root.Mark()));
    return false;
  }
  static const std::vector<std::string> kKeys = {"domains",       "outcomes", "quality_floor", "quality_ceiling",
                                                 "undetermined",  "culprit_nodes", "culprit_ranks", "tags",
                                                 "note",          "widened"};
  Expectation e;
  bool have_domains = false;
  try {
    for (const auto& kv : root) {
      std::string key = kv.first.Scalar();
      const YAML::Node& v = kv.second;
      if (!contains(kKeys, key)) {
        error = fmt::format("{}: unknown key '{}' (known: {})", where(file, kv.first.Mark()), key, join(kKeys, ", "));
        return false;
      }
      if (key == "domains") {
        have_domains = true;
        if (!string_list(v, file, key, e.domains, error)) return false;
        size_t i = 0;
        for (const auto& d : e.domains) {
          if (!contains(kDomains, d)) {
            YAML::Mark m = v.IsSequence() ? v[i].Mark() : v.Mark();
            error = fmt::format("{}: unknown domain '{}' (one of {})", where(file, m), d, join(kDomains, ", "));
            return false;
          }
          ++i;
        }
      } else if (key == "outcomes") {
        if (!string_list(v, file, key, e.outcomes, error)) return false;
        size_t i = 0;
        for (const auto& o : e.outcomes) {
          auto dot = o.find('.');
          if (dot == std::string::npos || dot + 1 >= o.size() || !contains(kDomains, o.substr(0, dot))) {
            YAML::Mark m = v.IsSequence() ? v[i].Mark() : v.Mark();
            error = fmt::format("{}: outcome '{}' is not <domain>.<what> with a domain of {}", where(file, m), o,
                                join(kDomains, ", "));
            return false;
          }
          ++i;
        }
      } else if (key == "quality_floor" || key == "quality_ceiling") {
        std::string q = v.IsScalar() ? v.Scalar() : "";
        if (quality_rank(q) < 0) {
          error = fmt::format("{}: {} must be one of {}", where(file, v.Mark()), key, join(kQualities, ", "));
          return false;
        }
        (key == "quality_floor" ? e.quality_floor : e.quality_ceiling) = q;
      } else if (key == "undetermined") {
        if (!v.IsScalar() || (v.Scalar() != "true" && v.Scalar() != "false")) {
          error = fmt::format("{}: undetermined must be true or false", where(file, v.Mark()));
          return false;
        }
        e.undetermined = v.Scalar() == "true";
      } else if (key == "culprit_nodes") {
        if (!string_list(v, file, key, e.culprit_nodes, error)) return false;
      } else if (key == "culprit_ranks") {
        std::vector<std::string> ranks;
        if (!string_list(v, file, key, ranks, error)) return false;
        size_t i = 0;
        for (const auto& s : ranks) {
          bool digits = !s.empty() && s.size() < 9 && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
          if (!digits) {
            YAML::Mark m = v.IsSequence() ? v[i].Mark() : v.Mark();
            error = fmt::format("{}: culprit rank '{}' is not a global rank number", where(file, m), s);
            return false;
          }
          e.culprit_ranks.push_back(std::stoi(s));
          ++i;
        }
      } else if (key == "tags") {
        if (!string_list(v, file, key, e.tags, error)) return false;
      } else if (key == "note" || key == "widened") {
        if (!v.IsNull() && !v.IsScalar()) {
          error = fmt::format("{}: {} must be text", where(file, v.Mark()), key);
          return false;
        }
        (key == "note" ? e.note : e.widened) = v.IsScalar() ? v.Scalar() : "";
      }
    }
  } catch (const YAML::Exception& ex) {
    error = fmt::format("{}: {}", where(file, ex.mark), ex.msg);
    return false;
  }
  if (!e.undetermined && e.domains.empty()) {
    error = fmt::format("{}: 'domains' is required unless undetermined: true", where(file, root.Mark()));
    (void)have_domains;
    return false;
  }
  if (!e.quality_floor.empty() && !e.quality_ceiling.empty() &&
      quality_rank(e.quality_floor) > quality_rank(e.quality_ceiling)) {
    error = fmt::format("{}: quality_floor {} is above quality_ceiling {}", where(file, root["quality_floor"].Mark()),
                        e.quality_floor, e.quality_ceiling);
    return false;
  }
  out = std::move(e);
  return true;
}

VerdictDigest digest_verdict(const json& v) {
  VerdictDigest d;
  auto str = [](const json& j, const char* key) -> std::string {
    if (!j.is_object() || !j.contains(key) || !j[key].is_string()) return "";
    return j[key].get<std::string>();
  };
  d.domain = str(v, "domain");
  d.outcome = str(v, "outcome");
  if (v.contains("quality") && v["quality"].is_object()) {
    const json& q = v["quality"];
    d.quality = str(q, "level");
    if (q.contains("candidates") && q["candidates"].is_array()) {
      for (const auto& c : q["candidates"]) {
        std::string n = str(c, "node");
        if (!n.empty()) d.candidate_nodes.push_back(n);
        if (c.contains("rank") && c["rank"].is_number_integer()) d.candidate_ranks.push_back(c["rank"].get<int>());
      }
    }
  }
  if (v.contains("root_cause") && v["root_cause"].is_object()) {
    const json& rc = v["root_cause"];
    d.root_symptom = str(rc, "symptom");
    d.root_node = str(rc, "node");
    if (rc.contains("rank") && rc["rank"].is_number_integer()) {
      d.root_rank = rc["rank"].get<int>();
      d.root_ranks.insert(d.root_rank);
    }
    // "0-3,5": the ranks of the root group
    std::string ranks = str(rc, "ranks");
    std::stringstream ss(ranks);
    std::string part;
    while (std::getline(ss, part, ',')) {
      try {
        auto dash = part.find('-');
        int lo = std::stoi(part.substr(0, dash));
        int hi = dash == std::string::npos ? lo : std::stoi(part.substr(dash + 1));
        for (int r = lo; r <= hi && r - lo < 100000; ++r) d.root_ranks.insert(r);
      } catch (const std::exception&) {
      }
    }
  }
  if (v.contains("affected_nodes") && v["affected_nodes"].is_array()) {
    for (const auto& n : v["affected_nodes"]) {
      if (n.is_string()) d.affected_nodes.push_back(n.get<std::string>());
    }
  }
  return d;
}

Judgement judge(const Expectation& e, const VerdictDigest& g) {
  Judgement j;
  int q = quality_rank(g.quality);
  if (e.undetermined) {
    bool ok = (q >= 0 && q <= quality_rank("ambiguous")) || g.domain == "unknown" ||
              (!e.domains.empty() && contains(e.domains, g.domain) && q >= 0 && q <= quality_rank("probable"));
    if (!ok) {
      j.reasons.push_back(fmt::format("undetermined case, but the verdict is {} {}{}", g.quality, g.domain,
                                      e.domains.empty() ? "" : " (accepted up to probable: " + join(e.domains, "|") + ")"));
    }
  } else {
    if (!contains(e.domains, g.domain)) {
      j.reasons.push_back(fmt::format("domain {} not in [{}]", g.domain, join(e.domains, ", ")));
    }
    if (!e.outcomes.empty() && !contains(e.outcomes, g.outcome)) {
      j.reasons.push_back(fmt::format("outcome {} not in [{}]", g.outcome, join(e.outcomes, ", ")));
    }
    if (!e.quality_floor.empty() && q < quality_rank(e.quality_floor)) {
      j.reasons.push_back(fmt::format("quality {} below the floor {}", g.quality, e.quality_floor));
    }
    if (!e.quality_ceiling.empty() && q > quality_rank(e.quality_ceiling)) {
      j.reasons.push_back(fmt::format("quality {} above the ceiling {}", g.quality, e.quality_ceiling));
    }
    if (q < 0) j.reasons.push_back(fmt::format("unknown quality '{}'", g.quality));
  }
  j.correct = j.reasons.empty();
  j.confident_wrong = !j.correct && g.quality == "definitive";
  if (!e.culprit_nodes.empty() || !e.culprit_ranks.empty()) {
    bool hit = false;
    for (const auto& n : e.culprit_nodes) {
      hit = hit || n == g.root_node || contains(g.affected_nodes, n) || contains(g.candidate_nodes, n);
    }
    for (int r : e.culprit_ranks) hit = hit || g.root_ranks.count(r) > 0 || contains(g.candidate_ranks, r);
    j.culprit_hit = hit ? 1 : 0;
  }
  return j;
}

int run_eval(const EvalOptions& options, std::ostream& out, std::ostream& err) {
  if (options.output != "json" && options.output != "text") {
    err << "error: --output must be json or text\n";
    return kExitUsage;
  }
  if (options.dirs.empty()) {
    err << "error: eval needs at least one directory\n";
    return kExitUsage;
  }
  std::vector<CaseRef> cases;
  for (const auto& d : options.dirs) {
    std::error_code ec;
    if (!fs::is_directory(d, ec)) {
      err << "error: " << d << ": not a directory\n";
      return kExitError;
    }
    find_cases(fs::path(d), fs::path(d), cases);
  }
  std::stable_sort(cases.begin(), cases.end(), [](const CaseRef& a, const CaseRef& b) {
    return std::tie(a.name, a.dir) < std::tie(b.name, b.dir);
  });
  if (cases.empty()) {
    err << "error: no cases (directories with expected.yaml) under " << join(options.dirs, ", ") << "\n";
    return kExitError;
  }
  std::vector<std::string> errors;
  auto rules = edge::load_rules_from(edge::resolve_rules_location(options.rules), errors);
  if (!rules) {
    for (const auto& e : errors) err << "error: " << e << "\n";
    return kExitError;
  }

  std::vector<CaseResult> results(cases.size());
  unsigned jobs = options.jobs != 0 ? options.jobs : std::max(1u, std::thread::hardware_concurrency());
  jobs = std::min<unsigned>(jobs, static_cast<unsigned>(cases.size()));
  std::atomic<size_t> next{0};
  auto worker = [&] {
    for (size_t i = next++; i < cases.size(); i = next++) results[i] = run_case(cases[i], rules);
  };
  if (jobs <= 1) {
    worker();
  } else {
    std::vector<std::thread> pool;
    for (unsigned t = 0; t < jobs; ++t) pool.emplace_back(worker);
    for (auto& t : pool) t.join();
  }

  // Summary.
  size_t total = results.size(), correct = 0, confident_wrong = 0, case_errors = 0, culprit_cases = 0, culprit_hits = 0;
  std::map<std::string, std::map<std::string, size_t>> confusion;
  std::map<std::string, std::pair<size_t, size_t>> precision;  // level → (verdicts, correct)
  for (const auto& q : kQualities) precision[q] = {0, 0};
  std::map<std::string, std::pair<size_t, size_t>> tags;  // tag → (correct, total)
  for (const auto& r : results) {
    bool ok = r.ok && r.judgement.correct;
    correct += ok;
    case_errors += !r.ok;
    if (r.ok) {
      confident_wrong += r.judgement.confident_wrong;
      if (r.judgement.culprit_hit >= 0) {
        ++culprit_cases;
        culprit_hits += r.judgement.culprit_hit;
      }
      auto& p = precision[r.got.quality];
      p.first++;
      p.second += ok;
    }
    std::string row = !r.expected_ok ? "(error)" : !r.expected.domains.empty() ? r.expected.domains.front() : "(undetermined)";
    if (r.expected_ok && r.expected.undetermined) row = "(undetermined)";
    std::string col = r.ok ? r.got.domain : "(error)";
    confusion[row][col]++;
    for (const auto& t : r.expected.tags) {
      tags[t].first += ok;
      tags[t].second++;
    }
  }
  double accuracy = percent(correct, total);
  double culprit_rate = percent(culprit_hits, culprit_cases);
  auto unrecognized = rank_unrecognized(results, kCorpusUnrecognized);

  if (options.output == "json") {
    json doc;
    json cs = json::array();
    for (const auto& r : results) {
      json c = {{"case", r.ref.name}, {"correct", r.ok && r.judgement.correct},
                {"confident_wrong", r.ok && r.judgement.confident_wrong}};
      c["expected"] = r.expected_ok ? expectation_json(r.expected) : json(nullptr);
      if (r.ok) {
        c["verdict"] = {{"domain", r.got.domain},
                        {"outcome", r.got.outcome},
                        {"quality", r.got.quality},
                        {"root_symptom", r.got.root_symptom.empty() ? json(nullptr) : json(r.got.root_symptom)},
                        {"root_node", r.got.root_node.empty() ? json(nullptr) : json(r.got.root_node)},
                        {"root_rank", r.got.root_rank < 0 ? json(nullptr) : json(r.got.root_rank)},
                        {"affected_nodes", r.got.affected_nodes}};
        c["culprit_hit"] = r.judgement.culprit_hit < 0 ? json(nullptr) : json(r.judgement.culprit_hit == 1);
        c["reasons"] = r.judgement.reasons;
        c["unrecognized"] = r.unrecognized.size();
      } else {
        c["verdict"] = nullptr;
        c["culprit_hit"] = nullptr;
        c["reasons"] = json::array({r.error});
        c["error"] = r.error;
      }
      cs.push_back(std::move(c));
    }
    doc["cases"] = std::move(cs);
    json s = {{"correct", correct},
              {"total", total},
              {"accuracy", accuracy},
              {"wrong", total - correct},
              {"confident_wrong", confident_wrong},
              {"errors", case_errors},
              {"culprit_hits", culprit_hits},
              {"culprit_cases", culprit_cases},
              {"culprit_rate", culprit_rate}};
    json conf = json::object();
    for (const auto& [row, cols] : confusion) {
      for (const auto& [col, n] : cols) conf[row][col] = n;
    }
    s["confusion"] = conf;
    json prec = json::object();
    for (const auto& [level, p] : precision) prec[level] = {{"verdicts", p.first}, {"correct", p.second}};
    s["quality_precision"] = prec;
    json tj = json::object();
    for (const auto& [t, p] : tags) tj[t] = {{"correct", p.first}, {"total", p.second}};
    s["tags"] = tj;
    json un = json::array();
    for (const auto& u : unrecognized) {
      std::vector<std::string> examples(u.cases.begin(), u.cases.begin() + std::min(kExampleCases, u.cases.size()));
      un.push_back({{"key", u.key}, {"text", u.text}, {"count", u.count}, {"cases", u.cases.size()},
                    {"example_cases", examples}});
    }
    s["unrecognized"] = un;
    doc["summary"] = std::move(s);
    out << doc.dump(2, ' ', false, json::error_handler_t::replace) << "\n";
  } else {
    size_t width = 8;
    for (const auto& r : results) width = std::max(width, r.ref.name.size());
    width = std::min<size_t>(width, 60);
    for (const auto& r : results) {
      std::string status = !r.ok ? "WRONG" : r.judgement.correct ? "correct"
                           : r.judgement.confident_wrong ? "CONFIDENT-WRONG" : "WRONG";
      if (!r.ok) {
        out << fmt::format("{:<{}}  {:<15}  error: {}\n", r.ref.name, width, status, r.error);
        continue;
      }
      std::string culprit = r.judgement.culprit_hit < 0 ? "-" : r.judgement.culprit_hit ? "hit" : "miss";
      out << fmt::format("{:<{}}  {:<15}  expected {}  got {}  culprit {}\n", r.ref.name, width, status,
                         expected_text(r.expected), got_text(r.got), culprit);
      if (!r.judgement.correct) {
        for (const auto& why : r.judgement.reasons) out << fmt::format("{:<{}}    - {}\n", "", width, why);
      }
    }
    out << "\n";
    out << fmt::format("correct {}/{} ({:.1f}%)  wrong {}  confident-wrong {}  errors {}\n", correct, total, accuracy,
                       total - correct, confident_wrong, case_errors);
    out << fmt::format("culprit hits {}/{}{}\n", culprit_hits, culprit_cases,
                       culprit_cases == 0 ? "" : fmt::format(" ({:.1f}%)", culprit_rate));
    // Confusion table: rows expected domain, columns verdict domain.
    std::set<std::string> cols_set;
    for (const auto& [row, cols] : confusion) {
      for (const auto& [col, n] : cols) cols_set.insert(col);
    }
    std::vector<std::string> cols(cols_set.begin(), cols_set.end());
    size_t rw = 14;
    for (const auto& [row, c] : confusion) rw = std::max(rw, row.size());
    out << "\ndomain confusion (rows: expected, columns: verdict)\n";
    out << fmt::format("  {:<{}}", "", rw);
    for (const auto& c : cols) out << fmt::format(" {:>{}}", c, std::max<size_t>(c.size(), 3));
    out << "\n";
    for (const auto& [row, cs] : confusion) {
      out << fmt::format("  {:<{}}", row, rw);
      for (const auto& c : cols) {
        auto it = cs.find(c);
        std::string cell = it == cs.end() ? "." : std::to_string(it->second);
        out << fmt::format(" {:>{}}", cell, std::max<size_t>(c.size(), 3));
      }
      out << "\n";
    }
    out << "\nquality precision (correct / verdicts at the level)\n";
    for (auto it = kQualities.rbegin(); it != kQualities.rend(); ++it) {
      const auto& p = precision[*it];
      out << fmt::format("  {:<13} {}/{}{}\n", *it, p.second, p.first,
                         p.first == 0 ? "" : fmt::format(" ({:.1f}%)", percent(p.second, p.first)));
    }
    for (const auto& [level, p] : precision) {
      if (quality_rank(level) < 0) out << fmt::format("  {:<13} {}/{}\n", level, p.second, p.first);
    }
    if (!tags.empty()) {
      out << "\ntags (correct/total)\n";
      for (const auto& [t, p] : tags) out << fmt::format("  {:<24} {}/{}\n", t, p.first, p.second);
    }
    if (!unrecognized.empty()) {
      out << "\nunrecognized error-like lines across the corpus (cases, occurrences, line, e.g. cases)\n";
      for (const auto& u : unrecognized) {
        std::vector<std::string> examples(u.cases.begin(), u.cases.begin() + std::min(kExampleCases, u.cases.size()));
        out << fmt::format("  {:>3} {:>6}x  {}\n  {:>11}  e.g. {}\n", u.cases.size(), u.count, u.text.substr(0, 150), "",
                           join(examples, ", "));
      }
    }
  }

  int rc = kExitOk;
  if (options.min_accuracy >= 0 && accuracy < options.min_accuracy) {
    err << fmt::format("eval: accuracy {:.1f}% is below --min-accuracy {}\n", accuracy, options.min_accuracy);
    rc = kExitError;
  }
  if (options.max_confident_wrong >= 0 && confident_wrong > static_cast<size_t>(options.max_confident_wrong)) {
    err << fmt::format("eval: {} confident-wrong verdict(s), more than --max-confident-wrong {}\n", confident_wrong,
                       options.max_confident_wrong);
    rc = kExitError;
  }
  if (options.min_culprit_rate >= 0 && culprit_cases > 0 && culprit_rate < options.min_culprit_rate) {
    err << fmt::format("eval: culprit hit rate {:.1f}% ({}/{}) is below --min-culprit-rate {}\n", culprit_rate,
                       culprit_hits, culprit_cases, options.min_culprit_rate);
    rc = kExitError;
  }
  for (const auto& r : results) {
    if (!r.ok) err << "error: " << r.error << "\n";
  }
  return rc;
}

}  // namespace attribution::blueprint
