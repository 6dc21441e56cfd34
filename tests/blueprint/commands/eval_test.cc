// `eval` on small synthetic corpora in a temp dir: sample bundles (whose verdicts the samples tests
// pin) under answer keys written to be correct, wrong, confident-wrong, undetermined, with culprit
// hits and misses, and a broken expected.yaml. Checks the counts, the JSON document and the exit
// codes of the thresholds; and the answer-key parser and the judgement on their own.
#include "commands/eval.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "commands/analyze.h"

namespace attribution::blueprint {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

struct TempDir {
  fs::path path;
  TempDir() {
    char tmpl[] = "/tmp/eval-test.XXXXXX";
    path = mkdtemp(tmpl);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

const std::string kSamples = std::string(ATTRIBUTION_SOURCE_DIR) + "/samples/";
const std::string kRules = std::string(ATTRIBUTION_SOURCE_DIR) + "/rules";

void make_case(const fs::path& root, const std::string& name, const std::string& sample, const std::string& key) {
  fs::path dir = root / name;
  fs::copy(kSamples + sample, dir, fs::copy_options::recursive);
  fs::remove(dir / "expected.yaml");
  std::ofstream(dir / "expected.yaml") << key;
}

// A failed job whose only log is training progress.
void make_quiet_case(const fs::path& root, const std::string& name, const std::string& key) {
  fs::path dir = root / name;
  fs::create_directories(dir / "logs");
  std::ofstream(dir / "workload.yaml") << "workload:\n  id: \"1\"\n  scheduler: slurm\n  state: FAILED\n"
                                          "  exit_code: \"1:0\"\n  nodes: [n1]\nsources:\n  - path: logs/n1.log\n"
                                          "    kind: applog\n    node: n1\n";
  std::ofstream(dir / "logs/n1.log") << "epoch 1 step 10 loss 2.31\nepoch 1 step 20 loss 2.12\n";
  std::ofstream(dir / "expected.yaml") << key;
}

struct EvalRun {
  int rc = 0;
  std::string out, err;
};

EvalRun eval(const std::vector<std::string>& dirs, const std::string& output = "text", double min_accuracy = -1,
         long max_confident_wrong = -1, double min_culprit_rate = -1, unsigned jobs = 2) {
  EvalOptions o;
  o.dirs = dirs;
  o.output = output;
  o.rules = kRules;
  o.jobs = jobs;
  o.min_accuracy = min_accuracy;
  o.max_confident_wrong = max_confident_wrong;
  o.min_culprit_rate = min_culprit_rate;
  std::ostringstream out, err;
  EvalRun r;
  r.rc = run_eval(o, out, err);
  r.out = out.str();
  r.err = err.str();
  return r;
}

class EvalCorpus : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir();
    fs::path root = dir_->path / "corpus";
    fs::create_directories(root);
    // application definitive on gpu-t01 (a CUDA OOM with its sizes; a bare traceback class would be
    // generic evidence, probable at most)
    make_case(root, "a-correct", "cuda-oom-real",
              "domains: [application]\noutcomes: [application.cuda_oom]\nculprit_nodes: [gpu-t01]\ntags: [t1]\n");
    // application probable, expected gpu: wrong but not confident
    make_case(root, "b-wrong", "barrier-timeout-checkpoint-save",
              "domains: [gpu]\nculprit_nodes: [gpu-zz99]\ntags: [t1, t2]\n");
    // scheduler definitive, expected gpu: confident-wrong
    make_case(root, "c-confident-wrong", "slurm-user-scancel", "domains: [gpu]\n");
    // unknown insufficient (a failed job whose log says nothing): the honest answer to an
    // undetermined case
    make_quiet_case(root, "d-undetermined", "undetermined: true\ntags: [t2]\n");
    // an unknown key on line 2
    make_quiet_case(root, "e-bad-key", "domains: [gpu]\ndomain: gpu\n");
    // nested one level: found by the walk
    fs::create_directories(root / "group");
    make_case(root / "group", "f-ceiling", "cuda-oom-real",
              "domains: [application]\nquality_ceiling: probable\nculprit_ranks: [3]\n");
  }
  static void TearDownTestSuite() {
    delete dir_;
    dir_ = nullptr;
  }
  static fs::path corpus() { return dir_->path / "corpus"; }
  static TempDir* dir_;
};
TempDir* EvalCorpus::dir_ = nullptr;

TEST_F(EvalCorpus, CountsAndLines) {
  EvalRun r = eval({corpus().string()});
  EXPECT_EQ(r.rc, 0) << r.err;
  std::istringstream lines(r.out);
  std::vector<std::string> case_lines;
  std::string line;
  while (std::getline(lines, line)) {
    if (line.rfind("a-correct", 0) == 0 || line.rfind("b-wrong", 0) == 0 || line.rfind("c-confident", 0) == 0 ||
        line.rfind("d-undet", 0) == 0 || line.rfind("e-bad", 0) == 0 || line.rfind("group/f-ceiling", 0) == 0)
      case_lines.push_back(line);
  }
  ASSERT_EQ(case_lines.size(), 6u) << r.out;
  EXPECT_NE(case_lines[0].find("correct"), std::string::npos);
  EXPECT_NE(case_lines[0].find("culprit hit"), std::string::npos);
  EXPECT_NE(case_lines[1].find("WRONG"), std::string::npos);
  EXPECT_NE(case_lines[1].find("culprit miss"), std::string::npos);
  EXPECT_NE(case_lines[2].find("CONFIDENT-WRONG"), std::string::npos);
  EXPECT_NE(case_lines[3].find(" correct "), std::string::npos);
  EXPECT_NE(case_lines[4].find("expected.yaml:2:1: unknown key 'domain'"), std::string::npos) << case_lines[4];
  EXPECT_NE(case_lines[5].find("CONFIDENT-WRONG"), std::string::npos);  // definitive above a probable ceiling
  EXPECT_NE(r.out.find("correct 2/6 (33.3%)  wrong 4  confident-wrong 2  errors 1"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("culprit hits 2/3"), std::string::npos) << r.out;
  EXPECT_NE(r.err.find("expected.yaml:2:1"), std::string::npos);
}

TEST_F(EvalCorpus, JsonSummary) {
  EvalRun r = eval({corpus().string()}, "json");
  ASSERT_EQ(r.rc, 0) << r.err;
  json doc = json::parse(r.out);
  const json& s = doc["summary"];
  EXPECT_EQ(s["total"], 6);
  EXPECT_EQ(s["correct"], 2);
  EXPECT_EQ(s["confident_wrong"], 2);
  EXPECT_EQ(s["errors"], 1);
  EXPECT_EQ(s["culprit_hits"], 2);
  EXPECT_EQ(s["culprit_cases"], 3);
  EXPECT_DOUBLE_EQ(s["accuracy"].get<double>(), 33.3);
  EXPECT_EQ(s["confusion"]["gpu"]["application"], 1);
  EXPECT_EQ(s["confusion"]["gpu"]["scheduler"], 1);
  EXPECT_EQ(s["confusion"]["application"]["application"], 2);
  EXPECT_EQ(s["confusion"]["(undetermined)"]["unknown"], 1);
  EXPECT_EQ(s["confusion"]["(error)"]["(error)"], 1);
  EXPECT_EQ(s["quality_precision"]["definitive"]["verdicts"], 3);
  EXPECT_EQ(s["quality_precision"]["definitive"]["correct"], 1);
  EXPECT_EQ(s["quality_precision"]["insufficient"]["correct"], 1);
  EXPECT_EQ(s["tags"]["t1"]["correct"], 1);
  EXPECT_EQ(s["tags"]["t1"]["total"], 2);
  EXPECT_EQ(s["tags"]["t2"]["correct"], 1);
  EXPECT_TRUE(s["unrecognized"].is_array());
  ASSERT_EQ(doc["cases"].size(), 6u);
  const json& a = doc["cases"][0];
  EXPECT_EQ(a["case"], "a-correct");
  EXPECT_EQ(a["correct"], true);
  EXPECT_EQ(a["culprit_hit"], true);
  EXPECT_EQ(a["verdict"]["domain"], "application");
  const json& b = doc["cases"][1];
  EXPECT_EQ(b["correct"], false);
  EXPECT_EQ(b["confident_wrong"], false);
  EXPECT_EQ(b["culprit_hit"], false);
  ASSERT_FALSE(b["reasons"].empty());
  EXPECT_NE(b["reasons"][0].get<std::string>().find("domain application not in [gpu]"), std::string::npos);
  EXPECT_EQ(doc["cases"][2]["confident_wrong"], true);
  EXPECT_TRUE(doc["cases"][3]["culprit_hit"].is_null());
  EXPECT_TRUE(doc["cases"][4]["verdict"].is_null());
  EXPECT_EQ(doc["cases"][5]["case"], "group/f-ceiling");
  EXPECT_EQ(doc["cases"][5]["culprit_hit"], true);  // rank 0 raised the exception
}

TEST_F(EvalCorpus, Thresholds) {
  std::string d = corpus().string();
  EXPECT_EQ(eval({d}, "text", 33.0).rc, 0);
  EvalRun low = eval({d}, "text", 50.0);
  EXPECT_EQ(low.rc, 1);
  EXPECT_NE(low.err.find("--min-accuracy"), std::string::npos);
  EXPECT_EQ(eval({d}, "text", -1, 2).rc, 0);
  EvalRun cw = eval({d}, "text", -1, 1);
  EXPECT_EQ(cw.rc, 1);
  EXPECT_NE(cw.err.find("--max-confident-wrong"), std::string::npos);
  EXPECT_EQ(eval({d}, "text", -1, -1, 60.0).rc, 0);
  EXPECT_EQ(eval({d}, "text", -1, -1, 70.0).rc, 1);
}

TEST_F(EvalCorpus, DeterministicAcrossJobsAndACaseDirIsOneCase) {
  EXPECT_EQ(eval({corpus().string()}, "json", -1, -1, -1, 1).out, eval({corpus().string()}, "json", -1, -1, -1, 4).out);
  EvalRun one = eval({(corpus() / "a-correct").string()}, "json");
  ASSERT_EQ(one.rc, 0) << one.err;
  json doc = json::parse(one.out);
  ASSERT_EQ(doc["cases"].size(), 1u);
  EXPECT_EQ(doc["cases"][0]["case"], "a-correct");
  EXPECT_EQ(doc["summary"]["accuracy"], 100.0);
}

TEST(EvalCli, NoCasesIsAnError) {
  TempDir t;
  EvalRun r = eval({t.path.string()});
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(r.err.find("no cases"), std::string::npos);
}

TEST(Expectation, ErrorsNameFileLineColumn) {
  Expectation e;
  std::string error;
  EXPECT_FALSE(parse_expectation("domains: [gpu]\nqualty_floor: probable\n", "x.yaml", e, error));
  EXPECT_EQ(error.rfind("x.yaml:2:1: unknown key 'qualty_floor'", 0), 0u) << error;
  EXPECT_FALSE(parse_expectation("domains: [gpu, gpus]\n", "x.yaml", e, error));
  EXPECT_EQ(error.rfind("x.yaml:1:16: unknown domain 'gpus'", 0), 0u) << error;
  EXPECT_FALSE(parse_expectation("domains: [gpu]\nquality_floor: sure\n", "x.yaml", e, error));
  EXPECT_EQ(error.rfind("x.yaml:2:16: quality_floor must be one of", 0), 0u) << error;
  EXPECT_FALSE(parse_expectation("domains: [gpu]\noutcomes: [gpu_fell]\n", "x.yaml", e, error));
  EXPECT_EQ(error.rfind("x.yaml:2:12:", 0), 0u) << error;
  EXPECT_FALSE(parse_expectation("domains: [gpu\n", "x.yaml", e, error));
  EXPECT_EQ(error.rfind("x.yaml:", 0), 0u) << error;
  EXPECT_FALSE(parse_expectation("tags: [a]\n", "x.yaml", e, error));
  EXPECT_NE(error.find("'domains' is required"), std::string::npos);
  EXPECT_FALSE(parse_expectation("domains: [gpu]\nculprit_ranks: [a]\n", "x.yaml", e, error));
  ASSERT_TRUE(parse_expectation(
      "domains: [gpu, node]\noutcomes: [gpu.fell_off_bus]\nquality_floor: probable\nundetermined: false\n"
      "culprit_nodes: [n1]\nculprit_ranks: [10]\ntags: [multi_node]\nnote: >-\n  why\nwidened: x\n",
      "x.yaml", e, error))
      << error;
  EXPECT_EQ(e.domains, (std::vector<std::string>{"gpu", "node"}));
  EXPECT_EQ(e.culprit_ranks, std::vector<int>{10});
  EXPECT_EQ(e.note, "why");
}

TEST(Judge, Rules) {
  Expectation e;
  e.domains = {"gpu"};
  e.quality_ceiling = "probable";
  VerdictDigest g;
  g.domain = "gpu";
  g.quality = "probable";
  EXPECT_TRUE(judge(e, g).correct);
  g.quality = "definitive";
  Judgement j = judge(e, g);
  EXPECT_FALSE(j.correct);
  EXPECT_TRUE(j.confident_wrong);
  Expectation u;
  u.undetermined = true;
  u.domains = {"network"};
  g = {};
  g.domain = "network";
  g.quality = "probable";
  EXPECT_TRUE(judge(u, g).correct);
  g.quality = "definitive";
  EXPECT_TRUE(judge(u, g).confident_wrong);
  g.domain = "unknown";
  EXPECT_TRUE(judge(u, g).correct);
  g.domain = "gpu";
  g.quality = "ambiguous";
  EXPECT_TRUE(judge(u, g).correct);
  Expectation c;
  c.domains = {"gpu"};
  c.culprit_nodes = {"n2"};
  c.culprit_ranks = {7};
  g = {};
  g.domain = "gpu";
  g.quality = "ambiguous";
  EXPECT_EQ(judge(c, g).culprit_hit, 0);
  g.candidate_nodes = {"n1", "n2"};
  EXPECT_EQ(judge(c, g).culprit_hit, 1);
  g = {};
  g.root_ranks = {4, 7};
  EXPECT_EQ(judge(c, g).culprit_hit, 1);
}

}  // namespace
}  // namespace attribution::blueprint
