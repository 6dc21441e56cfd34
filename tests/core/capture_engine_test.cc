// The capture step's two engines (core/src/capture_engine.h): PCRE2's JIT must give exactly RE2's
// answer and groups wherever the engine hands it a line, on every pattern of the shipped catalogue.
#include "capture_engine.h"

#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "attribution/rules.h"
#include "rule_set.h"
#include "test_rules.h"

namespace attribution {
namespace {

namespace fs = std::filesystem;

// One pattern in both engines, built as the rule loader builds them (RE2 over Latin-1 bytes).
struct BothEngines {
  static RE2::Options latin1() {
    RE2::Options o;
    o.set_encoding(RE2::Options::EncodingLatin1);
    return o;
  }
  explicit BothEngines(const char* pattern)
      : re(pattern, latin1()), pcre(detail::compile_pcre(re.pattern(), false, re)) {}
  RE2 re;
  detail::PcrePatternPtr pcre;
};

// Every `example:` line of the message inventory (rules/inventory): real wordings of the
// producers, most of them lines some extractor matches.
std::vector<std::string> inventory_examples() {
  std::vector<std::string> out;
  fs::path dir = fs::path(ATTRIBUTION_SOURCE_DIR) / "rules" / "inventory";
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.path().extension() != ".yaml") continue;
    YAML::Node doc = YAML::LoadFile(e.path().string());
    for (const auto& m : doc["messages"]) {
      if (m["example"] && m["example"].IsScalar()) out.push_back(m["example"].as<std::string>());
    }
  }
  return out;
}

// Compares RE2 and PCRE2 on one line and says where they part.
::testing::AssertionResult same_captures(const Extractor& x, const detail::PcrePattern& p,
                                         detail::PcreMatcher& matcher, const std::string& line) {
  if (detail::pcre_agrees(*x.re, p, matcher, line)) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "extractor " << x.id << " (" << x.pos.file << ":" << x.pos.line
                                       << "): RE2 and PCRE2 differ on: " << line;
}

TEST(CaptureEngine, EveryFixtureLineGivesRe2sCapturesInBothEngines) {
  auto rules = testing::load_catalogue();
  ASSERT_NE(rules, nullptr);
  detail::PcreMatcher matcher;
  size_t compiled = 0, lines = 0, matched = 0;
  for (const Extractor& x : rules->extractors) {
    // Compiled afresh: the loader drops a PCRE2 form that disagrees on a fixture, so its own
    // x.pcre could not show a disagreement.
    detail::PcrePatternPtr p = detail::compile_pcre(x.pattern, x.case_insensitive, *x.re);
    if (!p) continue;
    ++compiled;
    EXPECT_NE(x.pcre, nullptr) << x.id << ": PCRE2 compiled it but the loader dropped it (a fixture disagreed)";
    for (const Fixture& f : x.fixtures) {
      EXPECT_TRUE(same_captures(x, *p, matcher, f.input));
      ++lines;
      matched += RE2::PartialMatch(f.input, *x.re) ? 1 : 0;
    }
  }
  EXPECT_EQ(compiled, rules->pcre_patterns);
  // The fast engine is really used: nearly every pattern of the catalogue qualifies.
  EXPECT_GE(compiled * 10, rules->extractors.size() * 9) << compiled << " of " << rules->extractors.size();
  EXPECT_GT(lines, 300u);
  EXPECT_GT(matched, 200u);
}

TEST(CaptureEngine, EveryInventoryExampleGivesRe2sAnswerUnderEveryPattern) {
  auto rules = testing::load_catalogue();
  ASSERT_NE(rules, nullptr);
  std::vector<std::string> examples = inventory_examples();
  ASSERT_GT(examples.size(), 300u);
  detail::PcreMatcher matcher;
  size_t matches = 0;
  for (const Extractor& x : rules->extractors) {
    if (!x.pcre) continue;
    for (const std::string& line : examples) {
      EXPECT_TRUE(same_captures(x, *x.pcre, matcher, line));
      matches += RE2::PartialMatch(line, *x.re) ? 1 : 0;
    }
  }
  EXPECT_GT(matches, 200u);
}

TEST(CaptureEngine, ConstructsThatMayReadDifferentlyStayWithRe2) {
  EXPECT_EQ(detail::pcre_unsuitable_reason(R"((?:^|[\s:\]])(?:[A-Za-z_][A-Za-z0-9_]*\.)*(?P<exc>\w+Error): (?P<m>.*))"),
            "");
  EXPECT_EQ(detail::pcre_unsuitable_reason(R"(Xid \(PCI:(?P<pci>[0-9a-f:.]+)\): (?P<xid>\d+)(?:, pid=\d+)?)"), "");
  EXPECT_EQ(detail::pcre_unsuitable_reason(R"((?i)nccl warn (?P<msg>.{0,80}))"), "");
  EXPECT_EQ(detail::pcre_unsuitable_reason(R"(x{2,5}y{3}\{z)"), "");
  // Empty iterations: RE2's captures may part from Perl's.
  EXPECT_NE(detail::pcre_unsuitable_reason(R"((a*)*)"), "");
  EXPECT_NE(detail::pcre_unsuitable_reason(R"((?:a|)+b)"), "");
  EXPECT_NE(detail::pcre_unsuitable_reason(R"((?P<x>a?b*){2,3})"), "");
  EXPECT_NE(detail::pcre_unsuitable_reason(R"(((?:x)?)?)"), "");
  // Escapes and forms read differently (or not at all) by one of them.
  EXPECT_NE(detail::pcre_unsuitable_reason(R"(\pL+)"), "");
  EXPECT_NE(detail::pcre_unsuitable_reason(R"(\Qa.b\E)"), "");
  EXPECT_NE(detail::pcre_unsuitable_reason(R"(a\vb)"), "");
  EXPECT_NE(detail::pcre_unsuitable_reason(R"(a\C)"), "");
  EXPECT_NE(detail::pcre_unsuitable_reason(R"(a{,3})"), "");
  EXPECT_NE(detail::pcre_unsuitable_reason("caf\xe9"), "");
  EXPECT_NE(detail::pcre_unsuitable_reason(R"([\b])"), "");
}

TEST(CaptureEngine, LinesOutsidePlainAsciiAreDecidedByRe2) {
  EXPECT_TRUE(detail::pcre_line_ok("[rank3]: NCCL WARN NET/IB : Got completion from peer 10.0.0.2<3456> with error 12"));
  EXPECT_TRUE(detail::pcre_line_ok(""));
  EXPECT_FALSE(detail::pcre_line_ok("abcdefghijklmnop\xc3\xa9"));
  EXPECT_FALSE(detail::pcre_line_ok("abc\x0b" "def"));
  EXPECT_FALSE(detail::pcre_line_ok("0123456789\x0b"));
  // PCRE2's \s takes a vertical tab, RE2's does not: the line gate keeps RE2's answer.
  BothEngines ws(R"(a\s(?P<b>b))");
  ASSERT_NE(ws.pcre, nullptr);
  detail::PcreMatcher matcher;
  std::vector<re2::StringPiece> groups(2);
  EXPECT_FALSE(detail::capture_match(ws.re, ws.pcre.get(), matcher, "a\vb", groups.data(), 2));
  ASSERT_TRUE(detail::capture_match(ws.re, ws.pcre.get(), matcher, "xx a\tb", groups.data(), 2));
  EXPECT_EQ(groups[1], "b");
  // Case folding beyond ASCII: RE2 Latin-1 folds \xe9 and \xc9, PCRE2's C tables do not.
  BothEngines ci("(?i)caf(?P<e>.)");
  ASSERT_NE(ci.pcre, nullptr);
  ASSERT_TRUE(detail::capture_match(ci.re, ci.pcre.get(), matcher, "CAF\xc9", groups.data(), 2));
  EXPECT_EQ(groups[1], "\xc9");
}

TEST(CaptureEngine, GroupsThatTookNoPartAreNullAsInRe2) {
  BothEngines both(R"(x(?P<a>a)?(?P<e>)y|(?P<z>z))");
  const RE2& re = both.re;
  ASSERT_NE(both.pcre, nullptr);
  const detail::PcrePatternPtr& p = both.pcre;
  detail::PcreMatcher matcher;
  std::vector<re2::StringPiece> groups(4);
  ASSERT_TRUE(detail::capture_match(re, p.get(), matcher, "..xy..", groups.data(), 4));
  EXPECT_EQ(groups[0], "xy");
  EXPECT_EQ(groups[1].data(), nullptr);  // (?P<a>a)? took no part
  EXPECT_NE(groups[2].data(), nullptr);  // (?P<e>) matched empty
  EXPECT_EQ(groups[2].size(), 0u);
  EXPECT_EQ(groups[3].data(), nullptr);
  EXPECT_TRUE(detail::pcre_agrees(re, *p, matcher, "..xy.."));
  EXPECT_TRUE(detail::pcre_agrees(re, *p, matcher, "xay z"));
  EXPECT_TRUE(detail::pcre_agrees(re, *p, matcher, "nothing"));
}

}  // namespace
}  // namespace attribution
