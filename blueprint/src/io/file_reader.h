// Streams a file (plain or gzip) in bounded chunks that end on line boundaries, with the tail of
// the previous chunk kept as look-back context. Never loads a whole file.
//
// Thread-safety: one reader per thread.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

namespace attribution::blueprint {

struct Chunk {
  std::string_view buffer;  // look-back context + new lines
  size_t scan_from = 0;     // where the new lines start
};

class ChunkReader {
 public:
  // Reads [begin, end) of the file (end = 0: to the end). For begin > 0 the reader skips to the
  // line that starts at or after `begin` and reads through the line that contains end-1, so byte
  // ranges that tile a file give every line to exactly one range. gzip files are read whole
  // (begin must be 0). Errors carry the path.
  static std::unique_ptr<ChunkReader> open(const std::string& path, uint64_t begin, uint64_t end,
                                           size_t chunk_bytes, std::string& error);
  virtual ~ChunkReader() = default;
  // Next chunk; false at the end or on error (then error() is set).
  virtual bool next(Chunk& chunk) = 0;
  virtual const std::string& error() const = 0;
  virtual uint64_t bytes_read() const = 0;
};

bool is_gzip_file(const std::string& path);
uint64_t file_size(const std::string& path);

}  // namespace attribution::blueprint
