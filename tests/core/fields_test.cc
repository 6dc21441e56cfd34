// Fields must read, order and compare exactly as the std::map<std::string, std::string> it replaced:
// verdict bytes depend on iteration order (labels, JSON objects) and on the ordering of fabric
// locations by their fields.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <map>
#include <random>
#include <string>

#include "attribution/fields.h"

namespace attribution {
namespace {

TEST(Fields, ReadsLikeAMap) {
  Fields f;
  EXPECT_TRUE(f.empty());
  f["rank"] = "3";
  f.emplace("host", "gpu-a01");
  f.emplace("host", "ignored");  // emplace keeps the first, as std::map does
  f["_catalog"] = "xid";
  ASSERT_EQ(f.size(), 3u);
  EXPECT_EQ(f.at("host"), "gpu-a01");
  EXPECT_EQ(f.count("rank"), 1u);
  EXPECT_EQ(f.count("gpu"), 0u);
  EXPECT_EQ(f.find("gpu"), f.end());
  EXPECT_THROW((void)f.at("gpu"), std::out_of_range);
  std::string order;
  for (const auto& [k, v] : f) order += k + "=" + v + ";";
  EXPECT_EQ(order, "_catalog=xid;host=gpu-a01;rank=3;");
  EXPECT_EQ(f.erase("host"), 1u);
  EXPECT_EQ(f.erase("host"), 0u);
  auto it = f.erase(f.find("_catalog"));
  ASSERT_NE(it, f.end());
  EXPECT_EQ(it->first, "rank");
  f.insert_or_assign("rank", "4");
  EXPECT_EQ(f.at("rank"), "4");
}

TEST(Fields, LowerBoundFindsAPrefixRun) {
  Fields f{{"_fabric.port", "7"}, {"_fabric.hca", "mlx5_0"}, {"err", "x"}, {"_catalog", "xid"}};
  std::string run;
  for (auto i = f.lower_bound("_fabric."); i != f.end() && i->first.rfind("_fabric.", 0) == 0; ++i) run += i->first + ",";
  EXPECT_EQ(run, "_fabric.hca,_fabric.port,");
}

// Random inserts, overwrites and erases against std::map: same contents, same order, and the
// same comparison result between any two lists.
TEST(Fields, MatchesStdMapUnderRandomEdits) {
  std::mt19937 rng(7);
  const char* names[] = {"a", "b", "rank", "_catalog", "_fabric.port", "host", "gpu", "zz", ""};
  std::vector<std::pair<Fields, std::map<std::string, std::string>>> lists;
  for (int round = 0; round < 200; ++round) {
    Fields f;
    std::map<std::string, std::string> m;
    for (int op = 0; op < 12; ++op) {
      std::string k = names[rng() % 9];
      std::string v = std::to_string(rng() % 5);
      switch (rng() % 4) {
        case 0: f[k] = v; m[k] = v; break;
        case 1: f.emplace(k, v); m.emplace(k, v); break;
        case 2: EXPECT_EQ(f.erase(k), m.erase(k)); break;
        default: f.insert({k, v}); m.insert({k, v}); break;
      }
    }
    ASSERT_EQ(f.to_map(), m);
    ASSERT_EQ(f, Fields(m));
    lists.emplace_back(f, m);
  }
  for (size_t i = 0; i + 1 < lists.size(); ++i) {
    const auto& [fa, ma] = lists[i];
    const auto& [fb, mb] = lists[i + 1];
    EXPECT_EQ(fa < fb, ma < mb);
    EXPECT_EQ(fa == fb, ma == mb);
  }
}

TEST(Fields, SerialisesAsAJsonObject) {
  Fields f{{"rank", "3"}, {"host", "gpu-a01"}};
  nlohmann::json j = f;
  EXPECT_EQ(j.dump(), R"({"host":"gpu-a01","rank":"3"})");
  std::map<std::string, std::string> m{{"rank", "3"}, {"host", "gpu-a01"}};
  EXPECT_EQ(j, nlohmann::json(m));
}

}  // namespace
}  // namespace attribution
