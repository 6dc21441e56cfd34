// Held-out bundles (tests/unseen/) written from SPEC and FORMATS by someone who had not read the
// rules or the engine (the engine was then changed in the commit that added this test; see
// tests/unseen/README.md: tests/real/ is where generalisation is measured now). Enforced, per
// bundle:
//   - a definitive verdict never contradicts the expected domain;
//   - the root cause's node is the expected `root_node` (none when it is null), in every bundle;
//   - the root cause is never a symptom the rules give the role victim (or context).
// The first two have known misses, listed by bundle in kKnownMisses: a miss not listed fails, and
// so does a listed one that no longer happens. Over the set (floors, not a per-bundle oracle): the
// domain is right on at least 9 of 10, and outcome and quality are both right on at least
// kMinFullMatches bundles (the level reached); each outcome/quality miss is printed.
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "commands/analyze.h"

namespace attribution::blueprint {
namespace {

namespace fs = std::filesystem;

// 8 since data-dependent Python exception classes (KeyError, ValueError, IndexError, ...) are generic
// evidence (rules/symptoms.yaml): keyerror-one-rank-of-16 expects a lone KeyError from a malformed record
// to be definitive and now gets probable, the level five public threads of the held-out batches settled at
// for such tracebacks. The bundle's expectation is kept as it was written.
constexpr int kMinFullMatches = 8;

// Per-bundle misses the engine has today, by check ("domain": a definitive verdict in another
// domain; "root_node": another root node). Listed, they do not fail the test; a miss not listed
// fails it, and so does a listed miss that no longer happens (remove it from here when fixed).
const std::set<std::pair<std::string, std::string>> kKnownMisses = {
    // Expected gpu.fell_off_bus (Xid 79); the engine names the fatal PCIe AER on the GPU's root port
    // two seconds earlier (node.pcie, definitive) on the same node.
    {"xid79-dmesg-T-tokyo", "domain"},
    // Expected no root node (two clients evicted by one OST: the storage server); the engine names
    // cn-0318, the first evicted client.
    {"lustre-eviction-checkpoint-oserror", "root_node"},
};

// The role (cause, victim, context) the rules give a symptom id: a `symptoms:` entry (exact id,
// else the longest `prefix*` glob) or the Xid catalogue entry of gpu.xid.<code> (docs/rules.md).
class SymptomRoles {
 public:
  explicit SymptomRoles(const fs::path& rules_dir) {
    for (const auto& f : fs::directory_iterator(rules_dir)) {
      if (!f.is_regular_file() || f.path().extension() != ".yaml") continue;
      YAML::Node doc = YAML::LoadFile(f.path().string());
      for (const auto& s : doc["symptoms"]) {
        if (s["id"] && s["role"]) roles_[s["id"].as<std::string>()] = s["role"].as<std::string>();
      }
      for (const auto& c : doc["catalogs"]) {
        if (!c["id"] || c["id"].as<std::string>() != "xid") continue;
        for (const auto& e : c["entries"]) {
          if (e.second["role"]) xid_[e.first.as<std::string>()] = e.second["role"].as<std::string>();
        }
        if (c["default"] && c["default"]["role"]) xid_default_ = c["default"]["role"].as<std::string>();
      }
    }
  }
  std::string role(const std::string& id) const {
    const std::string xid = "gpu.xid.";
    if (id.rfind(xid, 0) == 0) {
      auto it = xid_.find(id.substr(xid.size()));
      if (it != xid_.end()) return it->second;
    }
    if (auto it = roles_.find(id); it != roles_.end()) return it->second;
    std::string best, role;
    for (const auto& [pat, r] : roles_) {
      if (pat.empty() || pat.back() != '*') continue;
      std::string prefix = pat.substr(0, pat.size() - 1);
      if (id.rfind(prefix, 0) == 0 && prefix.size() >= best.size()) best = prefix, role = r;
    }
    if (!role.empty()) return role;
    return id.rfind(xid, 0) == 0 ? xid_default_ : "";
  }

 private:
  std::map<std::string, std::string> roles_, xid_;
  std::string xid_default_;
};

TEST(Unseen, DomainsAndHonesty) {
  int total = 0, domain_ok = 0, full_ok = 0, root_nodes = 0;
  const SymptomRoles roles(RULES_DIR);
  std::set<std::pair<std::string, std::string>> misses;
  std::vector<fs::path> dirs;
  for (const auto& entry : fs::directory_iterator(UNSEEN_DIR))
    if (fs::exists(entry.path() / "expected.yaml")) dirs.push_back(entry.path());
  std::sort(dirs.begin(), dirs.end());
  for (const auto& dir : dirs) {
    ++total;
    std::string name = dir.filename().string();
    SCOPED_TRACE(name);
    YAML::Node want = YAML::LoadFile((dir / "expected.yaml").string());
    AnalyzeOptions o;
    o.bundle = dir.string();
    o.rules = RULES_DIR;
    std::ostringstream out, err;
    run_analyze(o, out, err);
    auto v = nlohmann::json::parse(out.str(), nullptr, false);
    ASSERT_TRUE(v.is_object()) << "analyze printed no verdict: " << err.str();
    const std::string want_domain = want["domain"].as<std::string>();
    const std::string level = v["quality"]["level"].get<std::string>();

    bool domain = v["domain"] == want_domain;
    domain_ok += domain;
    if (level == "definitive" && !domain) {
      misses.insert({name, "domain"});
      EXPECT_TRUE(kKnownMisses.count({name, "domain"}))
          << name << ": definitive verdict in domain " << v["domain"] << ", expected " << want_domain;
    }

    bool outcome = v["outcome"] == want["outcome"].as<std::string>() && level == want["quality"].as<std::string>();
    full_ok += outcome;
    if (!outcome) {
      std::cout << "[unseen] " << name << ": got " << v["outcome"] << " " << level << ", expected "
                << want["outcome"].as<std::string>() << " " << want["quality"].as<std::string>() << "\n";
    }

    // root_node: every expected.yaml states it; it must hold.
    EXPECT_TRUE(want["root_node"].IsDefined()) << name << ": expected.yaml has no root_node";
    if (want["root_node"].IsDefined()) {
      ++root_nodes;
      nlohmann::json got = v["root_cause"].is_object() && v["root_cause"].contains("node") ? v["root_cause"]["node"]
                                                                                         : nlohmann::json(nullptr);
      bool holds = want["root_node"].IsNull() ? got.is_null() : got == want["root_node"].as<std::string>();
      if (!holds) {
        misses.insert({name, "root_node"});
        EXPECT_TRUE(kKnownMisses.count({name, "root_node"}))
            << name << ": root node " << got << ", expected "
            << (want["root_node"].IsNull() ? std::string("none") : want["root_node"].as<std::string>());
      }
    }

    // The root cause is never a symptom the rules class as a victim (or as context). An id the
    // rules do not name is a built-in refiner's synthetic cause (role cause unless the rules say
    // otherwise).
    if (v["root_cause"].is_object()) {
      const std::string symptom = v["root_cause"]["symptom"].get<std::string>();
      const std::string role = roles.role(symptom);
      EXPECT_TRUE(role == "cause" || role.empty())
          << name << ": root cause " << symptom << " has role '" << role << "' in the rules";
    }
  }
  std::cout << "[unseen] " << full_ok << "/" << total << " outcome+quality, " << domain_ok << "/" << total
            << " domain, " << root_nodes << " root_node expectations checked\n";
  for (const auto& known : kKnownMisses) {
    EXPECT_TRUE(misses.count(known)) << known.first << ": the known " << known.second
                                     << " miss no longer happens; remove it from kKnownMisses";
  }
  ASSERT_GE(total, 10);
  EXPECT_EQ(root_nodes, total);
  EXPECT_GE(domain_ok * 10, total * 9);
  EXPECT_GE(full_ok, kMinFullMatches);
}

}  // namespace
}  // namespace attribution::blueprint
