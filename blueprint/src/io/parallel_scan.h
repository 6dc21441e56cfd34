// Scans many log files on all cores: files are split into byte ranges, each range is streamed in
// bounded chunks by a worker with its own Scanner, and the per-range symptom aggregates are merged
// in file/range order after line numbers are fixed up, so the result does not depend on the
// thread count or chunk size.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "attribution/engine.h"

namespace attribution::blueprint {

// One file to scan. Points at the caller's path and source (a bundle's file list), which must outlive
// scan_files: a 16,384-rank bundle would otherwise hold every path and source twice.
struct ScanInput {
  const std::string* path;
  const TextSource* source;
};

// Per input, in input order.
struct ScanFileResult {
  std::string error;  // empty when the file was read completely
  uint64_t bytes = 0;
  uint64_t lines = 0;
};

struct ScanOptions {
  unsigned threads = 0;                   // 0 = all cores
  size_t chunk_bytes = 2u << 20;          // per scan: small enough to stay in cache after the read
  uint64_t range_bytes = 128ull << 20;    // unit of parallel work within a file
};

// Scans `inputs` with `rules`; every range's Extraction is created by `make_extraction` (it carries
// the session's time window; called from the worker threads, when the range's scan starts) and
// merged into `out`.
std::vector<ScanFileResult> scan_files(const std::shared_ptr<const RuleSet>& rules,
                                       const std::function<Extraction()>& make_extraction,
                                       const std::vector<ScanInput>& inputs, const ScanOptions& options,
                                       Extraction& out);

}  // namespace attribution::blueprint
