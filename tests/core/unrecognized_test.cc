// The verdict's `unrecognized` section: error-like lines no extractor matched, counted under a
// normalised key (prefix stripped, numbers masked), never lines an extractor matched, bounded, and
// the same whatever the split of the input (threads, chunks, ingest pieces).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "attribution/codec.h"
#include "attribution/engine.h"
#include "test_rules.h"

namespace attribution {
namespace {

using nlohmann::json;

class UnrecognizedTest : public ::testing::Test {
 protected:
  void SetUp() override { rules_ = testing::load_or_die(testing::kMiniRules); }
  TextSource source(const std::string& name) {
    TextSource s;
    s.name = name;
    s.default_year = 2026;
    return s;
  }
  void scan_into(Extraction& ex, std::string_view text, const std::string& name = "t.log", uint64_t first_line = 1) {
    Scanner scanner(rules_);
    scanner.scan(source(name), text, 0, first_line, ex);
  }
  Extraction scan(std::string_view text, const std::string& name = "t.log") {
    Extraction ex;
    scan_into(ex, text, name);
    return ex;
  }
  static std::string dump(const Extraction& ex) {
    json j = json::object();
    for (const auto& [k, u] : ex.unrecognized()) {
      j[k] = {{"count", u.count}, {"text", u.text}, {"source", u.source}, {"line", u.line},
              {"sources", u.sources}, {"source_count", u.source_hashes.size()}};
    }
    j["_lines"] = ex.unrecognized_lines;
    return j.dump();
  }
  std::shared_ptr<const RuleSet> rules_;
};

TEST_F(UnrecognizedTest, CountsAndNormalises) {
  std::string text = "all good\n";
  for (int i = 0; i < 1000; ++i) {
    text += "2026-05-01T10:0" + std::to_string(i % 10) + ":00.123Z [rank" + std::to_string(i) +
            "]: Checkpoint shard " + std::to_string(i * 7) + " write failed at 0x7f3a" + std::to_string(i) + "\n";
  }
  Extraction ex = scan(text);
  ASSERT_EQ(ex.unrecognized().size(), 1u) << dump(ex);
  const auto& [key, u] = *ex.unrecognized().begin();
  EXPECT_EQ(key, "Checkpoint shard # write failed at 0x#");
  EXPECT_EQ(u.count, 1000u);
  EXPECT_EQ(u.line, 2u);
  EXPECT_EQ(u.text, "2026-05-01T10:00:00.123Z [rank0]: Checkpoint shard 0 write failed at 0x7f3a0");
  EXPECT_EQ(u.sources, std::vector<std::string>{"t.log"});
  EXPECT_EQ(ex.unrecognized_lines, 1000u);
}

TEST_F(UnrecognizedTest, PrefixShapesGiveOneKey) {
  Extraction ex = scan(
      "12: Fatal: rendezvous store closed on port 29500\n"
      "[1,3]<stderr>: Fatal: rendezvous store closed on port 29501\n"
      "E0612 01:14:57.061000 140 Fatal: rendezvous store closed on port 29502\n"
      "May 18 19:02:39 gpu-a01 Fatal: rendezvous store closed on port 29503\n"
      "2026-05-01 10:00:00,123 - Fatal: rendezvous store closed on port 29504\n");
  ASSERT_EQ(ex.unrecognized().size(), 1u) << dump(ex);
  EXPECT_EQ(ex.unrecognized().begin()->first, "Fatal: rendezvous store closed on port #");
  EXPECT_EQ(ex.unrecognized().begin()->second.count, 5u);
}

TEST_F(UnrecognizedTest, MatchedLinesNeverAppear) {
  // The watchdog line holds "timeout", the exception line "Error", the Xid line is matched too.
  Extraction ex = scan(
      "2026-05-01T10:31:00Z [E ProcessGroupNCCL.cpp:737] [Rank 1] Watchdog caught collective operation timeout: "
      "WorkNCCL(SeqNum=5, OpType=ALLREDUCE, Timeout(ms)=1800000) ran\n"
      "ValueError: bad shape, the job failed\n"
      "NVRM: Xid (PCI:0000:09:00): 79, pid=0, GPU has fallen off the bus. Fatal error\n"
      "RuntimeError: NCCL Call to recv from 10.0.0.3<58355> failed : Broken pipe\n");
  EXPECT_FALSE(ex.symptoms().empty());
  EXPECT_TRUE(ex.unrecognized().empty()) << dump(ex);
  EXPECT_EQ(ex.unrecognized_lines, 0u);
}

TEST_F(UnrecognizedTest, WordsNotInsideOtherWords) {
  Extraction none = scan("a terror in the mirror\nwrote to stderr\nroom 12, boomerang\nfailover? no: prefailure\n");
  // "failover" starts with fail: a word start, so it counts; "prefailure" does not.
  ASSERT_EQ(none.unrecognized().size(), 1u) << dump(none);
  EXPECT_EQ(none.unrecognized().begin()->first, "failover? no: prefailure");
  Extraction some = scan("Reason: OOMKilled\ncudaErrorLaunchFailure raised\nSegmentation fault (core dumped)\nNCCL WARN Cuda failure 'out of memory'\n");
  EXPECT_EQ(some.unrecognized().size(), 4u) << dump(some);
}

// Error words of several words match as written, one blank between the words, also where the scan
// looks at the text with runs of blanks cut to one: "timed  out" is not "timed out".
TEST_F(UnrecognizedTest, SeveralWordsMatchAsWritten) {
  Extraction wide = scan("request   timed  out after 30 s\nthe  job  ran out  of  memory\n");
  EXPECT_TRUE(wide.unrecognized().empty()) << dump(wide);
  Extraction exact = scan("request   timed out after 30 s\nthe  job  ran out of memory\n");
  EXPECT_EQ(exact.unrecognized().size(), 2u) << dump(exact);
}

TEST_F(UnrecognizedTest, OwnTimeOutsideTheWindowIsLeftOut) {
  Extraction ex;
  ex.set_window(parse_rfc3339("2026-05-01T10:00:00Z").value, parse_rfc3339("2026-05-01T11:00:00Z").value);
  scan_into(ex, "2026-04-01T10:00:00Z disk check failed\n2026-05-01T10:30:00Z disk check failed\nno stamp: disk check failed\n");
  ASSERT_EQ(ex.unrecognized().size(), 2u) << dump(ex);
  EXPECT_EQ(ex.unrecognized().at("disk check failed").count, 1u);
  EXPECT_EQ(ex.unrecognized().at("disk check failed").line, 2u);
}

TEST_F(UnrecognizedTest, SameUnderAnySplit) {
  std::string text;
  for (int i = 0; i < 300; ++i) {
    text += "2026-05-01T10:00:00Z step " + std::to_string(i) + " ok\n";
    if (i % 7 == 0) text += "worker " + std::to_string(i) + " heartbeat timed out\n";
    if (i % 11 == 0) text += "[rank" + std::to_string(i % 4) + "]: Exception in thread loader-" + std::to_string(i) + "\n";
    if (i % 13 == 0) text += "ValueError: not unrecognized\n";
  }
  std::vector<std::string> names = {"a.log", "b.log", "c.log"};
  Extraction whole;
  for (const auto& n : names) scan_into(whole, text, n);
  std::string want = dump(whole);
  EXPECT_EQ(whole.unrecognized().size(), 2u) << want;
  EXPECT_EQ(whole.unrecognized().at("worker # heartbeat timed out").source_hashes.size(), 3u);
  // Pieces of each file in separate extractions, merged in reverse order.
  std::vector<size_t> cuts;
  for (size_t pos = text.find('\n', 997); pos != std::string::npos; pos = text.find('\n', pos + 1500)) cuts.push_back(pos + 1);
  std::vector<Extraction> parts;
  for (const auto& n : names) {
    size_t from = 0;
    uint64_t line = 1;
    cuts.push_back(text.size());
    for (size_t cut : cuts) {
      if (cut <= from) continue;
      std::string_view piece(text.data() + from, cut - from);
      Extraction e;
      scan_into(e, piece, n, line);
      for (char c : piece) line += c == '\n';
      parts.push_back(std::move(e));
      from = cut;
    }
    cuts.pop_back();
  }
  ASSERT_GT(parts.size(), 6u);
  Extraction merged;
  for (auto it = parts.rbegin(); it != parts.rend(); ++it) merged.merge(*it);
  EXPECT_EQ(dump(merged), want);
  // And merged as a tree: ((0+1)+(2+3))+...
  Extraction left, right;
  for (size_t i = 0; i < parts.size(); ++i) (i % 2 ? right : left).merge(parts[i]);
  right.merge(left);
  EXPECT_EQ(dump(right), want);
}

TEST_F(UnrecognizedTest, KeysAreCapped) {
  std::string text;
  for (int i = 0; i < 2000; ++i) {
    // 1,200 distinct one-off keys (letters differ), and one key seen 800 times.
    if (i < 1200) {
      std::string word;
      for (int v = i; v > 0 || word.empty(); v /= 26) word += static_cast<char>('g' + v % 20);
      text += "oneoff " + word + " failed\n";
    } else {
      text += "frequent thing failed\n";
    }
  }
  Extraction ex = scan(text);
  EXPECT_LE(ex.unrecognized().size(), 2 * kMaxUnrecognizedKeys);
  EXPECT_GT(ex.unrecognized_dropped, 0u);
  EXPECT_EQ(ex.unrecognized().at("frequent thing failed").count, 800u);
  EXPECT_EQ(ex.unrecognized_lines, 2000u);
}

TEST_F(UnrecognizedTest, InTheVerdict) {
  ExecutionContext c;
  c.id = "1";
  c.scheduler = "slurm";
  c.state = "FAILED";
  Session s(rules_, c);
  std::string text;
  for (int i = 0; i < 5; ++i) text += "Lustre: ll_ost_io failed to write block " + std::to_string(i) + "\n";
  text += "some mystery abort in stage 3\n";
  text += "ValueError: matched, so not listed\n";
  s.ingest_text(source("rank-0.log"), text);
  s.ingest_text(source("rank-1.log"), "Lustre: ll_ost_io failed to write block 99\n");
  Verdict v = s.attribute();
  json j = json::parse(v.json);
  ASSERT_EQ(j["unrecognized"].size(), 2u) << j["unrecognized"].dump();
  const json& top = j["unrecognized"][0];
  EXPECT_EQ(top["key"], "Lustre: ll_ost_io failed to write block #");
  EXPECT_EQ(top["count"], 6);
  EXPECT_EQ(top["source_count"], 2);
  EXPECT_EQ(top["sources"], json::array({"rank-0.log", "rank-1.log"}));
  EXPECT_EQ(top["first"]["source"], "rank-0.log");
  EXPECT_EQ(top["first"]["line"], 1);
  EXPECT_EQ(top["text"], "Lustre: ll_ost_io failed to write block 0");
  EXPECT_EQ(j["unrecognized"][1]["key"], "some mystery abort in stage #");
  EXPECT_EQ(j["input"]["unrecognized_lines"], 7);
  EXPECT_NE(v.summary.find("unrecognized: 7 error-like line(s)"), std::string::npos) << v.summary;
}

}  // namespace
}  // namespace attribution
