#include <gtest/gtest.h>

#include <algorithm>
#include <map>

#include "attribution/engine.h"
#include "attribution/rules.h"
#include "analysis.h"
#include "rule_set.h"
#include "test_rules.h"

namespace attribution {
namespace {

LoadMessage first_error(const std::string& text) {
  LoadResult r = load_rules({{"site.yaml", text}});
  EXPECT_FALSE(r.ok());
  return r.errors.empty() ? LoadMessage{} : r.errors.front();
}

TEST(RuleLoader, LiteralSpacesMatchRunsOfBlanks) {
  EXPECT_EQ(tolerate_blanks("exit code (?P<c>\\d+)"), "exit +code +(?P<c>\\d+)");
  EXPECT_EQ(tolerate_blanks("a  b"), "a  +b");               // two or more
  EXPECT_EQ(tolerate_blanks("NET/IB ?: Got"), "NET/IB ?: +Got");  // already quantified: kept
  EXPECT_EQ(tolerate_blanks("x {2}y"), "x {2}y");
  EXPECT_EQ(tolerate_blanks("[^ ]+ x"), "[^ ]+ +x");          // inside a class: kept
  EXPECT_EQ(tolerate_blanks("[] ] x"), "[] ] +x");            // ']' first in a class is literal
  EXPECT_EQ(tolerate_blanks("a\\ b"), "a\\ b");              // escaped space: kept
}

// What the scanner may look for in blank-collapsed text (rule_set.h, KindDatabase): nothing that
// needs two blanks in a row.
TEST(RuleLoader, BlanksCollapseSafe) {
  EXPECT_TRUE(blanks_collapse_safe("exit code (?P<c>\\d+)"));
  EXPECT_TRUE(blanks_collapse_safe("NET/IB ?: Got"));
  EXPECT_TRUE(blanks_collapse_safe("a\\s+b c"));
  EXPECT_TRUE(blanks_collapse_safe("[^ ]+ x"));
  EXPECT_TRUE(blanks_collapse_safe("a (?:b )?c"));
  EXPECT_TRUE(blanks_collapse_safe("x .* y"));
  EXPECT_TRUE(blanks_collapse_safe("a {0,3}b"));
  EXPECT_FALSE(blanks_collapse_safe("a  b"));       // two blanks
  EXPECT_FALSE(blanks_collapse_safe("x {2}y"));     // a blank twice
  EXPECT_FALSE(blanks_collapse_safe("x\\s{2,}y"));
  EXPECT_FALSE(blanks_collapse_safe("a\\s\\sb"));
  EXPECT_FALSE(blanks_collapse_safe("a \\s+b"));
  EXPECT_FALSE(blanks_collapse_safe("a\\ \\ b"));   // escaped blanks
  EXPECT_FALSE(blanks_collapse_safe("a[ \\t] b"));    // a class of blanks next to a blank
  EXPECT_FALSE(blanks_collapse_safe("a.{2}b"));       // '.' may take two blanks
  EXPECT_FALSE(blanks_collapse_safe("a[^x]{3}b"));
}

// The catalogue's patterns scan text with runs of blanks cut to one; a line whose blanks are
// widened must still be read by the same extractor with the same captures, and a pattern that
// needs two blanks in a row must still see them.
// The literals a line matching a pattern must contain: the most specific cover, lower case; none
// when the pattern can match without any literal.
TEST(RuleLoader, RequiredAtoms) {
  std::vector<std::string> atoms;
  ASSERT_TRUE(required_atoms(tolerate_blanks(R"(NVRM: Xid \(PCI:(?P<pci>[0-9a-f:]+)\): (?P<xid>\d+), pid)"), false, atoms));
  ASSERT_FALSE(atoms.empty());
  for (const auto& a : atoms) EXPECT_EQ(a, [&] { std::string l = a; for (char& c : l) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c))); return l; }());
  EXPECT_NE(std::find(atoms.begin(), atoms.end(), "nvrm:"), atoms.end()) << ::testing::PrintToString(atoms);
  ASSERT_TRUE(required_atoms(tolerate_blanks("COL1  COL2 (?P<v>\\w+)"), false, atoms)) << ::testing::PrintToString(atoms);
  EXPECT_FALSE(atoms.empty());
  ASSERT_TRUE(required_atoms("(?:UCX +ERROR|pml_ucx\\.c:\\d+)", false, atoms));
  EXPECT_EQ(atoms.size(), 2u) << ::testing::PrintToString(atoms);  // one of either alternative
  EXPECT_FALSE(required_atoms("\\d+", false, atoms));  // a match needs no literal
  EXPECT_TRUE(atoms.empty());
  EXPECT_FALSE(required_atoms("(unclosed", false, atoms));
}

TEST(RuleLoader, WidenedBlanksFoundLikeSingleOnes) {
  const char* rules = R"(
version: 1
extractors:
  - id: x.exit
    description: exit
    kinds: [applog]
    pattern: 'exited with exit code (?P<code>\d+) on rank (?P<r>\d+)'
    symptom: t.exit
    fixtures:
      - line: "worker exited with exit code 1 on rank 0"
        expect: {symptom: t.exit}
  - id: x.two
    description: two blanks
    kinds: [applog]
    pattern: 'COL1  COL2 (?P<v>\w+)'
    symptom: t.two
    fixtures:
      - line: "COL1  COL2 x"
        expect: {symptom: t.two}
  - id: x.anchored
    description: anchored
    kinds: [applog]
    pattern: '^\s+Reason:\s+(?P<reason>OOMKilled)\s*$'
    symptom: t.reason
    fixtures:
      - line: "  Reason: OOMKilled"
        expect: {symptom: t.reason}
)";
  LoadResult r = load_rules({{"t.yaml", rules}});
  ASSERT_TRUE(r.ok()) << (r.errors.empty() ? "" : r.errors.front().to_string());
  // 'COL1  COL2' cannot be scanned on collapsed text as written; it is looked for there by its
  // literals, so nothing needs the original text (the anchored pattern passes its fixture check here;
  // Vectorscan's misses depend on the whole set).
  EXPECT_EQ(describe(*r.rules).exact_scan_patterns, 0u);
  Scanner scanner(r.rules);
  TextSource src;
  src.name = "t.log";
  src.default_year = 2026;
  std::string text =
      "   3:  [2026-03-02 08:21:47] iteration        1/  100000 | consumed samples:         1024\n"
      "worker    exited   with exit code   7 on    rank 12\n"
      "x COL1  COL2 val\n"
      "x COL1 COL2 nope\n"
      "      Reason:       OOMKilled\n"
      "worker exited with exit code 9 on rank 3\n";
  Extraction ex;
  scanner.scan(src, text, 0, 1, ex);
  std::map<std::string, std::vector<uint64_t>> lines;
  std::map<std::string, std::vector<std::string>> fields;
  for (const auto& [k, v] : ex.symptoms()) {
    for (const auto& e : v.evidence) lines[k.id].push_back(e.line);
    for (const auto& [name, value] : v.fields) fields[k.id].push_back(name + "=" + value);
  }
  EXPECT_EQ(lines["t.exit"], (std::vector<uint64_t>{2, 6}));
  EXPECT_EQ(lines["t.two"], (std::vector<uint64_t>{3}));
  EXPECT_EQ(lines["t.reason"], (std::vector<uint64_t>{5}));
  const auto& exit_fields = fields["t.exit"];
  EXPECT_NE(std::find(exit_fields.begin(), exit_fields.end(), "code=7"), exit_fields.end());
}

TEST(RuleLoader, LoadsMiniRules) {
  auto rules = testing::load_or_die(testing::kMiniRules);
  ASSERT_TRUE(rules);
  RuleSetInfo info = describe(*rules);
  EXPECT_EQ(info.extractors, 6u);
  EXPECT_EQ(info.catalogs, 1u);
  EXPECT_EQ(info.catalog_entries, 4u);
  EXPECT_EQ(info.digest.rfind("sha256:", 0), 0u);
  for (const auto& r : run_fixtures(*rules)) EXPECT_TRUE(r.passed) << r.rule_id << ": " << r.message;
}

TEST(RuleLoader, DigestChangesWithContent) {
  auto a = testing::load_or_die(testing::kMiniRules);
  auto b = testing::load_or_die(std::string(testing::kMiniRules) + "\n# comment\n");
  EXPECT_NE(describe(*a).digest, describe(*b).digest);
}

TEST(RuleLoader, YamlSyntaxErrorHasPosition) {
  LoadMessage e = first_error("version: 1\nextractors:\n  - id: x\n    pattern: [unclosed\n");
  EXPECT_EQ(e.file, "site.yaml");
  EXPECT_GE(e.line, 4);
  EXPECT_GT(e.column, 0);
}

TEST(RuleLoader, BadRegexPointsAtPatternLine) {
  LoadMessage e = first_error(R"(version: 1
extractors:
  - id: bad
    description: d
    pattern: 'Xid \((?P<pci>[0-9a-f'
    symptom: gpu.bad
    fixtures: [{line: "x", expect: {symptom: gpu.bad}}]
)");
  EXPECT_EQ(e.line, 5);
  EXPECT_NE(e.message.find("bad pattern"), std::string::npos) << e.message;
}

// A label field the pattern never captures would print nothing in every verdict: load warns, naming the
// extractor's position, the symptom and the field. An optional group that did not match is empty,
// not missing, and a templated symptom id is looked up as a run looks it up (here the glob).
TEST(RuleLoader, WarnsOnLabelFieldThePatternNeverCaptures) {
  LoadResult r = load_rules({{"site.yaml", R"y(version: 1
symptoms:
  - {id: "site.fault", label: "fault on {dev}: {why}", domain: node, outcome: node.hardware, role: cause, priority: 50}
  - {id: "site.evicted.*", label: "evicted ({resource}{condition})", domain: scheduler, outcome: scheduler.evicted, role: cause, priority: 50}
extractors:
  - id: fault-without-why
    description: d
    pattern: 'fault on (?P<dev>\w+)'
    symptom: site.fault
    fixtures: [{line: "fault on sda", expect: {symptom: site.fault, dev: sda}}]
  - id: fault-with-optional-why
    description: d
    pattern: 'failure on (?P<dev>\w+)(?:: (?P<why>\w+))?'
    symptom: site.fault
    fixtures: [{line: "failure on sda", expect: {symptom: site.fault, dev: sda}}]
  - id: evicted-resource
    description: d
    pattern: 'low on resource: (?P<resource>\w+)'
    symptom: site.evicted.{resource}
    fixtures: [{line: "low on resource: pids", expect: {symptom: site.evicted.pids}}]
)y"}});
  ASSERT_TRUE(r.ok());
  std::vector<std::string> messages;
  for (const auto& w : r.warnings) messages.push_back(w.message);
  ASSERT_EQ(r.warnings.size(), 2u) << ::testing::PrintToString(messages);
  EXPECT_EQ(r.warnings[0].file, "site.yaml");
  EXPECT_EQ(r.warnings[0].line, 6);
  EXPECT_NE(r.warnings[0].message.find("'fault-without-why'"), std::string::npos) << r.warnings[0].message;
  EXPECT_NE(r.warnings[0].message.find("{why}"), std::string::npos) << r.warnings[0].message;
  EXPECT_NE(r.warnings[1].message.find("'site.evicted.pids' uses {condition}"), std::string::npos)
      << r.warnings[1].message;
}

// Labels join alternative captures ("{resource}{condition}"); the one that did not match renders empty.
TEST(RuleLoader, LabelRendersAMissingFieldEmpty) {
  EXPECT_EQ(render_label("evicted ({resource}{condition})", Fields{{"resource", "memory"}}), "evicted (memory)");
  EXPECT_EQ(render_label("Xid {xid} on {pci}", Fields{{"xid", "79"}, {"pci", "0000:3b:00"}}), "Xid 79 on 0000:3b:00");
  EXPECT_EQ(render_label("no fields {here", Fields{}), "no fields {here");
}

TEST(RuleLoader, UnknownKeyNamed) {
  LoadMessage e = first_error("version: 1\nextractors:\n  - id: x\n    patern: 'a'\n");
  EXPECT_EQ(e.line, 4);
  EXPECT_EQ(e.column, 5);
  EXPECT_NE(e.message.find("patern"), std::string::npos);
}

TEST(RuleLoader, FlagsAreTrueOrFalseWithTheirPosition) {
  LoadMessage e = first_error(
      "version: 1\nsymptoms:\n  - {id: slurm.x, label: x, domain: node, role: context, drains_node: maybe}\n");
  EXPECT_EQ(e.line, 3);
  EXPECT_NE(e.message.find("drains_node must be true or false, not 'maybe'"), std::string::npos) << e.message;
  e = first_error(
      "version: 1\nrefiners:\n  - id: refine.x\n    cause: [a.b]\n    explains: [c.d]\n    recovery: yes\n");
  EXPECT_EQ(e.line, 6);
  EXPECT_EQ(e.column, 15);
  EXPECT_NE(e.message.find("recovery must be true or false"), std::string::npos) << e.message;
}

TEST(RuleLoader, ContextErrorsHaveTheirPosition) {
  const std::string head =
      "version: 1\nextractors:\n  - id: x\n    pattern: 'Signal (?P<n>\\d+)'\n    symptom: a.b\n";
  const std::string tail = "    fixtures: [{line: \"Signal 9\", expect: {symptom: a.b}}]\n";
  LoadMessage e = first_error(head + "    context: {lines: 0, rows: ['rank']}\n" + tail);
  EXPECT_EQ(e.line, 6);
  EXPECT_NE(e.message.find("context.lines must be a whole number from 1 to 1000"), std::string::npos) << e.message;
  e = first_error(head + "    context:\n      lines: 3\n      rows:\n        - 'rank (?P<r>\\d+'\n" + tail);
  EXPECT_EQ(e.line, 9);
  EXPECT_EQ(e.column, 11);
  EXPECT_NE(e.message.find("bad context pattern"), std::string::npos) << e.message;
  e = first_error(head + "    context: {lines: 3, rowz: ['rank']}\n" + tail);
  EXPECT_EQ(e.line, 6);
  EXPECT_NE(e.message.find("unknown key 'rowz' in context"), std::string::npos) << e.message;
  e = first_error(head + "    context: {lines: 3}\n" + tail);
  EXPECT_NE(e.message.find("context needs rows to read or a line to require"), std::string::npos) << e.message;
  // A template may use a row's capture; one that neither the pattern nor a row captures is an error.
  e = first_error(head + "    rank: \"{r}\"\n    context: {lines: 3, rows: ['rank (?P<rank>\\d+)']}\n" + tail);
  EXPECT_NE(e.message.find("rank uses {r}"), std::string::npos) << e.message;
}

// `scan:` is a cheaper superset of the pattern for the scan: a bad expression, or one that misses a
// fixture line the pattern matches, is a load error at its own position.
TEST(RuleLoader, ScanExpressionErrorsHaveTheirPosition) {
  const std::string head =
      "version: 1\nextractors:\n  - id: x\n    pattern: 'Signal (?P<n>\\d+) received'\n    symptom: a.b\n";
  const std::string tail = "    fixtures: [{line: \"Signal 9 received\", expect: {symptom: a.b}}]\n";
  LoadMessage e = first_error(head + "    scan: 'Signal (\\d+'\n" + tail);
  EXPECT_EQ(e.line, 6);
  EXPECT_EQ(e.column, 11);
  EXPECT_NE(e.message.find("bad scan expression"), std::string::npos) << e.message;
  e = first_error(head + "    scan: 'Signal 1\\d'\n" + tail);
  EXPECT_EQ(e.line, 6);
  EXPECT_NE(e.message.find("scan expression does not match fixture line 'Signal 9 received'"), std::string::npos)
      << e.message;
  auto ok = load_rules({{"ok.yaml", head + "    scan: 'Signal \\d'\n" + tail +
                                        "symptoms:\n  - {id: a.b, label: x, domain: application, outcome: "
                                        "application.exception, role: cause, priority: 40}\n"}});
  EXPECT_TRUE(ok.errors.empty()) << (ok.errors.empty() ? "" : ok.errors[0].message);
}

TEST(RuleLoader, TemplateMustUseNamedCapture) {
  LoadMessage e = first_error(R"(version: 1
extractors:
  - id: x
    pattern: 'Xid (?P<code>\d+)'
    symptom: "gpu.xid.{xid}"
    fixtures: [{line: "Xid 1", expect: {symptom: gpu.xid.1}}]
)");
  EXPECT_NE(e.message.find("{xid}"), std::string::npos) << e.message;
  EXPECT_EQ(e.line, 5);
}

TEST(RuleLoader, DuplicateIdsAndMissingFixtures) {
  LoadResult r = load_rules({{"a.yaml", R"(version: 1
extractors:
  - {id: x, pattern: 'aaa', symptom: s.a, fixtures: [{line: aaa, expect: {symptom: s.a}}]}
  - {id: x, pattern: 'bbb', symptom: s.b, fixtures: [{line: bbb, expect: {symptom: s.b}}]}
  - {id: y, pattern: 'ccc', symptom: s.c}
)"}});
  ASSERT_EQ(r.errors.size(), 2u);
  EXPECT_NE(r.errors[0].message.find("duplicate id 'x'"), std::string::npos);
  EXPECT_EQ(r.errors[0].line, 4);
  EXPECT_NE(r.errors[1].message.find("positive fixture"), std::string::npos);
}

TEST(RuleLoader, UnknownCatalogBuiltinPhaseDomain) {
  EXPECT_NE(first_error("version: 1\nrefiners:\n  - {id: r, builtin: nope}\n").message.find("unknown builtin"),
            std::string::npos);
  EXPECT_NE(first_error("version: 1\nrefiners:\n  - {id: r, phase: SOON, builtin: xid_followups}\n").message.find("phase"),
            std::string::npos);
  EXPECT_NE(first_error("version: 1\nsymptoms:\n  - {id: s, domain: cosmic}\n").message.find("domain"), std::string::npos);
  EXPECT_NE(first_error(R"(version: 1
extractors:
  - {id: x, pattern: 'Xid (?P<n>\d+)', symptom: "g.{n}", catalog: {id: nope, key: "{n}"}, fixtures: [{line: "Xid 1", expect: {symptom: g.1}}]}
)").message.find("unknown catalog"),
            std::string::npos);
  EXPECT_NE(first_error("version: 2\n").message.find("version"), std::string::npos);
}

TEST(RuleLoader, FixtureFailureIsReported) {
  auto rules = testing::load_or_die(R"(version: 1
extractors:
  - id: x
    pattern: 'foo (?P<n>\d+)'
    symptom: "s.{n}"
    fixtures:
      - {line: "foo 1", expect: {symptom: s.2}}
      - {line: "foo 1", expect: none}
)");
  ASSERT_TRUE(rules);
  auto results = run_fixtures(*rules);
  ASSERT_EQ(results.size(), 2u);
  EXPECT_FALSE(results[0].passed);
  EXPECT_NE(results[0].message.find("expected 's.2'"), std::string::npos) << results[0].message;
  EXPECT_FALSE(results[1].passed);
  EXPECT_EQ(results[0].line, 7);
}

TEST(RuleLoader, ListPatterns) {
  auto rules = testing::load_or_die(testing::kMiniRules);
  auto patterns = list_patterns(*rules);
  ASSERT_EQ(patterns.size(), 6u);
  EXPECT_EQ(patterns[0].extractor_id, "extract.gpu.xid");
}

}  // namespace
}  // namespace attribution

#include "rule_set.h"

namespace attribution {
namespace {

TEST(RuleLoader, CompiledCacheRoundTripAndRejection) {
  std::vector<RuleText> files = {{"t.yaml", testing::kMiniRules}};
  LoadResult fresh = load_rules(files);
  ASSERT_TRUE(fresh.ok());
  EXPECT_FALSE(fresh.rules->from_cache);
  std::string cache = serialize_compiled(*fresh.rules);
  ASSERT_FALSE(cache.empty());
  LoadResult cached = load_rules(files, cache);
  ASSERT_TRUE(cached.ok());
  EXPECT_TRUE(cached.rules->from_cache);
  for (const auto& r : run_fixtures(*cached.rules)) EXPECT_TRUE(r.passed) << r.rule_id << ": " << r.message;
  EXPECT_EQ(describe(*cached.rules).digest, describe(*fresh.rules).digest);
  // A cache for other rules, or a damaged one, is ignored and the rules are compiled.
  std::vector<RuleText> other = {{"t.yaml", std::string(testing::kMiniRules) + "\n"}};
  LoadResult mismatched = load_rules(other, cache);
  ASSERT_TRUE(mismatched.ok());
  EXPECT_FALSE(mismatched.rules->from_cache);
  std::string damaged = cache.substr(0, cache.size() / 2);
  LoadResult truncated = load_rules(files, damaged);
  ASSERT_TRUE(truncated.ok());
  EXPECT_FALSE(truncated.rules->from_cache);
  EXPECT_EQ(rules_digest(files), describe(*fresh.rules).digest);
}

}  // namespace
}  // namespace attribution
