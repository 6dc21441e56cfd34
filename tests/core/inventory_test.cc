// check_inventory: the message inventory's examples against a small rule set.
#include <gtest/gtest.h>

#include "attribution/rules.h"
#include "test_rules.h"

namespace attribution {
namespace {

std::string entry(const std::string& id, const std::string& example, const std::string& status_lines) {
  return "  - id: " + id + "\n    component: c\n    format: \"%s\"\n    where: src/x.c\n    versions: all seen\n"
         "    example: '" + example + "'\n" + status_lines;
}

TEST(Inventory, MatchedIgnoredAndFailures) {
  auto rules = testing::load_or_die(testing::kMiniRules);
  std::string text = "version: 1\nproducer: p\nsource: https://example.org/p\nmessages:\n" +
                     entry("xid", "NVRM: Xid (PCI:0000:09:00): 79, pid=0, GPU has fallen off the bus.",
                           "    status: matched\n    symptom: gpu.xid.79\n") +
                     entry("watchdog-ignored", "[Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1, OpType=ALLREDUCE)",
                           "    status: ignored\n    reason: a consequence\n") +
                     entry("cause-ignored", "ValueError: bad shape", "    status: ignored\n    reason: wrong\n") +
                     entry("unmatched", "nothing to see here", "    status: matched\n    symptom: gpu.xid.79\n");
  InventoryResult r = check_inventory(*rules, {{"inv/p.yaml", text}});
  ASSERT_TRUE(r.errors.empty()) << r.errors[0].to_string();
  ASSERT_EQ(r.producers.size(), 1u);
  const auto& p = r.producers[0];
  EXPECT_EQ(p.producer, "p");
  EXPECT_EQ(p.messages, 4u);
  EXPECT_EQ(p.matched, 2u);
  EXPECT_EQ(p.ignored, 2u);
  EXPECT_EQ(p.failures, 2u);
  EXPECT_TRUE(p.entries[0].passed);
  EXPECT_TRUE(p.entries[1].passed);  // a victim symptom is allowed, and reported
  ASSERT_EQ(p.entries[1].produced.size(), 1u);
  EXPECT_EQ(p.entries[1].produced[0], "nccl.watchdog_timeout (victim)");
  EXPECT_FALSE(p.entries[2].passed);
  EXPECT_NE(p.entries[2].message.find("python.exception.ValueError"), std::string::npos);
  EXPECT_FALSE(p.entries[3].passed);
  EXPECT_EQ(p.entries[3].line, 29);
  EXPECT_FALSE(r.ok());
}

TEST(Inventory, ShapeErrorsNameFileLineColumn) {
  auto rules = testing::load_or_die(testing::kMiniRules);
  std::string text = "version: 1\nproducer: p\nsource: s\nmessages:\n" +
                     entry("a", "x", "    status: maybe\n    colour: red\n") + entry("a", "y", "    status: ignored\n");
  InventoryResult r = check_inventory(*rules, {{"inv/p.yaml", text}});
  std::vector<std::string> got;
  for (const auto& e : r.errors) got.push_back(e.to_string());
  ASSERT_EQ(got.size(), 4u) << ::testing::PrintToString(got);
  EXPECT_EQ(got[0], "inv/p.yaml:12:5: unknown key 'colour' in an inventory message (allowed: id, component, format, "
                    "where, versions, example, status, symptom, reason, kind, note)");
  EXPECT_EQ(got[1], "inv/p.yaml:11:13: 'status' must be matched or ignored");
  EXPECT_EQ(got[2], "inv/p.yaml:13:9: duplicate id 'a'");
  EXPECT_EQ(got[3], "inv/p.yaml:13:5: an ignored message needs 'reason'");
  InventoryResult bad = check_inventory(*rules, {{"inv/q.yaml", "version: 1\nmessages: [\n"}});
  ASSERT_EQ(bad.errors.size(), 1u);
  EXPECT_EQ(bad.errors[0].file, "inv/q.yaml");
  EXPECT_EQ(bad.errors[0].line, 3);
}

}  // namespace
}  // namespace attribution
