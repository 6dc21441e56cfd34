// Held-out bundles (tests/unseen/) written from SPEC and FORMATS by someone who had not read the
// rules or the engine. They measure generalisation, so the thresholds below are floors, not a
// per-bundle oracle: the domain must be right on at least 9 of 10, a definitive verdict must never
// contradict the expected outcome's domain, and no verdict may name a victim symptom as the cause.
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>

#include "commands/analyze.h"

namespace attribution::blueprint {
namespace {

namespace fs = std::filesystem;

TEST(Unseen, DomainsAndHonesty) {
  int total = 0, domain_ok = 0, full_ok = 0;
  for (const auto& entry : fs::directory_iterator(UNSEEN_DIR)) {
    if (!fs::exists(entry.path() / "expected.yaml")) continue;
    ++total;
    YAML::Node want = YAML::LoadFile((entry.path() / "expected.yaml").string());
    AnalyzeOptions o;
    o.bundle = entry.path().string();
    o.rules = RULES_DIR;
    std::ostringstream out, err;
    run_analyze(o, out, err);
    auto v = nlohmann::json::parse(out.str());
    std::string name = entry.path().filename().string();
    bool domain = v["domain"] == want["domain"].as<std::string>();
    domain_ok += domain;
    bool outcome = v["outcome"] == want["outcome"].as<std::string>() &&
                   v["quality"]["level"] == want["quality"].as<std::string>();
    full_ok += outcome;
    if (!outcome) {
      std::cout << "[unseen] " << name << ": got " << v["outcome"] << " " << v["quality"]["level"] << ", expected "
                << want["outcome"].as<std::string>() << " " << want["quality"].as<std::string>() << "\n";
    }
    if (v["quality"]["level"] == "definitive" && !v["root_cause"].is_null()) {
      std::string symptom = v["root_cause"]["symptom"];
      for (const auto& g : v["symptoms"]) {
        if (g["id"] == symptom) {
          EXPECT_NE(g["role"], "unexplained_victim") << name;
        }
      }
    }
  }
  std::cout << "[unseen] " << full_ok << "/" << total << " outcome+quality, " << domain_ok << "/" << total
            << " domain\n";
  ASSERT_GE(total, 10);
  EXPECT_GE(domain_ok * 10, total * 9);
}

}  // namespace
}  // namespace attribution::blueprint
