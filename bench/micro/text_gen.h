// In-memory text for the micro-benchmarks: the same line shapes as bench/gen/gen_bundle.cc
// (FORMATS.md), deterministic by seed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace attribution::bench {

// Training-job output with no failure line: Megatron iterations, NCCL INFO, python logging, c10
// warnings, progress bars (what a rank prints for hours).
std::string app_noise(size_t bytes, uint64_t seed = 1);
// dmesg (seconds since boot) kernel noise.
std::string kernel_noise(size_t bytes, uint64_t seed = 1);

// Every line a candidate that the catalogue confirms, by time-stamp shape:
enum class Stamp {
  kC10,      // [rank3]:[E302 08:10:00.123456789 ProcessGroupNCCL.cpp:607] ... Watchdog caught ...
  kDmesg,    // [614410.156543] NVRM: Xid (PCI:0000:18:00): 79, pid=0, GPU has fallen off the bus.
  kIso,      // 2026-03-02T08:10:00.123456+00:00 gpu-a0001 kernel: NVRM: Xid (...): 79, ...
  kSyslog,   // Mar  2 08:10:00 gpu-a0001 kernel: NVRM: Xid (...): 79, ...
  kNone,     // [rank3]: RuntimeError: CUDA error: unknown error  (time from look-back)
};
std::string candidates(size_t lines, Stamp stamp, uint64_t seed = 1);

// Noise with one candidate line every `every` lines (a realistic 0.01 %–1 % mix).
std::string mixed(size_t bytes, size_t every, uint64_t seed = 1);

}  // namespace attribution::bench
