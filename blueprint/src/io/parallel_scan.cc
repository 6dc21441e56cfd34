#include "io/parallel_scan.h"

#include <atomic>
#include <memory>
#include <mutex>
#include <thread>

#include "io/file_reader.h"

namespace attribution::blueprint {
namespace {

struct Unit {
  size_t input;
  uint64_t begin, end;
  std::unique_ptr<Extraction> extraction;  // made when the unit's scan starts, freed once merged
  uint64_t lines = 0;
  uint64_t bytes = 0;
  std::string error;
};

}  // namespace

std::vector<ScanFileResult> scan_files(const std::shared_ptr<const RuleSet>& rules,
                                       const std::function<Extraction()>& make_extraction,
                                       const std::vector<ScanInput>& inputs, const ScanOptions& options,
                                       Extraction& out) {
  unsigned threads = options.threads != 0 ? options.threads : std::max(1u, std::thread::hardware_concurrency());
  // Byte ranges only share a file between threads: one thread reads every file whole, without the
  // stat per file that planning ranges takes (16,384 rank files: 4 % of a one-thread run).
  const bool split = threads > 1;
  std::vector<Unit> units;
  units.reserve(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    const std::string& path = *inputs[i].path;
    uint64_t size = split ? file_size(path) : 0;
    if (size <= options.range_bytes || is_gzip_file(path)) {
      units.push_back({i, 0, 0, nullptr});
      continue;
    }
    for (uint64_t b = 0; b < size; b += options.range_bytes) {
      units.push_back({i, b, std::min(size, b + options.range_bytes), nullptr});
    }
  }
  threads = std::min<unsigned>(threads, std::max<size_t>(1, units.size()));
  std::vector<ScanFileResult> results(inputs.size());
  // Finished units are merged into `out` in unit order (the order, and so the bytes, do not depend
  // on the thread count) as soon as every earlier unit is finished, and freed: memory holds the
  // aggregate plus the units finished out of order, not one extraction per file.
  std::mutex merge_mutex;
  std::vector<char> done(units.size(), 0);
  size_t next_merge = 0;
  bool merging = false;
  auto finish = [&](size_t u) {
    {
      std::lock_guard lock(merge_mutex);
      done[u] = 1;
      if (merging) return;  // the thread merging now will take it
      merging = true;
    }
    for (;;) {
      size_t k;
      {
        std::lock_guard lock(merge_mutex);
        if (next_merge == units.size() || !done[next_merge]) {
          merging = false;
          return;
        }
        k = next_merge++;
      }
      Unit& unit = units[k];
      ScanFileResult& r = results[unit.input];
      unit.extraction->offset_lines(r.lines);
      r.lines += unit.lines;
      r.bytes += unit.bytes;
      if (!unit.error.empty() && r.error.empty()) r.error = unit.error;
      out.merge(std::move(*unit.extraction));
      unit.extraction.reset();
    }
  };
  std::atomic<size_t> next{0};
  auto worker = [&] {
    Scanner scanner(rules);
    ReadBuffer buffer;  // one allocation per worker, reused for every file and range
    for (size_t u = next++; u < units.size(); u = next++) {
      Unit& unit = units[u];
      const ScanInput& in = inputs[unit.input];
      unit.extraction = std::make_unique<Extraction>(make_extraction());
      std::string error;
      auto reader = ChunkReader::open(*in.path, unit.begin, unit.end, options.chunk_bytes, error, &buffer);
      if (!reader) {
        unit.error = error;
        finish(u);
        continue;
      }
      Chunk chunk;
      while (reader->next(chunk)) {
        unit.lines += scanner.scan(*in.source, chunk.buffer, chunk.scan_from, unit.lines + 1, *unit.extraction);
      }
      unit.error = reader->error();
      unit.bytes = reader->bytes_read();
      reader.reset();
      finish(u);
    }
  };
  if (threads <= 1) {
    worker();
  } else {
    std::vector<std::jthread> pool;
    for (unsigned t = 0; t < threads; ++t) pool.emplace_back(worker);
  }
  return results;
}

}  // namespace attribution::blueprint
