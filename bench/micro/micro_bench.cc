// Micro-benchmarks of the extraction and attribution stages (issue #6), with the full rule
// catalogue of rules/. Run: build-bench/bench/bench-micro [--benchmark_filter=REGEX]
//
// Stages, cheapest first:
//   line splitting     std::count / memchr over a buffer; ChunkReader streaming a file
//   Vectorscan         hs_scan with the applog/syslog database and a no-op callback (the floor)
//   Scanner::scan      noise only (scan + line count + coverage; no candidate)
//   time stamps        detail::parse_line_prefix per stamp shape (runs on candidate lines only)
//   capture            Scanner::scan on text where every line is a confirmed candidate (RE2
//                      captures, templates, evidence, Extraction::add)
//   refinement         Session::attribute with 1,024–16,384 ranks that all time out
#include <benchmark/benchmark.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>

#include <fmt/format.h>
#include <memory>
#include <string>
#include <vector>

#include "attribution/engine.h"
#include "io/file_reader.h"
#include "attribution/edge/rules_dir.h"
#include "line_prefix.h"
#include <hs/hs.h>
#include "text_gen.h"

namespace ab = attribution::bench;
using attribution::Extraction;
using attribution::ObservationKind;
using attribution::Scanner;
using attribution::TextSource;

namespace {

constexpr size_t kNoiseBytes = 64u << 20;
constexpr int64_t kNs = 1000000000;
constexpr int64_t kStart = 1772438400ll * kNs;  // 2026-03-02T00:00:00Z

const std::shared_ptr<const attribution::RuleSet>& rules() {
  static std::shared_ptr<const attribution::RuleSet> r = [] {
    std::vector<std::string> errors;
    auto loaded = attribution::edge::load_rules_from(ATTRIBUTION_SOURCE_RULES_DIR, errors);
    if (!loaded) {
      for (const auto& e : errors) std::fprintf(stderr, "%s\n", e.c_str());
      std::abort();
    }
    return loaded;
  }();
  return r;
}

const std::string& noise() {
  static const std::string s = ab::app_noise(kNoiseBytes);
  return s;
}
const std::string& knoise() {
  static const std::string s = ab::kernel_noise(kNoiseBytes);
  return s;
}

TextSource app_source() {
  TextSource s;
  s.name = "logs/rank-00003.log";
  s.kind = ObservationKind::kAppLog;
  s.node = "gpu-a0001";
  s.rank = 3;
  s.default_year = 2026;
  return s;
}
TextSource kernel_source() {
  TextSource s;
  s.name = "kernel/dmesg-gpu-a0001.txt";
  s.kind = ObservationKind::kSyslog;
  s.node = "gpu-a0001";
  s.boot_time = kStart - 7 * 86400 * kNs;
  s.default_year = 2026;
  return s;
}

uint64_t line_count(const std::string& s) { return static_cast<uint64_t>(std::count(s.begin(), s.end(), '\n')); }

// ------------------------------------------------------------------ line splitting
void BM_Lines_StdCount(benchmark::State& state) {
  const std::string& s = noise();
  for (auto _ : state) benchmark::DoNotOptimize(std::count(s.data(), s.data() + s.size(), '\n'));
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * s.size()));
}
BENCHMARK(BM_Lines_StdCount)->Unit(benchmark::kMillisecond);

void BM_Lines_MemchrViews(benchmark::State& state) {  // a per-line loop producing string_views
  const std::string& s = noise();
  for (auto _ : state) {
    size_t n = 0, longest = 0;
    const char* p = s.data();
    const char* end = p + s.size();
    while (p < end) {
      const char* nl = static_cast<const char*>(memchr(p, '\n', static_cast<size_t>(end - p)));
      if (nl == nullptr) nl = end;
      std::string_view line(p, static_cast<size_t>(nl - p));
      longest = std::max(longest, line.size());
      ++n;
      p = nl + 1;
    }
    benchmark::DoNotOptimize(n);
    benchmark::DoNotOptimize(longest);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * s.size()));
  state.counters["ns/line"] = benchmark::Counter(static_cast<double>(state.iterations() * line_count(s)),
                                                 benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_Lines_MemchrViews)->Unit(benchmark::kMillisecond);

// ChunkReader over a page-cache-warm file (what every analyze worker does before scanning).
void BM_ChunkReader(benchmark::State& state) {
  std::string path = (std::filesystem::temp_directory_path() / "attribution-bench-chunkreader.log").string();
  const std::string& s = noise();
  {
    FILE* f = std::fopen(path.c_str(), "wb");
    for (int i = 0; i < 4; ++i) std::fwrite(s.data(), 1, s.size(), f);  // 256 MiB
    std::fclose(f);
  }
  size_t chunk = static_cast<size_t>(state.range(0)) << 20;
  uint64_t total = 0;
  for (auto _ : state) {
    std::string error;
    auto r = attribution::blueprint::ChunkReader::open(path, 0, 0, chunk, error);
    attribution::blueprint::Chunk c;
    uint64_t lines = 0;
    while (r->next(c)) lines += static_cast<uint64_t>(std::count(c.buffer.begin() + static_cast<ptrdiff_t>(c.scan_from), c.buffer.end(), '\n'));
    benchmark::DoNotOptimize(lines);
    total += r->bytes_read();
  }
  state.SetBytesProcessed(static_cast<int64_t>(total));
  std::filesystem::remove(path);
}
BENCHMARK(BM_ChunkReader)->Arg(1)->Arg(8)->Unit(benchmark::kMillisecond)->UseRealTime();

// ------------------------------------------------------------------ Vectorscan floor
// The catalogue's patterns (public list_patterns) compiled into one block-mode database the way
// the loader does (MULTILINE, CASELESS per pattern, PREFILTER for what Vectorscan rejects): the
// raw scan cost with a no-op callback, independent of the engine's internals.
struct OwnDb {
  hs_database_t* db = nullptr;
  hs_scratch_t* scratch = nullptr;
  OwnDb() {
    auto pats = attribution::list_patterns(*rules());
    std::vector<bool> prefilter(pats.size(), false);
    for (int attempt = 0; attempt < 256; ++attempt) {
      std::vector<const char*> exprs;
      std::vector<unsigned> flags, ids;
      for (unsigned i = 0; i < pats.size(); ++i) {
        exprs.push_back(pats[i].pattern.c_str());
        flags.push_back(HS_FLAG_MULTILINE | (pats[i].case_insensitive ? HS_FLAG_CASELESS : 0u) |
                        (prefilter[i] ? HS_FLAG_PREFILTER : 0u));
        ids.push_back(i);
      }
      hs_compile_error_t* err = nullptr;
      if (hs_compile_multi(exprs.data(), flags.data(), ids.data(), static_cast<unsigned>(exprs.size()), HS_MODE_BLOCK,
                           nullptr, &db, &err) == HS_SUCCESS)
        break;
      int bad = err->expression;
      hs_free_compile_error(err);
      if (bad < 0 || prefilter[static_cast<size_t>(bad)]) std::abort();
      prefilter[static_cast<size_t>(bad)] = true;
    }
    hs_alloc_scratch(db, &scratch);
  }
};
OwnDb& own_db() {
  static OwnDb d;
  return d;
}

int noop(unsigned, unsigned long long, unsigned long long, unsigned, void* ctx) {
  ++*static_cast<uint64_t*>(ctx);
  return 0;
}

void hs_raw(benchmark::State& state, const std::string& text) {
  OwnDb& d = own_db();
  uint64_t matches = 0;
  for (auto _ : state) hs_scan(d.db, text.data(), static_cast<unsigned>(text.size()), 0, d.scratch, noop, &matches);
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * text.size()));
  state.counters["matches/iter"] = static_cast<double>(matches) / static_cast<double>(state.iterations());
}
void BM_Vectorscan_AppNoise(benchmark::State& state) { hs_raw(state, noise()); }
void BM_Vectorscan_KernelNoise(benchmark::State& state) { hs_raw(state, knoise()); }
BENCHMARK(BM_Vectorscan_AppNoise)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Vectorscan_KernelNoise)->Unit(benchmark::kMillisecond);

// Per-line hs_scan (the ECOSYSTEM §2.2 baseline) to show why the engine scans whole buffers.
void BM_Vectorscan_AppNoisePerLine(benchmark::State& state) {
  OwnDb& d = own_db();
  const std::string& s = noise();
  uint64_t matches = 0;
  for (auto _ : state) {
    const char* p = s.data();
    const char* end = p + s.size();
    while (p < end) {
      const char* nl = static_cast<const char*>(memchr(p, '\n', static_cast<size_t>(end - p)));
      if (nl == nullptr) nl = end;
      hs_scan(d.db, p, static_cast<unsigned>(nl - p), 0, d.scratch, noop, &matches);
      p = nl + 1;
    }
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * s.size()));
}
BENCHMARK(BM_Vectorscan_AppNoisePerLine)->Unit(benchmark::kMillisecond);

// The fixed cost of every analyze run: read + parse + compile the catalogue.
void BM_LoadRules(benchmark::State& state) {
  std::vector<attribution::RuleText> files;
  std::string error;
  attribution::edge::read_rule_files(ATTRIBUTION_SOURCE_RULES_DIR, files, error);
  for (auto _ : state) {
    auto r = attribution::load_rules(files);
    if (!r.ok()) std::abort();
    benchmark::DoNotOptimize(r.rules.get());
  }
}
BENCHMARK(BM_LoadRules)->Unit(benchmark::kMillisecond)->Iterations(3);

// ------------------------------------------------------------------ Scanner::scan on noise
void scan_text(benchmark::State& state, const TextSource& src, const std::string& text) {
  Scanner scanner(rules());
  uint64_t candidates = 0;
  for (auto _ : state) {
    Extraction ex;
    scanner.scan(src, text, 0, 1, ex);
    candidates += ex.candidate_lines;
    benchmark::DoNotOptimize(ex.lines_scanned);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * text.size()));
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * line_count(text)));
  state.counters["candidates/iter"] = static_cast<double>(candidates) / static_cast<double>(state.iterations());
}
void BM_Scanner_AppNoise(benchmark::State& state) { scan_text(state, app_source(), noise()); }
void BM_Scanner_KernelNoise(benchmark::State& state) { scan_text(state, kernel_source(), knoise()); }
// One Scanner per thread over the same in-memory text: the CPU-bound multi-core ceiling.
BENCHMARK(BM_Scanner_AppNoise)->Unit(benchmark::kMillisecond)->UseRealTime()->Threads(1)->Threads(2);
BENCHMARK(BM_Scanner_KernelNoise)->Unit(benchmark::kMillisecond);

// Noise with one confirmed candidate every N lines.
void BM_Scanner_Mixed(benchmark::State& state) {
  static std::map<int64_t, std::string> texts;
  auto& t = texts[state.range(0)];
  if (t.empty()) t = ab::mixed(kNoiseBytes, static_cast<size_t>(state.range(0)));
  scan_text(state, app_source(), t);
}
BENCHMARK(BM_Scanner_Mixed)->Arg(100)->Arg(1000)->Arg(10000)->Unit(benchmark::kMillisecond);

// ------------------------------------------------------------------ time stamps
const char* stamp_name(ab::Stamp s) {
  switch (s) {
    case ab::Stamp::kC10: return "c10";
    case ab::Stamp::kDmesg: return "dmesg";
    case ab::Stamp::kIso: return "iso";
    case ab::Stamp::kSyslog: return "syslog";
    case ab::Stamp::kNone: return "none";
  }
  return "?";
}

void BM_TimePrefix(benchmark::State& state) {
  auto stamp = static_cast<ab::Stamp>(state.range(0));
  state.SetLabel(stamp_name(stamp));
  std::string text = ab::candidates(10000, stamp);
  std::vector<std::string_view> lines;
  for (size_t p = 0; p < text.size();) {
    size_t nl = text.find('\n', p);
    lines.emplace_back(text.data() + p, nl - p);
    p = nl + 1;
  }
  TextSource src = stamp == ab::Stamp::kC10 || stamp == ab::Stamp::kNone ? app_source() : kernel_source();
  int64_t sum = 0;
  for (auto _ : state) {
    for (auto l : lines) sum += attribution::detail::parse_line_prefix(l, src, 2026).t;
  }
  benchmark::DoNotOptimize(sum);
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * lines.size()));
}
BENCHMARK(BM_TimePrefix)->DenseRange(0, 4);

// ------------------------------------------------------------------ capture stage
void BM_Capture(benchmark::State& state) {
  auto stamp = static_cast<ab::Stamp>(state.range(0));
  state.SetLabel(stamp_name(stamp));
  std::string text = ab::candidates(20000, stamp);
  TextSource src = stamp == ab::Stamp::kC10 || stamp == ab::Stamp::kNone ? app_source() : kernel_source();
  scan_text(state, src, text);
}
BENCHMARK(BM_Capture)->DenseRange(0, 4)->Unit(benchmark::kMillisecond);

// ------------------------------------------------------------------ refinement / attribute
attribution::ExecutionContext context(int ranks, int gpn) {
  attribution::ExecutionContext c;
  c.id = "bench";
  c.scheduler = "slurm";
  c.state = "FAILED";
  c.exit_code = "1:0";
  c.start = kStart;
  c.end = kStart + 7 * 3600 * kNs;
  for (int n = 0; n < (ranks + gpn - 1) / gpn; ++n) c.nodes.push_back(fmt::format("gpu-a{:04}", n + 1));
  for (int r = 0; r < ranks; ++r) c.ranks[r] = c.nodes[static_cast<size_t>(r / gpn)];
  return c;
}

// Per-rank extractions as the parallel scanner would produce them: every rank's watchdog timeout
// (3 lines), and for `xid` one dmesg Xid 79 on one node.
std::vector<Extraction> rank_extractions(int ranks, bool xid) {
  Scanner scanner(rules());
  std::vector<Extraction> out;
  for (int r = 0; r < ranks; ++r) {
    TextSource src = app_source();
    src.name = fmt::format("logs/rank-{:05}.log", r);
    src.rank = r;
    src.node = fmt::format("gpu-a{:04}", r / 8 + 1);
    std::string text = fmt::format(
        "[rank{0}]:[E302 06:10:00.{1:09} ProcessGroupNCCL.cpp:607] [Rank {0}] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=9120, OpType=ALLREDUCE, NumelIn=160672064, NumelOut=160672064, Timeout(ms)=600000) ran for 600042 milliseconds before timing out.\n"
        "[rank{0}]:[E302 06:10:00.{1:09} ProcessGroupNCCL.cpp:1664] [PG 0 (default_pg) Rank {0}] Exception (either an error or timeout) detected by watchdog at work: 9120, last enqueued NCCL work: 9120, last completed NCCL work: 9119.\n"
        "[rank{0}]:[E302 06:10:00.{1:09} ProcessGroupNCCL.cpp:1515] [PG 0 (default_pg) Rank {0}] Process group watchdog thread terminated with exception: [Rank {0}] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=9120, OpType=ALLREDUCE, NumelIn=160672064, NumelOut=160672064, Timeout(ms)=600000) ran for 600042 milliseconds before timing out.\n",
        r, 1000 * static_cast<unsigned>(r));
    Extraction ex;
    scanner.scan(src, text, 0, 1, ex);
    out.push_back(std::move(ex));
  }
  if (xid) {
    TextSource k = kernel_source();
    k.node = "gpu-a0003";
    std::string line = fmt::format("[{}.000100] NVRM: Xid (PCI:0000:18:00): 79, pid=0, GPU has fallen off the bus.\n",
                                   7 * 86400 + 6 * 3600);
    Extraction ex;
    scanner.scan(k, line, 0, 1, ex);
    out.push_back(std::move(ex));
  }
  return out;
}

void BM_MergeExtractions(benchmark::State& state) {
  int ranks = static_cast<int>(state.range(0));
  auto parts = rank_extractions(ranks, false);
  for (auto _ : state) {
    Extraction all;
    for (const auto& p : parts) all.merge(p);
    benchmark::DoNotOptimize(all.symptoms().size());
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()) * ranks);
}
BENCHMARK(BM_MergeExtractions)->RangeMultiplier(4)->Range(1024, 16384)->Unit(benchmark::kMillisecond);

void BM_Attribute(benchmark::State& state) {
  int ranks = static_cast<int>(state.range(0));
  bool xid = state.range(1) != 0;
  state.SetLabel(xid ? "xid79+timeouts" : "all-timeout");
  attribution::Session session(rules(), context(ranks, 8));
  for (const auto& p : rank_extractions(ranks, xid)) session.merge(p);
  size_t bytes = 0;
  for (auto _ : state) {
    attribution::Verdict v = session.attribute();
    bytes = v.json.size();
    benchmark::DoNotOptimize(v.json.data());
  }
  state.counters["verdict_bytes"] = static_cast<double>(bytes);
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()) * ranks);
}
BENCHMARK(BM_Attribute)
    ->ArgsProduct({{1024, 4096, 16384}, {0, 1}})
    ->Unit(benchmark::kMillisecond)
    ->Iterations(3);

}  // namespace
