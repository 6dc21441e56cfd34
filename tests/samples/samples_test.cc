// Each sample bundle's verdict matches its expected.yaml; verdict bytes do not depend on threads,
// chunk size, or how the evidence is split across ingest calls.
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>

#include "bundle/bundle_reader.h"
#include "commands/analyze.h"
#include "catalogue.h"
#include "attribution/edge/rules_dir.h"

namespace attribution::blueprint {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

using testing::catalogue;

std::vector<std::string> sample_names() {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(SAMPLES_DIR)) {
    if (fs::exists(e.path() / "expected.yaml")) out.push_back(e.path().filename().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::string analyze_embedded(const std::string& dir, unsigned threads, size_t chunk) {
  Bundle b;
  std::string error;
  EXPECT_TRUE(read_bundle(dir, b, error)) << error;
  Session s(catalogue(), b.manifest.context);
  AnalyzeOptions o;
  o.threads = threads;
  o.chunk_bytes = chunk;
  uint64_t bytes = 0, lines = 0;
  for (const auto& r : collect_bundle(b, s, o, bytes, lines)) s.add_connector_report(r);
  return s.attribute().json;
}

class SampleTest : public ::testing::TestWithParam<std::string> {};

TEST_P(SampleTest, MatchesExpected) {
  std::string dir = std::string(SAMPLES_DIR) + "/" + GetParam();
  YAML::Node want = YAML::LoadFile(dir + "/expected.yaml");
  json v = json::parse(analyze_embedded(dir, 2, 8u << 20));
  EXPECT_EQ(v["outcome"], want["outcome"].as<std::string>());
  EXPECT_EQ(v["domain"], want["domain"].as<std::string>());
  EXPECT_EQ(v["quality"]["level"], want["quality"].as<std::string>());
  if (want["root_node"]) {
    json got = v["root_cause"].is_null() ? json(nullptr) : v["root_cause"]["node"];
    if (want["root_node"].IsNull()) {
      EXPECT_TRUE(got.is_null()) << got;
    } else {
      EXPECT_EQ(got, want["root_node"].as<std::string>());
    }
  }
  if (want["root_symptom"]) {
    EXPECT_EQ(v["root_cause"]["symptom"], want["root_symptom"].as<std::string>());
  }
  if (want["affected_nodes"]) {
    std::vector<std::string> nodes;
    for (const auto& n : want["affected_nodes"]) nodes.push_back(n.as<std::string>());
    std::sort(nodes.begin(), nodes.end());
    EXPECT_EQ(v["affected_nodes"].get<std::vector<std::string>>(), nodes);
  }
  if (want["explained_includes"]) {
    for (const auto& id : want["explained_includes"]) {
      bool found = false;
      for (const auto& e : v["explained"]) found |= e["id"] == id.as<std::string>();
      EXPECT_TRUE(found) << id.as<std::string>() << " not explained";
    }
  }
}

TEST_P(SampleTest, SameBytesForAnyThreadsAndChunks) {
  std::string dir = std::string(SAMPLES_DIR) + "/" + GetParam();
  std::string reference = analyze_embedded(dir, 1, 8u << 20);
  EXPECT_EQ(analyze_embedded(dir, 2, 8u << 20), reference);
  EXPECT_EQ(analyze_embedded(dir, 2, 4096), reference);
  EXPECT_EQ(analyze_embedded(dir, 1, 64u << 10), reference);
}

TEST_P(SampleTest, ObservationsInTwoHalvesEqualOneShot) {
  std::string dir = std::string(SAMPLES_DIR) + "/" + GetParam();
  Bundle b;
  std::string error;
  ASSERT_TRUE(read_bundle(dir, b, error)) << error;
  std::vector<ConnectorReport> reports;
  auto observations = bundle_observations(b, reports, error);
  auto one_shot = [&] {
    Session s(catalogue(), b.manifest.context);
    for (const auto& o : observations) s.ingest(o);
    for (const auto& r : reports) s.add_connector_report(r);
    return s.attribute().json;
  }();
  Session s(catalogue(), b.manifest.context);
  for (size_t i = observations.size(); i-- > observations.size() / 2;) s.ingest(observations[i]);
  (void)s.attribute();
  for (size_t i = 0; i < observations.size() / 2; ++i) s.ingest(observations[i]);
  for (const auto& r : reports) s.add_connector_report(r);
  EXPECT_EQ(s.attribute().json, one_shot);
  // And the observation path equals the file-scanning path.
  EXPECT_EQ(one_shot, analyze_embedded(dir, 2, 8u << 20));
}

INSTANTIATE_TEST_SUITE_P(Samples, SampleTest, ::testing::ValuesIn(sample_names()),
                         [](const auto& param_info) {
                           std::string n = param_info.param;
                           for (char& c : n) if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
                           return n;
                         });

TEST(Samples, ThereAreEnough) { EXPECT_GE(sample_names().size(), 30u); }

}  // namespace
}  // namespace attribution::blueprint
