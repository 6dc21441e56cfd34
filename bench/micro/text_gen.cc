#include "text_gen.h"

#include <fmt/format.h>

namespace attribution::bench {
namespace {

struct Rng {
  uint64_t s;
  explicit Rng(uint64_t seed) : s(seed * 0x9E3779B97F4A7C15ull + 1) {}
  uint64_t next() {
    uint64_t z = (s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  uint64_t below(uint64_t n) { return next() % n; }
};

void app_line(std::string& out, Rng& r, uint64_t i) {
  unsigned rank = static_cast<unsigned>(r.below(64)), local = rank % 8;
  unsigned sec = static_cast<unsigned>(i / 50 % 86400);
  unsigned hh = 8 + sec / 3600 % 14, mm = sec / 60 % 60, ss = sec % 60;
  switch (r.below(10)) {
    case 0: case 1: case 2:
      fmt::format_to(std::back_inserter(out),
                     " [2026-03-02 {:02}:{:02}:{:02}] iteration {:>8}/  100000 | consumed samples: {:>12} | elapsed time per iteration (ms): {}.{} | learning rate: 2.990E-04 | global batch size:  1024 | lm loss: 2.{:06}E+00 | loss scale: 1.0 | grad norm: 0.{:03} | number of skipped iterations:   0 | number of nan iterations:   0 |\n",
                     hh, mm, ss, i, i * 1024, 2000 + r.below(90), r.below(10), r.below(1000000), r.below(1000));
      break;
    case 3: case 4:
      fmt::format_to(std::back_inserter(out), "gpu-a{:04}:{}:{} [{}] NCCL INFO Channel {:02}/1 : {}[{}] -> {}[{}] [send] via NET/IB/{}/GDRDMA\n",
                     rank / 8 + 1, 100029 + rank, 100209 + rank, local, r.below(32), rank, local, (rank + 8) % 64, local, local % 4);
      break;
    case 5:
      fmt::format_to(std::back_inserter(out), "gpu-a{:04}:{}:{} [{}] NCCL INFO [Proxy Service {}] Connected to rank {} via NET/IB/{}\n",
                     rank / 8 + 1, 100029 + rank, 100209 + rank, local, local, r.below(64), local % 4);
      break;
    case 6:
      fmt::format_to(std::back_inserter(out), "2026-03-02 {:02}:{:02}:{:02},{:03} - INFO - trainer - step {} tokens/s={} mfu=0.{:03} mem_alloc=5{}.{:02}GiB\n",
                     hh, mm, ss, r.below(1000), i, 180000 + r.below(20000), 380 + r.below(50), r.below(8), r.below(100));
      break;
    case 7:
      fmt::format_to(std::back_inserter(out), "2026-03-02 {:02}:{:02}:{:02},{:03} - \x1b[32mINFO\x1b[0m - throughput - rank {} step time 2.{:03}s, dataloader wait 0.{:04}s\n",
                     hh, mm, ss, r.below(1000), rank, r.below(100), r.below(200));
      break;
    case 8:
      fmt::format_to(std::back_inserter(out), "[rank{}]:[W302 {:02}:{:02}:{:02}.{:06}{:03} reducer.cpp:1400] Warning: find_unused_parameters=True was specified in DDP constructor, but did not find any unused parameters in the forward pass. (function operator())\n",
                     rank, hh, mm, ss, r.below(1000000), r.below(1000));
      break;
    default:
      fmt::format_to(std::back_inserter(out), "Evaluating: {:>2}%|##########          | {}/500 [00:{:02}<00:{:02}, {}.{:02}it/s]\n",
                     r.below(100), r.below(500), r.below(60), r.below(60), 8 + r.below(4), r.below(100));
  }
}

void candidate_line(std::string& out, Rng& r, uint64_t i, Stamp stamp) {
  unsigned rank = static_cast<unsigned>(r.below(16384)), node = rank / 8 + 1;
  unsigned sec = static_cast<unsigned>(i % 86400);
  unsigned hh = sec / 3600 % 24, mm = sec / 60 % 60, ss = sec % 60;
  static const char* pci[] = {"18", "2a", "3a", "5d", "9a", "ab", "ba", "db"};
  switch (stamp) {
    case Stamp::kC10:
      fmt::format_to(std::back_inserter(out),
                     "[rank{}]:[E302 {:02}:{:02}:{:02}.{:09} ProcessGroupNCCL.cpp:607] [Rank {}] Watchdog caught collective operation timeout: WorkNCCL(SeqNum={}, OpType=ALLREDUCE, NumelIn=160672064, NumelOut=160672064, Timeout(ms)=600000) ran for {} milliseconds before timing out.\n",
                     rank, hh, mm, ss, r.below(1000000000), rank, 9000 + r.below(100), 600000 + r.below(100));
      break;
    case Stamp::kDmesg:
      fmt::format_to(std::back_inserter(out), "[{:>6}.{:06}] NVRM: Xid (PCI:0000:{}:00): 79, pid=0, GPU has fallen off the bus.\n",
                     600000 + i, r.below(1000000), pci[r.below(8)]);
      break;
    case Stamp::kIso:
      fmt::format_to(std::back_inserter(out), "2026-03-02T{:02}:{:02}:{:02}.{:06}+00:00 gpu-a{:04} kernel: NVRM: Xid (PCI:0000:{}:00): 79, pid=0, GPU has fallen off the bus.\n",
                     hh, mm, ss, r.below(1000000), node, pci[r.below(8)]);
      break;
    case Stamp::kSyslog:
      fmt::format_to(std::back_inserter(out), "Mar  2 {:02}:{:02}:{:02} gpu-a{:04} kernel: NVRM: Xid (PCI:0000:{}:00): 79, pid=0, GPU has fallen off the bus.\n",
                     hh, mm, ss, node, pci[r.below(8)]);
      break;
    case Stamp::kNone:
      fmt::format_to(std::back_inserter(out), "[rank{}]: RuntimeError: CUDA error: unknown error\n", rank);
      break;
  }
}

}  // namespace

std::string app_noise(size_t bytes, uint64_t seed) {
  std::string out;
  out.reserve(bytes + 512);
  Rng r(seed);
  for (uint64_t i = 0; out.size() < bytes; ++i) app_line(out, r, i);
  return out;
}

std::string kernel_noise(size_t bytes, uint64_t seed) {
  static const char* msgs[] = {
      "nvidia-peermem nv_get_p2p_free_callback:127 ERROR detected invalid context, skipping further processing",
      "perf: interrupt took too long (2510 > 2500), lowering kernel.perf_event_max_sample_rate to 79500",
      "TCP: request_sock_TCP: Possible SYN flooding on port 29500. Sending cookies.  Check SNMP counters.",
      "workqueue: ib_cache_event_task [ib_core] hogged CPU for >10000us 4 times, consider switching to WQ_UNBOUND",
      "kauditd_printk_skb: 7986 callbacks suppressed",
      "hrtimer: interrupt took 18385 ns",
      "docker0: port 1(veth4269a) entered forwarding state",
      "IPv6: ADDRCONF(NETDEV_CHANGE): veth8122b: link becomes ready",
  };
  std::string out;
  out.reserve(bytes + 512);
  Rng r(seed);
  for (uint64_t i = 0; out.size() < bytes; ++i) {
    fmt::format_to(std::back_inserter(out), "[{:>6}.{:06}] {}\n", 600000 + i / 10, r.below(1000000), msgs[r.below(8)]);
  }
  return out;
}

std::string candidates(size_t lines, Stamp stamp, uint64_t seed) {
  std::string out;
  Rng r(seed);
  for (uint64_t i = 0; i < lines; ++i) candidate_line(out, r, i, stamp);
  return out;
}

std::string mixed(size_t bytes, size_t every, uint64_t seed) {
  std::string out;
  out.reserve(bytes + 512);
  Rng r(seed);
  for (uint64_t i = 0; out.size() < bytes; ++i) {
    if (every != 0 && i % every == every - 1) candidate_line(out, r, i, Stamp::kC10);
    else app_line(out, r, i);
  }
  return out;
}

}  // namespace attribution::bench
