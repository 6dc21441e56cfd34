// bench-gen-bundle: writes a realistic, deterministic workload bundle (SPEC §7) for benchmarks.
//
//   bench-gen-bundle --out DIR --size 1G --ranks 64 [--gpn 8] [--seed 1]
//                    [--scenario xid79|all-timeout|clean] [--jobs 2]
//                    [--density PCT] [--launcher torchrun|srun|mpirun]
//
// Layout: DIR/workload.yaml, DIR/logs/rank-NNNNN.log (one file per global rank), DIR/kernel/
// dmesg-<node>.txt (one per node, dmesg seconds-since-boot), DIR/sacct.txt, DIR/expected.txt (what
// was injected). About 97 % of the bytes are rank output (Megatron iteration lines, python logging,
// NCCL INFO, c10/glog torch warnings, a little ANSI colour) and 3 % kernel noise; line shapes are the
// ones of samples/_gen/lib.py and /work/shared/FORMATS.md.
//
// Failure cascades:
//   xid79        one GPU of one node falls off the bus (dmesg Xid 79), its rank dies with
//                "CUDA error: unknown error", every other rank's watchdog times out 600 s later on
//                the same SeqNum, torchrun agents SIGTERM their workers.
//   all-timeout  every rank times out on the same SeqNum and nothing else says why.
//   clean        no failure (COMPLETED).
//
// Match density (--density PCT, e.g. 0.1, 1, 10, 30): a failure storm. About PCT % of all lines
// match a catalogue rule: the steady-state mix keeps only lines no rule matches, and storm lines
// take the place of PCT % of them. Storm lines (FORMATS.md wordings): NCCL_DEBUG=INFO
// `comm 0x.. rank R nranks N ... - Init COMPLETE` for every sub-communicator (tensor, pipeline,
// data parallel groups), ProcessGroupNCCL watchdog timeouts and "Exception ... detected by watchdog"
// on every rank and process group, NET/IB completion errors (error 12, vendor err 129) and, in the
// kernel logs, repeated Xid 45 (preemptive cleanup) lines. Without --density the classic mix is
// written (about 2.8 % of lines match, mostly benign NCCL WARN / peermem lines and start-up).
//
// Launcher prefixes (--launcher): torchrun (default: none beyond PyTorch's own "[rankN]:"), srun
// (`srun --label`: every line starts with the task id right-aligned to the width of the largest,
// "  7: "), mpirun (Open MPI --tag-output: "[1,7]<stdout>:").
//
// Deterministic by seed: each file has its own PRNG seeded from (seed, file index), so the bytes do
// not depend on --jobs. Output speed is a few hundred MB/s per job (no printf on the hot path).
#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace fs = std::filesystem;

namespace {

// ------------------------------------------------------------------ random
struct Rng {
  uint64_t s;
  explicit Rng(uint64_t seed) : s(seed * 0x9E3779B97F4A7C15ull + 0x632BE59BD9B4E019ull) {}
  uint64_t next() {  // splitmix64
    uint64_t z = (s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  uint64_t below(uint64_t n) { return n == 0 ? 0 : next() % n; }
  double unit() { return static_cast<double>(next() >> 11) * (1.0 / 9007199254740992.0); }
};

// ------------------------------------------------------------------ time
constexpr int64_t kNs = 1000000000;

struct Civil {
  int y, m, d, hh, mm, ss;
};

Civil civil(int64_t unix_s) {
  int64_t days = unix_s >= 0 ? unix_s / 86400 : (unix_s - 86399) / 86400;
  int64_t sod = unix_s - days * 86400;
  days += 719468;  // H. Hinnant, civil_from_days
  int64_t era = (days >= 0 ? days : days - 146096) / 146097;
  unsigned doe = static_cast<unsigned>(days - era * 146097);
  unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  int y = static_cast<int>(yoe) + static_cast<int>(era) * 400;
  unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  unsigned mp = (5 * doy + 2) / 153;
  unsigned d = doy - (153 * mp + 2) / 5 + 1;
  unsigned m = mp < 10 ? mp + 3 : mp - 9;
  return {y + (m <= 2), static_cast<int>(m), static_cast<int>(d), static_cast<int>(sod / 3600),
          static_cast<int>(sod / 60 % 60), static_cast<int>(sod % 60)};
}

// ------------------------------------------------------------------ output buffer
class Out {
 public:
  explicit Out(const std::string& path) : path_(path) {
    f_ = std::fopen(path.c_str(), "wb");
    if (f_ == nullptr) {
      std::fprintf(stderr, "bench-gen-bundle: %s: %s\n", path.c_str(), std::strerror(errno));
      std::exit(1);
    }
    buf_.reserve(kFlush + 8192);
  }
  ~Out() {
    // The prefix written after the last newline starts no line: drop it.
    if (!prefix_.empty() && buf_.size() >= prefix_.size() &&
        std::string_view(buf_).substr(buf_.size() - prefix_.size()) == prefix_) {
      buf_.resize(buf_.size() - prefix_.size());
    }
    flush();
    std::fclose(f_);
  }
  // Every line from here on starts with `prefix` (a launcher's label); call before the first line.
  void set_line_prefix(std::string prefix) {
    prefix_ = std::move(prefix);
    buf_.append(prefix_);
  }
  uint64_t bytes() const { return written_ + buf_.size(); }

  Out& s(std::string_view v) {
    buf_.append(v);
    return *this;
  }
  Out& c(char ch) {
    buf_.push_back(ch);
    return *this;
  }
  Out& u(uint64_t v) {
    char tmp[24];
    int n = 0;
    do {
      tmp[n++] = static_cast<char>('0' + v % 10);
      v /= 10;
    } while (v != 0);
    while (n > 0) buf_.push_back(tmp[--n]);
    return *this;
  }
  // Zero- (or space-) padded to `width`.
  Out& p(uint64_t v, int width, char fill = '0') {
    char tmp[24];
    int n = 0;
    do {
      tmp[n++] = static_cast<char>('0' + v % 10);
      v /= 10;
    } while (v != 0);
    for (int i = n; i < width; ++i) buf_.push_back(fill);
    while (n > 0) buf_.push_back(tmp[--n]);
    return *this;
  }
  Out& hex(uint64_t v, int width) {
    static const char* d = "0123456789abcdef";
    for (int i = width - 1; i >= 0; --i) buf_.push_back(d[(v >> (4 * i)) & 15]);
    return *this;
  }
  // Fixed-point with `dec` decimals.
  Out& f(double v, int dec) {
    uint64_t scale = 1;
    for (int i = 0; i < dec; ++i) scale *= 10;
    uint64_t x = static_cast<uint64_t>(v * static_cast<double>(scale) + 0.5);
    u(x / scale);
    c('.');
    return p(x % scale, dec);
  }
  Out& nl() {
    buf_.push_back('\n');
    if (buf_.size() >= kFlush) flush();
    buf_.append(prefix_);
    return *this;
  }

  // Time stamps (UTC).
  Out& iso_space(int64_t t) {  // 2026-03-02 08:00:21
    Civil c = civil(t / kNs);
    p(c.y, 4).c('-').p(c.m, 2).c('-').p(c.d, 2).c(' ');
    return hms(c);
  }
  Out& hms(const Civil& c) { return p(c.hh, 2).c(':').p(c.mm, 2).c(':').p(c.ss, 2); }
  Out& pylog(int64_t t) {  // 2026-03-02 08:00:21,123
    iso_space(t).c(',');
    return p(static_cast<uint64_t>(t % kNs) / 1000000, 3);
  }
  Out& glog(int64_t t, bool c10) {  // 0302 08:00:21.123456  (c10: month unpadded + ns)
    Civil c = civil(t / kNs);
    if (c10) u(c.m); else p(c.m, 2);
    p(c.d, 2).c(' ');
    hms(c).c('.');
    p(static_cast<uint64_t>(t % kNs) / 1000, 6);
    if (c10) p(static_cast<uint64_t>(t % 1000), 3);
    return *this;
  }

  void flush() {
    if (buf_.empty()) return;
    if (std::fwrite(buf_.data(), 1, buf_.size(), f_) != buf_.size()) {
      std::fprintf(stderr, "bench-gen-bundle: %s: write failed: %s\n", path_.c_str(), std::strerror(errno));
      std::exit(1);
    }
    written_ += buf_.size();
    buf_.clear();
  }

 private:
  static constexpr size_t kFlush = 1 << 20;
  std::string path_;
  FILE* f_;
  std::string buf_;
  std::string prefix_;
  uint64_t written_ = 0;
};

// ------------------------------------------------------------------ the job
constexpr const char* kPci8[] = {"18", "2a", "3a", "5d", "9a", "ab", "ba", "db"};
constexpr const char* kPy = "/usr/local/lib/python3.10/dist-packages";

struct Job {
  uint64_t seed = 1;
  uint64_t size = 100ull << 20;
  int ranks = 16;
  int gpn = 8;
  int jobs = 2;
  std::string scenario = "xid79";
  std::string out;
  double density = -1;              // fraction of lines that match a rule; < 0: the classic mix
  std::string launcher = "torchrun";

  int nodes = 0;
  int64_t start = 0;        // ns
  int64_t fail = 0;         // ns: the failure (or the end of a clean run)
  int64_t timeout = 0;      // ns: watchdog timeouts (fail + 600 s)
  int64_t end = 0;          // ns
  int64_t boot = 0;         // ns: every node booted then
  int fail_node = 0;
  int fail_local = 0;
  uint64_t seqnum = 0;
  uint64_t rank_bytes = 0;
  uint64_t node_kernel_bytes = 0;
  std::string jobid;

  std::string node_name(int n) const {
    char b[32];
    std::snprintf(b, sizeof b, "gpu-a%04d", n + 1);
    return b;
  }
  int fail_rank() const { return fail_node * gpn + fail_local; }
  uint32_t pid_of(int rank) const { return 100000 + static_cast<uint32_t>((rank / gpn) * 7919 % 3000000) + 29 + rank % gpn; }
  uint32_t agent_pid(int node) const { return 100000 + static_cast<uint32_t>(node * 7919 % 3000000); }
  bool storm() const { return density >= 0; }
  // What a launcher puts in front of every line of a rank's output.
  std::string line_prefix(int rank) const {
    if (launcher == "srun") {  // srun --label: "%*d: ", width of the largest task id
      int width = static_cast<int>(std::to_string(ranks - 1).size());
      std::string id = std::to_string(rank);
      return std::string(static_cast<size_t>(std::max(0, width - static_cast<int>(id.size()))), ' ') + id + ": ";
    }
    if (launcher == "mpirun") return "[1," + std::to_string(rank) + "]<stdout>:";  // Open MPI --tag-output
    return "";
  }
};

// ------------------------------------------------------------------ storm lines (--density)
constexpr const char* kOps[] = {"ALLREDUCE", "_ALLGATHER_BASE", "_REDUCE_SCATTER_BASE", "BROADCAST", "ALLGATHER"};
constexpr const char* kPgNames[] = {"default_pg", "tp", "pp", "dp", "cp"};

// One line of a failure storm on `rank`, every shape one FORMATS.md shows verbatim.
void storm_line(Out& o, const Job& j, int rank, int64_t now, Rng& rng) {
  int node = rank / j.gpn, local = rank % j.gpn;
  uint32_t pid = j.pid_of(rank), tid = pid + 180 + static_cast<uint32_t>(rng.below(4));
  auto nccl_head = [&]() -> Out& { return o.s(j.node_name(node)).c(':').u(pid).c(':').u(tid).s(" [").u(local).s("] "); };
  uint64_t k = rng.below(100);
  if (k < 40) {  // NCCL_DEBUG=INFO: a (sub-)communicator comes up (tensor / pipeline / data parallel groups)
    uint64_t group = rng.below(3);
    uint64_t nranks = group == 0 ? static_cast<uint64_t>(j.gpn) : group == 1 ? 4 : std::max<uint64_t>(1, static_cast<uint64_t>(j.ranks / j.gpn));
    uint64_t comm_rank = group == 0 ? static_cast<uint64_t>(local) : static_cast<uint64_t>(rank / j.gpn) % nranks;
    nccl_head().s("NCCL INFO comm 0x").hex(0x55d0c0000000ull + rng.below(1ull << 36), 12).s(" rank ").u(comm_rank)
        .s(" nranks ").u(nranks).s(" cudaDev ").u(local).s(" nvmlDev ").u(local).s(" busId ").s(kPci8[local % 8])
        .s("000 commId 0x").hex(rng.next(), 16).s(" - Init COMPLETE").nl();
  } else if (k < 70) {  // the watchdog, once per process group
    uint64_t pg = rng.below(5);
    uint64_t seq = j.seqnum + rng.below(8);
    uint64_t numel = uint64_t{1} << (10 + rng.below(18));
    o.s("[rank").u(rank).s("]:[E").glog(now, true).s(" ProcessGroupNCCL.cpp:632] [PG ID ").u(pg).s(" PG GUID ").u(pg)
        .c('(').s(kPgNames[pg]).s(") Rank ").u(pg == 0 ? static_cast<uint64_t>(rank) : static_cast<uint64_t>(local))
        .s("] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=").u(seq).s(", OpType=").s(kOps[rng.below(5)])
        .s(", NumelIn=").u(numel).s(", NumelOut=").u(numel).s(", Timeout(ms)=600000) ran for ").u(600000 + rng.below(90))
        .s(" milliseconds before timing out.").nl();
  } else if (k < 85) {
    uint64_t pg = rng.below(5);
    uint64_t seq = j.seqnum + rng.below(8);
    o.s("[rank").u(rank).s("]:[E").glog(now, true).s(" ProcessGroupNCCL.cpp:1664] [PG ID ").u(pg).s(" PG GUID ").u(pg)
        .c('(').s(kPgNames[pg]).s(") Rank ").u(pg == 0 ? static_cast<uint64_t>(rank) : static_cast<uint64_t>(local))
        .s("] Exception (either an error or timeout) detected by watchdog at work: ").u(seq)
        .s(", last enqueued NCCL work: ").u(seq + 1).s(", last completed NCCL work: ").u(seq - 1).s(".").nl();
  } else {  // the proxy thread sees its peers go away
    int peer_node = static_cast<int>(rng.below(static_cast<uint64_t>(j.nodes)));
    nccl_head().s("transport/net_ib.cc:1295 NCCL WARN NET/IB : Got completion from peer 10.42.").u(static_cast<uint64_t>(peer_node / 200))
        .c('.').u(static_cast<uint64_t>(10 + peer_node % 200)).c('<').u(40000 + rng.below(20000))
        .s("> with error 12, opcode ").u(rng.below(2)).s(", len 0, vendor err 129 (").s(rng.below(2) ? "Recv" : "Send")
        .s(") localGid ::ffff:10.42.").u(static_cast<uint64_t>(node / 200)).c('.').u(static_cast<uint64_t>(10 + node % 200))
        .s(" remoteGids::ffff:10.42.").u(static_cast<uint64_t>(peer_node / 200)).c('.').u(static_cast<uint64_t>(10 + peer_node % 200)).nl();
  }
}

void watchdog_lines(Out& o, const Job& j, int rank, int64_t t, Rng& rng) {
  uint64_t ran = 600000 + rng.below(90);
  o.s("[rank").u(rank).s("]:[E").glog(t, true).s(" ProcessGroupNCCL.cpp:607] [Rank ").u(rank)
      .s("] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=").u(j.seqnum)
      .s(", OpType=ALLREDUCE, NumelIn=160672064, NumelOut=160672064, Timeout(ms)=600000) ran for ").u(ran)
      .s(" milliseconds before timing out.").nl();
  o.s("[rank").u(rank).s("]:[E").glog(t + 200000, true).s(" ProcessGroupNCCL.cpp:1664] [PG 0 (default_pg) Rank ")
      .u(rank).s("] Exception (either an error or timeout) detected by watchdog at work: ").u(j.seqnum)
      .s(", last enqueued NCCL work: ").u(j.seqnum).s(", last completed NCCL work: ").u(j.seqnum - 1).s(".").nl();
  o.s("[rank").u(rank).s("]:[E").glog(t + 5000000, true).s(" ProcessGroupNCCL.cpp:1515] [PG 0 (default_pg) Rank ")
      .u(rank).s("] Process group watchdog thread terminated with exception: [Rank ").u(rank)
      .s("] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=").u(j.seqnum)
      .s(", OpType=ALLREDUCE, NumelIn=160672064, NumelOut=160672064, Timeout(ms)=600000) ran for ").u(ran)
      .s(" milliseconds before timing out.").nl();
  o.s("[rank").u(rank).s("]:frame #2: c10d::ProcessGroupNCCL::watchdogHandler() + 0x233 (0x7f").hex(rng.next(), 10)
      .s(" in ").s(kPy).s("/torch/lib/libtorch_cuda.so)").nl();
  o.s("terminate called after throwing an instance of 'c10::DistBackendError'").nl();
}

void agent_lines(Out& o, const Job& j, int node, int64_t t, int dead_local, int dead_exit) {
  uint32_t apid = j.agent_pid(node);
  for (int l = 0; l < j.gpn; ++l) {
    if (l == dead_local) continue;
    o.c('W').glog(t, false).c(' ').u(apid).s(" torch/distributed/elastic/multiprocessing/api.py:897] Sending process ")
        .u(j.pid_of(node * j.gpn + l)).s(" closing signal SIGTERM").nl();
  }
  int rank = node * j.gpn + dead_local;
  o.c('E').glog(t + 2 * kNs, false).c(' ').u(apid).s(" torch/distributed/elastic/multiprocessing/api.py:869] failed (exitcode: ")
      .s(dead_exit == 1 ? "1" : "-6").s(") local_rank: ").u(dead_local).s(" (pid: ").u(j.pid_of(rank))
      .s(") of binary: /usr/bin/python3").nl();
  o.s("torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ").nl();
  o.s("============================================================").nl();
  o.s("train.py FAILED").nl();
  o.s("------------------------------------------------------------").nl();
  o.s("Root Cause (first observed failure):").nl();
  o.s("[0]:").nl();
  o.s("  time      : ").iso_space(t).nl();
  o.s("  host      : ").s(j.node_name(node)).nl();
  o.s("  rank      : ").u(rank).s(" (local_rank: ").u(dead_local).s(")").nl();
  o.s("  exitcode  : ").s(dead_exit == 1 ? "1" : "-6").s(" (pid: ").u(j.pid_of(rank)).s(")").nl();
  o.s("  error_file: <N/A>").nl();
  o.s("  traceback : To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html").nl();
  o.s("============================================================").nl();
}

// One rank's output: start-up (NCCL init), steady-state noise to the byte budget, then the cascade.
void write_rank(const Job& j, int rank) {
  char name[64];
  std::snprintf(name, sizeof name, "/logs/rank-%05d.log", rank);
  Out o(j.out + name);
  o.set_line_prefix(j.line_prefix(rank));
  Rng rng(j.seed * 1000003ull + static_cast<uint64_t>(rank));
  int node = rank / j.gpn, local = rank % j.gpn;
  std::string host = j.node_name(node);
  uint32_t pid = j.pid_of(rank), tid = pid + 180;
  uint64_t comm = 0x55d0c0000000ull + static_cast<uint64_t>(rank) * 0x1f0000;
  auto nccl = [&]() -> Out& { return o.s(host).c(':').u(pid).c(':').u(tid).s(" [").u(local).s("] NCCL "); };

  int64_t t = j.start + 2 * kNs + local * 1000000;
  if (local == 0) {
    o.c('W').glog(t, false).c(' ').u(j.agent_pid(node)).s(" torch/distributed/run.py:793] ").nl();
    o.c('W').glog(t, false).c(' ').u(j.agent_pid(node)).s(" torch/distributed/run.py:793] *****************************************").nl();
    o.c('W').glog(t, false).c(' ').u(j.agent_pid(node)).s(" torch/distributed/run.py:793] Setting OMP_NUM_THREADS environment variable for each process to be 1 in default, to avoid your system being overloaded, please further tune the variable for optimal performance in your application as needed. ").nl();
  }
  t += 19 * kNs;
  o.pylog(t).s(" - \x1b[32mINFO\x1b[0m - trainer - world_size=").u(j.ranks).s(", tp=8, pp=1, dp=").u(std::max(1, j.ranks / 8))
      .s(", micro_batch=4, global_batch=1024, seq_len=4096").nl();
  nccl().s("INFO Bootstrap : Using ib0:10.42.").u(node / 200).c('.').u(10 + node % 200).s("<0>").nl();
  nccl().s("INFO cudaDriverVersion 12040").nl();
  o.s("NCCL version 2.21.5+cuda12.4").nl();
  nccl().s("INFO NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/IB [2]mlx5_2:1/IB [3]mlx5_3:1/IB ; OOB ib0:10.42.")
      .u(node / 200).c('.').u(10 + node % 200).s("<0>").nl();
  nccl().s("INFO Using network IB").nl();
  nccl().s("INFO comm 0x").hex(comm, 12).s(" rank ").u(rank).s(" nranks ").u(j.ranks).s(" cudaDev ").u(local)
      .s(" nvmlDev ").u(local).s(" busId ").s(kPci8[local % 8]).s("000 commId 0x612b6cd52d39f5ab - Init START").nl();
  nccl().s("INFO Setting affinity for GPU ").u(local).s(" to ffffffff,00000000,ffffffff").nl();
  nccl().s("INFO comm 0x").hex(comm, 12).s(" rank ").u(rank).s(" nRanks ").u(j.ranks).s(" nNodes ").u(j.nodes)
      .s(" localRanks ").u(j.gpn).s(" localRank ").u(local).s(" MNNVL 0").nl();
  for (int ch = 0; ch < 4; ++ch) {
    int peer = (rank + 1) % j.ranks;
    nccl().s("INFO Channel ").p(ch, 2).s("/0 : ").u(rank).c('[').u(local).s("] -> ").u(peer).c('[').u(peer % j.gpn)
        .s(peer / j.gpn == node ? "] via P2P/CUMEM/read" : "] via NET/IB/0/GDRDMA").nl();
  }
  nccl().s("INFO Connected all rings").nl();
  nccl().s("INFO Connected all trees").nl();
  nccl().s("INFO comm 0x").hex(comm, 12).s(" rank ").u(rank).s(" nranks ").u(j.ranks).s(" cudaDev ").u(local)
      .s(" nvmlDev ").u(local).s(" busId ").s(kPci8[local % 8]).s("000 commId 0x612b6cd52d39f5ab - Init COMPLETE").nl();
  o.s("[rank").u(rank).s("]:[W").glog(t + kNs, true).s(" ProcessGroupNCCL.cpp:4115] [PG ID 0 PG GUID 0 Rank ").u(rank)
      .s("]  using GPU ").u(local).s(" to perform barrier as devices used by this process are currently unknown. This can potentially cause a hang if this rank to GPU mapping is incorrect. Specify device_ids in barrier() to force use of a particular device, or call init_process_group() with a device_id.").nl();

  // Steady state. Time advances with the bytes written so every rank ends near the failure.
  bool dies = j.scenario == "xid79" && rank == j.fail_rank();
  int64_t noise_end = dies ? j.fail - 3 * kNs : (j.scenario == "clean" ? j.end - 60 * kNs : j.fail);
  uint64_t budget = j.rank_bytes;
  uint64_t base_bytes = o.bytes();
  int64_t t0 = t + 2 * kNs;
  uint64_t iter = 0;
  while (o.bytes() < budget) {
    double frac = static_cast<double>(o.bytes() - base_bytes) / static_cast<double>(std::max<uint64_t>(1, budget - base_bytes));
    int64_t now = t0 + static_cast<int64_t>(frac * static_cast<double>(noise_end - t0)) + static_cast<int64_t>(rng.below(1000000));
    if (j.storm() && rng.unit() < j.density) {
      storm_line(o, j, rank, now, rng);
      continue;
    }
    // In a storm bundle the steady state keeps only lines no rule matches: the progress bars and the
    // benign peermem / NCCL WARN lines of the classic mix (k >= 86) match catalogue rules.
    uint64_t k = rng.below(j.storm() ? 86 : 100);
    if (k < 34) {  // Megatron-style iteration line (printed by every rank in this setup)
      ++iter;
      o.s(" [").iso_space(now).s("] iteration ").p(iter, 8, ' ').s("/  100000 | consumed samples: ").p(iter * 1024, 12, ' ')
          .s(" | elapsed time per iteration (ms): ").f(2000 + rng.unit() * 90, 1)
          .s(" | learning rate: 2.990E-04 | global batch size:  1024 | lm loss: ").f(2.3 + rng.unit() * 0.2, 6)
          .s("E+00 | loss scale: 1.0 | grad norm: ").f(0.7 + rng.unit() * 0.5, 3)
          .s(" | number of skipped iterations:   0 | number of nan iterations:   0 |").nl();
    } else if (k < 56) {  // NCCL INFO chatter (proxy, channels, tuner, memory)
      uint64_t v = rng.below(5);
      if (v == 0) nccl().s("INFO Channel ").p(rng.below(32), 2).s("/1 : ").u(rank).c('[').u(local).s("] -> ").u((rank + 8) % j.ranks).c('[').u(local).s("] [send] via NET/IB/").u(local % 4).s("/GDRDMA").nl();
      else if (v == 1) nccl().s("INFO NCCL_IB_GID_INDEX set by environment to 3.").nl();
      else if (v == 2) nccl().s("INFO threadThresholds 8/8/64 | ").u(j.ranks * 8).s("/8/64 | 512 | 512").nl();
      else if (v == 3) nccl().s("INFO ").u(32).s(" coll channels, 32 collnet channels, 0 nvls channels, 32 p2p channels, 32 p2p channels per peer").nl();
      else nccl().s("INFO [Proxy Service ").u(local).s("] Connected to rank ").u(rng.below(static_cast<uint64_t>(j.ranks))).s(" via NET/IB/").u(local % 4).nl();
    } else if (k < 76) {  // python logging
      uint64_t v = rng.below(4);
      o.pylog(now);
      if (v == 0) o.s(" - INFO - trainer - step ").u(iter).s(" tokens/s=").u(180000 + rng.below(20000)).s(" mfu=").f(0.38 + rng.unit() * 0.05, 3).s(" mem_alloc=").f(52 + rng.unit() * 6, 2).s("GiB").nl();
      else if (v == 1) o.s(" - INFO - data - shard ").u(rng.below(4096)).s(" opened: /datasets/pile/train-").p(rng.below(100000), 5).s(".arrow (").u(rng.below(900000) + 100000).s(" samples)").nl();
      else if (v == 2) o.s(" - \x1b[32mINFO\x1b[0m - throughput - rank ").u(rank).s(" step time ").f(2.0 + rng.unit() * 0.1, 3).s("s, dataloader wait ").f(rng.unit() * 0.02, 4).s("s").nl();
      else o.s(" - WARNING - optimizer - grad norm clipped from ").f(1.0 + rng.unit(), 3).s(" to 1.0").nl();
    } else if (k < 86) {  // c10 / glog torch warnings
      uint64_t v = rng.below(3);
      if (v == 0) o.s("[rank").u(rank).s("]:[W").glog(now, true).s(" reducer.cpp:1400] Warning: find_unused_parameters=True was specified in DDP constructor, but did not find any unused parameters in the forward pass. (function operator())").nl();
      else if (v == 1) o.s("[rank").u(rank).s("]:[I").glog(now, true).s(" ProcessGroupNCCL.cpp:2068] [PG ID 1 PG GUID 1 Rank ").u(rank).s("] ProcessGroupNCCL broadcast unique ID through store took ").f(rng.unit() * 3, 6).s(" ms").nl();
      else o.s(kPy).s("/torch/utils/checkpoint.py:295: FutureWarning: `torch.cpu.amp.autocast(args...)` is deprecated. Please use `torch.amp.autocast('cpu', args...)` instead.").nl();
    } else if (k < 96) {  // tqdm-ish progress and eval summaries
      o.s("Evaluating: ").p(rng.below(100), 2, ' ').s("%|").s("##########          ").s("| ").u(rng.below(500)).s("/500 [00:").p(rng.below(60), 2).s("<00:").p(rng.below(60), 2).s(", ").f(8 + rng.unit() * 4, 2).s("it/s]").nl();
    } else {  // rare benign NCCL WARN and kernel-ish lines that end up in app output
      uint64_t v = rng.below(3);
      if (v == 0) nccl().s("WARN NET/IB : Got async event : GID table change").nl();
      else if (v == 1) nccl().s("INFO NCCL_P2P_LEVEL set by environment to NVL").nl();
      else o.s("nvidia-peermem nv_get_p2p_free_callback:127 ERROR detected invalid context, skipping further processing").nl();
    }
  }

  // The cascade.
  if (j.scenario == "xid79") {
    if (dies) {
      int64_t tf = j.fail + 2 * kNs;
      o.s("\x1b[1;31m[rank").u(rank).s("]: Traceback (most recent call last):\x1b[0m").nl();
      o.s("[rank").u(rank).s("]:   File \"/workspace/train.py\", line 412, in <module>").nl();
      o.s("[rank").u(rank).s("]:     main(cfg)").nl();
      o.s("[rank").u(rank).s("]:   File \"/workspace/train.py\", line 241, in train_step").nl();
      o.s("[rank").u(rank).s("]:     loss.backward()").nl();
      o.s("\x1b[1;31m[rank").u(rank).s("]: RuntimeError: CUDA error: unknown error\x1b[0m").nl();
      o.s("[rank").u(rank).s("]: CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below might be incorrect.").nl();
      o.s("[rank").u(rank).s("]: For debugging consider passing CUDA_LAUNCH_BLOCKING=1").nl();
      (void)tf;
    } else {
      watchdog_lines(o, j, rank, j.timeout + static_cast<int64_t>(rng.below(50000000)), rng);
    }
    if (local == 0) {
      int64_t ta = node == j.fail_node ? j.fail + 4 * kNs : j.timeout + kNs;
      agent_lines(o, j, node, ta, node == j.fail_node ? j.fail_local : 0, node == j.fail_node ? 1 : 6);
    }
  } else if (j.scenario == "all-timeout") {
    watchdog_lines(o, j, rank, j.timeout + static_cast<int64_t>(rng.below(50000000)), rng);
    if (local == 0) agent_lines(o, j, node, j.timeout + kNs, 0, 6);
  } else {
    o.pylog(j.end - 30 * kNs).s(" - INFO - trainer - training finished: 100000 iterations").nl();
  }
}

void write_kernel(const Job& j, int node) {
  std::string host = j.node_name(node);
  Out o(j.out + "/kernel/dmesg-" + host + ".txt");
  Rng rng(j.seed * 1000003ull + 0x5eed0000ull + static_cast<uint64_t>(node));
  auto stamp = [&](int64_t t) -> Out& {
    int64_t d = (t - j.boot) / 1000;  // µs since boot
    return o.c('[').p(static_cast<uint64_t>(d / 1000000), 5, ' ').c('.').p(static_cast<uint64_t>(d % 1000000), 6).s("] ");
  };
  int64_t tb = j.boot + 14200 * 1000000ll;
  stamp(tb).s("nvidia: module license 'NVIDIA' taints kernel.").nl();
  stamp(tb + 10000000).s("nvidia-nvlink: Nvlink Core is being initialized, major device number 510").nl();
  for (int g = 0; g < j.gpn; ++g) stamp(tb + 20000000 + g * 400000000ll).s("nvidia 0000:").s(kPci8[g % 8]).s(":00.0: enabling device (0000 -> 0002)").nl();
  stamp(tb + 3500000000ll).s("NVRM: loading NVIDIA UNIX x86_64 Kernel Module  550.90.07  Fri Jun 14 17:49:26 UTC 2024").nl();
  stamp(tb + 3600000000ll).s("nvidia-uvm: Loaded the UVM driver, major device number 508.").nl();
  bool culprit = j.scenario == "xid79" && node == j.fail_node;
  int64_t t0 = j.start - 3600 * kNs, t1 = culprit ? j.fail - kNs : j.end;
  uint64_t base = o.bytes();
  while (o.bytes() < j.node_kernel_bytes) {
    double frac = static_cast<double>(o.bytes() - base) / static_cast<double>(std::max<uint64_t>(1, j.node_kernel_bytes - base));
    int64_t now = t0 + static_cast<int64_t>(frac * static_cast<double>(t1 - t0));
    if (j.storm() && rng.unit() < j.density) {  // Xid 45 (preemptive cleanup) on the node's GPUs, over and over
      uint64_t g = rng.below(static_cast<uint64_t>(j.gpn));
      stamp(now).s("NVRM: Xid (PCI:0000:").s(kPci8[g % 8]).s(":00): 45, pid=").u(j.pid_of(node * j.gpn + static_cast<int>(g)))
          .s(", name=python3, Ch ").hex(1 + rng.below(16), 8).nl();
      continue;
    }
    // A storm bundle's noise is only lines no rule matches (the peermem ERROR and the workqueue
    // lines match catalogue rules).
    static constexpr int kQuiet[] = {1, 2, 4, 5, 6, 7, 8};
    switch (j.storm() ? kQuiet[rng.below(7)] : static_cast<int>(rng.below(9))) {
      case 0: stamp(now).s("nvidia-peermem nv_get_p2p_free_callback:127 ERROR detected invalid context, skipping further processing").nl(); break;
      case 1: stamp(now).s("perf: interrupt took too long (2510 > 2500), lowering kernel.perf_event_max_sample_rate to 79500").nl(); break;
      case 2: stamp(now).s("TCP: request_sock_TCP: Possible SYN flooding on port 29500. Sending cookies.  Check SNMP counters.").nl(); break;
      case 3: stamp(now).s("workqueue: ib_cache_event_task [ib_core] hogged CPU for >10000us 4 times, consider switching to WQ_UNBOUND").nl(); break;
      case 4: stamp(now).s("kauditd_printk_skb: ").u(100 + rng.below(9900)).s(" callbacks suppressed").nl(); break;
      case 5: stamp(now).s("hrtimer: interrupt took 1").u(100 + rng.below(9900)).s(" ns").nl(); break;
      case 6: stamp(now).s("docker0: port 1(veth").u(100 + rng.below(9900)).s("a) entered forwarding state").nl(); break;
      case 7: stamp(now).s("IPv6: ADDRCONF(NETDEV_CHANGE): veth").u(100 + rng.below(9900)).s("b: link becomes ready").nl(); break;
      default: stamp(now).s("mlx5_core 0000:").hex(0x0c + rng.below(4), 2).s(":00.0: mlx5_pcie_event:301:(pid ").u(100 + rng.below(9000)).s("): PCIe slot advertised sufficient power (27W).").nl(); break;
    }
  }
  if (culprit) {
    const char* pci = kPci8[j.fail_local % 8];
    stamp(j.fail).s("NVRM: GPU at PCI:0000:").s(pci).s(":00: GPU-26fba6b2-9e52-006e-68db-4ce18382a5").hex(static_cast<uint64_t>(node), 2).nl();
    stamp(j.fail + 20000).s("NVRM: GPU Board Serial Number: 165002305").p(static_cast<uint64_t>(node), 4).nl();
    stamp(j.fail + 40000).s("NVRM: Xid (PCI:0000:").s(pci).s(":00): 79, pid=0, GPU has fallen off the bus.").nl();
    stamp(j.fail + 60000).s("NVRM: GPU 0000:").s(pci).s(":00.0: GPU has fallen off the bus.").nl();
    stamp(j.fail + 80000).s("NVRM: A GPU crash dump has been created. If possible, please run").nl();
    stamp(j.fail + 90000).s("NVRM: nvidia-bug-report.sh as root to collect this data before").nl();
  }
}

uint64_t parse_size(const char* s) {
  char* end = nullptr;
  double v = std::strtod(s, &end);
  std::string unit = end;
  uint64_t mul = 1;
  if (unit == "K" || unit == "k") mul = 1ull << 10;
  else if (unit == "M" || unit == "m") mul = 1ull << 20;
  else if (unit == "G" || unit == "g") mul = 1ull << 30;
  else if (!unit.empty()) {
    std::fprintf(stderr, "bench-gen-bundle: bad size '%s' (use e.g. 100M, 10G)\n", s);
    std::exit(2);
  }
  return static_cast<uint64_t>(v * static_cast<double>(mul));
}

std::string iso(int64_t t) {
  Civil c = civil(t / kNs);
  char b[32];
  std::snprintf(b, sizeof b, "%04d-%02d-%02dT%02d:%02d:%02dZ", c.y, c.m, c.d, c.hh, c.mm, c.ss);
  return b;
}
std::string slurm_ts(int64_t t) {
  std::string s = iso(t);
  s.pop_back();
  return s;
}

void usage() {
  std::fprintf(stderr,
               "usage: bench-gen-bundle --out DIR [--size 100M|1G|10G] [--ranks 16..16384] [--gpn 8]\n"
               "                        [--seed N] [--scenario xid79|all-timeout|clean] [--jobs N]\n"
               "                        [--density PCT] [--launcher torchrun|srun|mpirun]\n");
  std::exit(2);
}

}  // namespace

int main(int argc, char** argv) {
  Job j;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto val = [&]() -> const char* {
      if (i + 1 >= argc) usage();
      return argv[++i];
    };
    if (a == "--out") j.out = val();
    else if (a == "--size") j.size = parse_size(val());
    else if (a == "--ranks") j.ranks = std::atoi(val());
    else if (a == "--gpn") j.gpn = std::atoi(val());
    else if (a == "--seed") j.seed = std::strtoull(val(), nullptr, 10);
    else if (a == "--scenario") j.scenario = val();
    else if (a == "--jobs") j.jobs = std::atoi(val());
    else if (a == "--density") j.density = std::strtod(val(), nullptr) / 100.0;
    else if (a == "--launcher") j.launcher = val();
    else usage();
  }
  if (j.out.empty() || j.ranks < 1 || j.gpn < 1 || j.jobs < 1 ||
      (j.scenario != "xid79" && j.scenario != "all-timeout" && j.scenario != "clean") ||
      (j.storm() && j.density > 1.0) ||
      (j.launcher != "torchrun" && j.launcher != "srun" && j.launcher != "mpirun")) usage();
  j.gpn = std::min(j.gpn, j.ranks);
  j.nodes = (j.ranks + j.gpn - 1) / j.gpn;
  Rng rng(j.seed);
  j.start = 1772438400ll * kNs + static_cast<int64_t>(rng.below(86400)) * kNs;  // 2026-03-02 + [0, 1 day)
  j.fail = j.start + (6 * 3600 + static_cast<int64_t>(rng.below(3600))) * kNs;
  j.timeout = j.fail + 600 * kNs;
  j.end = j.timeout + 20 * kNs;
  j.boot = j.start - (7 * 86400 + static_cast<int64_t>(rng.below(86400))) * kNs;
  j.fail_node = static_cast<int>(rng.below(static_cast<uint64_t>(j.nodes)));
  j.fail_local = static_cast<int>(rng.below(static_cast<uint64_t>(std::min(j.gpn, j.ranks - j.fail_node * j.gpn))));
  j.seqnum = 9000 + rng.below(50000);
  j.jobid = std::to_string(700000 + rng.below(99999));
  j.rank_bytes = j.size * 97 / 100 / static_cast<uint64_t>(j.ranks);
  j.node_kernel_bytes = j.size * 3 / 100 / static_cast<uint64_t>(j.nodes);

  std::error_code ec;
  fs::create_directories(j.out + "/logs", ec);
  fs::create_directories(j.out + "/kernel", ec);
  if (ec) {
    std::fprintf(stderr, "bench-gen-bundle: %s: %s\n", j.out.c_str(), ec.message().c_str());
    return 1;
  }

  {  // workload.yaml
    Out y(j.out + "/workload.yaml");
    bool failed = j.scenario != "clean";
    y.s("# Generated by bench-gen-bundle --size ").u(j.size).s(" --ranks ").u(j.ranks).s(" --gpn ").u(j.gpn)
        .s(" --seed ").u(j.seed).s(" --scenario ").s(j.scenario).nl();
    y.s("workload:").nl();
    y.s("  id: \"").s(j.jobid).s("\"").nl();
    y.s("  scheduler: slurm").nl();
    y.s("  cluster: bench").nl();
    y.s("  step: \"").s(j.jobid).s(".0\"").nl();
    y.s("  name: pretrain-bench").nl();
    y.s("  user: bench").nl();
    y.s("  queue: gpu").nl();
    y.s("  state: ").s(failed ? "FAILED" : "COMPLETED").nl();
    y.s("  exit_code: \"").s(failed ? "1:0" : "0:0").s("\"").nl();
    y.s("  reason: ").s(failed ? "NonZeroExitCode" : "None").nl();
    y.s("  start: ").s(iso(j.start)).nl();
    y.s("  end: ").s(iso(j.end)).nl();
    y.s("  nodes: [");
    for (int n = 0; n < j.nodes; ++n) y.s(n ? ", " : "").s(j.node_name(n));
    y.s("]").nl();
    y.s("  ranks: {");
    for (int r = 0; r < j.ranks; ++r) y.s(r ? ", " : "").u(r).s(": ").s(j.node_name(r / j.gpn));
    y.s("}").nl();
    y.s("sources:").nl();
    y.s("  - path: logs/rank-*.log").nl();
    y.s("    kind: applog").nl();
    y.s("  - path: kernel/dmesg-*.txt").nl();
    y.s("    kind: syslog").nl();
    y.s("    boot_time: ").s(iso(j.boot - (j.boot % kNs))).nl();
    y.s("  - path: sacct.txt").nl();
    y.s("    kind: scheduler").nl();
  }
  {  // sacct.txt
    Out s(j.out + "/sacct.txt");
    std::string st = j.scenario == "clean" ? "COMPLETED" : "FAILED";
    std::string ex = j.scenario == "clean" ? "0:0" : "1:0";
    std::string nl = j.nodes == 1 ? j.node_name(0) : "gpu-a[0001-" + j.node_name(j.nodes - 1).substr(5) + "]";
    s.s("JobID|JobName|Partition|Account|AllocCPUS|State|ExitCode|Start|End|Elapsed|NodeList").nl();
    s.s(j.jobid).s("|pretrain-bench|gpu|llm|").u(j.nodes * 96).c('|').s(st).c('|').s(ex).c('|').s(slurm_ts(j.start)).c('|').s(slurm_ts(j.end)).s("|06:00:00|").s(nl).nl();
    s.s(j.jobid).s(".0|torchrun||llm|").u(j.nodes * 96).c('|').s(st).c('|').s(ex).c('|').s(slurm_ts(j.start)).c('|').s(slurm_ts(j.end)).s("|06:00:00|").s(nl).nl();
  }
  {  // expected.txt (not part of SPEC §7; for run.sh)
    Out e(j.out + "/expected.txt");
    e.s("scenario=").s(j.scenario).nl();
    e.s("ranks=").u(j.ranks).nl();
    e.s("nodes=").u(j.nodes).nl();
    if (j.storm()) e.s("density_pct=").f(j.density * 100, 2).nl();
    e.s("launcher=").s(j.launcher).nl();
    if (j.scenario == "xid79") e.s("root_node=").s(j.node_name(j.fail_node)).nl().s("root_rank=").u(j.fail_rank()).nl();
  }

  // Rank files and kernel logs, in parallel; each file is independent.
  int total = j.ranks + j.nodes;
  std::atomic<int> next{0};
  auto worker = [&] {
    for (int i = next++; i < total; i = next++) {
      if (i < j.ranks) write_rank(j, i);
      else write_kernel(j, i - j.ranks);
    }
  };
  std::vector<std::thread> pool;
  for (int t = 1; t < j.jobs; ++t) pool.emplace_back(worker);
  worker();
  for (auto& th : pool) th.join();
  return 0;
}
