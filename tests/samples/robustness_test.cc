// Hostile bundles: analyze never crashes or hangs, and errors name the file and line.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>

#include "commands/analyze.h"
#include "io/file_reader.h"

namespace attribution::blueprint {
namespace {

namespace fs = std::filesystem;

class Robustness : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("attribution-robust-" + std::to_string(::getpid()) + "-" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  void write(const std::string& rel, const std::string& content) {
    fs::create_directories((dir_ / rel).parent_path());
    std::ofstream(dir_ / rel, std::ios::binary) << content;
  }
  int analyze(std::string& out, std::string& err, size_t chunk = 8u << 20) {
    AnalyzeOptions o;
    o.bundle = dir_.string();
    o.rules = RULES_DIR;
    o.chunk_bytes = chunk;
    std::ostringstream os, es;
    int rc = run_analyze(o, os, es);
    out = os.str();
    err = es.str();
    return rc;
  }
  fs::path dir_;
};

const char* kManifest = R"(workload:
  id: "r1"
  state: FAILED
  start: 2026-05-01T10:00:00Z
  end: 2026-05-01T11:00:00Z
  nodes: [n1]
sources:
  - path: app.log
    kind: applog
    node: n1
)";

TEST_F(Robustness, BinaryJunkHugeLineCrlfInvalidUtf8) {
  write("workload.yaml", kManifest);
  std::string log;
  std::mt19937 rng(42);
  for (int i = 0; i < 200000; ++i) log += static_cast<char>(rng() & 0xff);
  log += "\r\n" + std::string(10u << 20, 'y') + "\r\n";
  log += "2026-05-01T10:10:00Z NVRM: Xid (PCI:0000:09:00): 79, pid=0, GPU has fallen off the bus.\r\n\xff\xfe\xc3";
  write("app.log", log);
  std::string out, err;
  EXPECT_EQ(analyze(out, err, 1u << 20), kExitOk) << err;
  auto v = nlohmann::json::parse(out);
  EXPECT_EQ(v["outcome"], "gpu.fell_off_bus");
}

TEST_F(Robustness, MalformedManifestNamesFileAndLine) {
  write("workload.yaml", "workload:\n  id: x\n  start: not-a-time\n");
  std::string out, err;
  EXPECT_EQ(analyze(out, err), kExitError);
  EXPECT_NE(err.find("workload.yaml:3"), std::string::npos) << err;
  write("workload.yaml", "workload: [\n");
  EXPECT_EQ(analyze(out, err), kExitError);
  EXPECT_NE(err.find("workload.yaml:"), std::string::npos) << err;
}

TEST_F(Robustness, MissingWorkloadYaml) {
  std::string out, err;
  EXPECT_EQ(analyze(out, err), kExitError);
  EXPECT_NE(err.find("workload.yaml"), std::string::npos);
}

TEST_F(Robustness, EmptyAndMissingFilesAndPathEscape) {
  write("workload.yaml", std::string(kManifest) +
                             "  - path: missing*.log\n    kind: syslog\n  - path: ../../etc/passwd\n    kind: syslog\n");
  write("app.log", "");
  std::string out, err;
  EXPECT_EQ(analyze(out, err), kExitNoData);
  auto v = nlohmann::json::parse(out);
  EXPECT_EQ(v["quality"]["level"], "insufficient");  // nothing read: no cause can be established
  bool escape = false;
  for (const auto& r : v["connector_reports"]) escape |= r["reason"].get<std::string>().find("leaves the bundle") != std::string::npos;
  EXPECT_TRUE(escape) << v["connector_reports"];
}

TEST_F(Robustness, GzipFilesAreRead) {
  write("workload.yaml", std::string(kManifest).replace(std::string(kManifest).find("app.log"), 7, "app.log.gz"));
  std::string plain = "2026-05-01T10:10:00Z NVRM: Xid (PCI:0000:09:00): 48, pid=1, DBE\n";
  write("plain.txt", plain);
  ASSERT_EQ(std::system(("gzip -c " + (dir_ / "plain.txt").string() + " > " + (dir_ / "app.log.gz").string()).c_str()), 0);
  fs::remove(dir_ / "plain.txt");
  std::string out, err;
  EXPECT_EQ(analyze(out, err), kExitOk) << err;
  EXPECT_EQ(nlohmann::json::parse(out)["outcome"], "gpu.memory_ecc");
}

TEST_F(Robustness, CorruptGzipIsAReadError) {
  write("workload.yaml", std::string(kManifest).replace(std::string(kManifest).find("app.log"), 7, "app.log.gz"));
  std::string plain;
  for (int i = 0; i < 2000; ++i) plain += "2026-05-01T10:10:00Z step " + std::to_string(i) + " loss 1.0\n";
  write("plain.txt", plain);
  ASSERT_EQ(std::system(("gzip -c " + (dir_ / "plain.txt").string() + " > " + (dir_ / "full.gz").string()).c_str()), 0);
  std::ifstream in(dir_ / "full.gz", std::ios::binary);
  std::string gz((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  write("app.log.gz", gz.substr(0, gz.size() / 2));  // truncated stream
  std::string out, err;
  int rc = analyze(out, err);
  EXPECT_TRUE(rc == kExitPartial || rc == kExitNoData) << rc << " " << err;
  auto v = nlohmann::json::parse(out);
  EXPECT_EQ(v["connector_reports"][0]["status"], "error");
  EXPECT_NE(v["connector_reports"][0]["reason"].get<std::string>().find("gzip"), std::string::npos)
      << v["connector_reports"][0];
}

TEST_F(Robustness, ByteRangesTileAFileExactly) {
  std::string text;
  for (int i = 0; i < 5000; ++i) text += "line " + std::to_string(i) + std::string(i % 97, 'z') + "\n";
  text += "last line without newline";
  write("f.log", text);
  std::string path = (dir_ / "f.log").string();
  // Every range also reads up to 128 KiB of look-back context before it: the 1- and 7-byte
  // ranges tile the first 20,000 bytes (a line straddling the cut is then the next range's).
  for (uint64_t range : {1ull, 7ull, 4096ull, 100000ull}) {
    std::string rebuilt;
    uint64_t limit = range < 100 ? 20000 : text.size();
    std::string want = text.substr(0, text.find('\n', limit - 1) + 1);
    if (range >= 100) want = text;
    for (uint64_t b = 0; b < limit; b += range) {
      std::string error;
      auto r = ChunkReader::open(path, b, std::min<uint64_t>(limit, b + range), 512, error);
      ASSERT_TRUE(r) << error;
      Chunk c;
      while (r->next(c)) rebuilt += std::string(c.buffer.substr(c.scan_from));
    }
    EXPECT_EQ(rebuilt, want) << "range " << range;
  }
}

// A range that starts mid-file hands the scanner the lines before it as look-back context, so an
// unstamped line at the start of a range gets the same time as in a whole-file scan.
TEST_F(Robustness, RangeStartsWithLookBackContext) {
  std::string text;
  for (int i = 0; i < 1000; ++i) text += "line " + std::to_string(i) + "\n";
  write("g.log", text);
  uint64_t begin = text.find("line 500\n");
  std::string error;
  auto r = ChunkReader::open((dir_ / "g.log").string(), begin, text.size(), 1 << 20, error);
  ASSERT_TRUE(r) << error;
  Chunk c;
  ASSERT_TRUE(r->next(c));
  EXPECT_EQ(c.buffer.substr(c.scan_from, 9), "line 500\n");
  ASSERT_GT(c.scan_from, 9u);
  EXPECT_EQ(c.buffer.substr(0, 7), "line 0\n");  // the whole file fits in the 128 KiB context
  EXPECT_EQ(c.buffer.substr(c.scan_from - 9, 9), "line 499\n");
}

}  // namespace
}  // namespace attribution::blueprint
