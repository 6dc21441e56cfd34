// attribution_edge: the search order for rules, how rule files are named (the digest must not
// depend on where rules live), the compiled cache, and the configuration layers.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "attribution/edge/config_layers.h"
#include "attribution/edge/rules_dir.h"

namespace attribution::edge {
namespace {
namespace fs = std::filesystem;

const std::string kRules = std::string(ATTRIBUTION_SOURCE_DIR) + "/rules";

struct ScopedEnv {
  std::string name;
  std::optional<std::string> old;
  ScopedEnv(std::string n, const char* value) : name(std::move(n)) {
    if (const char* o = std::getenv(name.c_str())) old = o;
    if (value) ::setenv(name.c_str(), value, 1);
    else ::unsetenv(name.c_str());
  }
  ~ScopedEnv() {
    if (old) ::setenv(name.c_str(), old->c_str(), 1);
    else ::unsetenv(name.c_str());
  }
};

struct TempDir {
  fs::path path;
  TempDir() {
    char tmpl[] = "/tmp/attribution-edge-XXXXXX";
    path = ::mkdtemp(tmpl);
  }
  ~TempDir() { fs::remove_all(path); }
};

TEST(RulesLocation, EnvironmentFirstThenTheCheckoutForABuildTreeBinary) {
  {
    ScopedEnv env("ATTRIBUTION_RULES_DIR", "/somewhere/else");
    EXPECT_EQ(default_rules_location(), "/somewhere/else");
    EXPECT_EQ(resolve_rules_location("/given"), "/given");
  }
  ScopedEnv env("ATTRIBUTION_RULES_DIR", nullptr);
  // This test binary lives in the build tree: no share/attribution/rules or rules/ beside it, so
  // the checkout's rules/ is found (what a service started from build/service/ relies on).
  EXPECT_EQ(fs::weakly_canonical(default_rules_location()), fs::weakly_canonical(kRules));
  EXPECT_EQ(resolve_rules_location(""), default_rules_location());
}

TEST(RuleFiles, NamesDoNotDependOnWhereTheDirectoryIs) {
  std::vector<RuleText> here, moved;
  std::string error;
  ASSERT_TRUE(read_rule_files(kRules, here, error)) << error;
  TempDir tmp;
  fs::copy(kRules, tmp.path / "rules", fs::copy_options::recursive);
  ASSERT_TRUE(read_rule_files((tmp.path / "rules/").string(), moved, error)) << error;
  ASSERT_EQ(here.size(), moved.size());
  for (size_t i = 0; i < here.size(); ++i) {
    EXPECT_EQ(here[i].name, moved[i].name);
    EXPECT_EQ(here[i].name.rfind("rules/", 0), 0u) << here[i].name;
    EXPECT_EQ(here[i].name.find("inventory/"), std::string::npos) << "the inventory is not rules";
  }
  EXPECT_EQ(rules_digest(here), rules_digest(moved));
}

TEST(RuleFiles, MissingOrEmptyLocationIsAnErrorNamingIt) {
  std::vector<RuleText> files;
  std::string error;
  EXPECT_FALSE(read_rule_files("/nonexistent/rules", files, error));
  EXPECT_NE(error.find("/nonexistent/rules"), std::string::npos) << error;
  TempDir tmp;
  EXPECT_FALSE(read_rule_files(tmp.path.string(), files, error));
  EXPECT_NE(error.find("no *.yaml rule files"), std::string::npos) << error;
}

TEST(CompiledCache, FirstLoadWritesSecondLoadReadsSameRules) {
  TempDir tmp;
  ScopedEnv cache("ATTRIBUTION_CACHE_DIR", tmp.path.c_str());
  EXPECT_EQ(compiled_cache_dir(), tmp.path.string());
  std::vector<std::string> errors;
  auto first = load_rules_from(kRules, errors);
  ASSERT_TRUE(first) << (errors.empty() ? "" : errors.front());
  size_t cached = 0;
  for (const auto& e : fs::directory_iterator(tmp.path)) cached += e.path().extension() == ".hsdb";
  EXPECT_EQ(cached, 1u);
  auto second = load_rules_from(kRules, errors);
  ASSERT_TRUE(second);
  EXPECT_EQ(describe(*first).digest, describe(*second).digest);
  ScopedEnv off("ATTRIBUTION_CACHE_DIR", "");
  EXPECT_EQ(compiled_cache_dir(), "");
}

TEST(ConfigLayers, EnvironmentNamesRoundTrip) {
  EXPECT_EQ(env_var_for_key("stores.postgres.dsn"), "ATTRIBUTION_STORES__POSTGRES__DSN");
  EXPECT_EQ(env_var_for_key("rules_dir"), "ATTRIBUTION_RULES_DIR");
  EXPECT_EQ(config_key_for_env_var("ATTRIBUTION_STORES__POSTGRES__DSN"), "stores.postgres.dsn");
  EXPECT_EQ(config_key_for_env_var("ATTRIBUTION_RULES_DIR"), "rules_dir");
  EXPECT_EQ(config_key_for_env_var("HOME"), std::nullopt);
  EXPECT_EQ(config_key_for_env_var("ATTRIBUTION_"), std::nullopt);
}

TEST(ConfigLayers, FileFromFlagThenEnvironment) {
  Environment env{{"ATTRIBUTION_CONFIG", "/etc/a.yaml"}};
  EXPECT_EQ(config_file_location("/flag.yaml", env), "/flag.yaml");
  EXPECT_EQ(config_file_location("", env), "/etc/a.yaml");
  EXPECT_EQ(config_file_location("", {}), "");
}

TEST(ConfigLayers, FileIsReadWithVariableExpansionAndPositionedErrors) {
  TempDir tmp;
  fs::path good = tmp.path / "good.yaml", bad = tmp.path / "bad.yaml";
  std::ofstream(good) << "rules: ${SITE}/rules\nstores:\n  sqlite: {path: \"${NOPE}x.db\"}\nlist: [\"${SITE}\"]\n";
  std::ofstream(bad) << "a: 1\nb: [1, 2\n";
  Environment env{{"SITE", "/srv/site"}};
  YAML::Node root;
  std::string error;
  ASSERT_TRUE(read_config_file(good.string(), env, root, error)) << error;
  EXPECT_EQ(root["rules"].as<std::string>(), "/srv/site/rules");
  EXPECT_EQ(root["stores"]["sqlite"]["path"].as<std::string>(), "x.db");
  EXPECT_EQ(root["list"][0].as<std::string>(), "/srv/site");
  EXPECT_FALSE(read_config_file(bad.string(), env, root, error));
  EXPECT_EQ(error.rfind(bad.string() + ":", 0), 0u) << error;
  EXPECT_NE(error.find(":3:"), std::string::npos) << error;  // line of the unclosed sequence's end
  EXPECT_FALSE(read_config_file((tmp.path / "missing.yaml").string(), env, root, error));
  EXPECT_NE(error.find("cannot read"), std::string::npos);
  EXPECT_EQ(expand_env_references("a${X}b${Y", {{"X", "1"}}), "a1b${Y");
}

}  // namespace
}  // namespace attribution::edge
