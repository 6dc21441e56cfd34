// What the rule loader gives Vectorscan for a pattern (core/src/vectorscan_form.h): negated classes
// stop at a newline, and on every pattern of the shipped catalogue the result matches exactly the
// lines the pattern matches.
#include "vectorscan_form.h"

#include <gtest/gtest.h>
#include <re2/re2.h>
#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <string>
#include <vector>

#include "attribution/rules.h"
#include "rule_set.h"
#include "test_rules.h"

namespace attribution {
namespace {

using detail::exclude_newline_from_negated_classes;
namespace fs = std::filesystem;

TEST(VectorscanForm, NegatedClassesStopAtANewline) {
  EXPECT_EQ(exclude_newline_from_negated_classes(R"('[^']+')"), R"('[^'\n]+')");
  EXPECT_EQ(exclude_newline_from_negated_classes(R"([^\r\n]*x[^"]y[a-z])"), R"([^\r\n]*x[^"\n]y[a-z])");
  // A ']' first in the class is a literal; an escaped '[' opens none.
  EXPECT_EQ(exclude_newline_from_negated_classes(R"([^]a]b\[^x)"), R"([^]a\n]b\[^x)");
  EXPECT_EQ(exclude_newline_from_negated_classes(R"(a[^[:space:]x]+)"), R"(a[^[:space:]x\n]+)");
  EXPECT_EQ(exclude_newline_from_negated_classes(R"(\x{5b}[^\]\s]*)"), R"(\x{5b}[^\]\s\n]*)");
}

TEST(VectorscanForm, LeavesWhatItCannotRead) {
  EXPECT_EQ(exclude_newline_from_negated_classes(R"(a[^b)"), R"(a[^b)");
  EXPECT_EQ(exclude_newline_from_negated_classes(R"(a\Q[^b]\E)"), R"(a\Q[^b]\E)");
}

// Every line a pattern of the catalogue matches, its Vectorscan form matches, and no other: the
// fixture lines of every extractor (matching and not) and every inventory example, through RE2
// with the loader's options, for the exact (blank-tolerant) pattern and the scan pattern alike.
TEST(VectorscanForm, SameLinesOnTheWholeCatalogue) {
  auto rules = testing::load_catalogue();
  ASSERT_NE(rules, nullptr);
  std::vector<std::string> lines;
  for (const Extractor& x : rules->extractors)
    for (const Fixture& f : x.fixtures) lines.push_back(f.input);
  fs::path dir = fs::path(ATTRIBUTION_SOURCE_DIR) / "rules" / "inventory";
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.path().extension() != ".yaml") continue;
    YAML::Node doc = YAML::LoadFile(e.path().string());
    for (const auto& m : doc["messages"])
      if (m["example"] && m["example"].IsScalar()) lines.push_back(m["example"].as<std::string>());
  }
  ASSERT_GT(lines.size(), 3000u);
  size_t changed = 0;
  for (const Extractor& x : rules->extractors) {
    for (const std::string* p : {&x.pattern, &x.scan_pattern}) {
      std::string t = exclude_newline_from_negated_classes(*p);
      if (t == *p) continue;
      ++changed;
      RE2::Options o;
      o.set_encoding(RE2::Options::EncodingLatin1);
      o.set_case_sensitive(!x.case_insensitive);
      o.set_log_errors(false);
      RE2 whole(*p, o), form(t, o);
      ASSERT_TRUE(whole.ok()) << x.id;
      ASSERT_TRUE(form.ok()) << x.id << ": " << t;
      for (const std::string& line : lines) {
        ASSERT_EQ(RE2::PartialMatch(line, whole), RE2::PartialMatch(line, form))
            << x.id << " (" << x.pos.file << ":" << x.pos.line << ")\n  pattern: " << *p << "\n  form:    " << t
            << "\n  line:    " << line;
      }
    }
  }
  EXPECT_GT(changed, 50u);
}

}  // namespace
}  // namespace attribution
