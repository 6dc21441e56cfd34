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

// The bytes a reader holds: grows without zero-filling and keeps its capacity, so a worker that
// reads many files (or byte ranges) in turn reuses one allocation instead of faulting in and
// clearing fresh pages for every file. Not thread-safe; one per worker.
class ReadBuffer {
 public:
  char* data() { return bytes_.get(); }
  const char* data() const { return bytes_.get(); }
  size_t size() const { return size_; }
  void clear() { size_ = 0; }
  // New bytes past the old size are uninitialised: the caller writes them.
  void resize(size_t n) {
    if (n > capacity_) grow(n);
    size_ = n;
  }
  // Drops the first n bytes (n <= size()).
  void erase_front(size_t n);

 private:
  void grow(size_t n);
  std::unique_ptr<char[]> bytes_;
  size_t size_ = 0;
  size_t capacity_ = 0;
};

class ChunkReader {
 public:
  // Reads [begin, end) of the file (end = 0: to the end). For begin > 0 the reader skips to the
  // line that starts at or after `begin` and reads through the line that contains end-1, so byte
  // ranges that tile a file give every line to exactly one range. gzip files are read whole
  // (begin must be 0). Errors carry the path. `buffer`, when given, must outlive the reader and
  // not be shared with another live reader; without it the reader owns one.
  static std::unique_ptr<ChunkReader> open(const std::string& path, uint64_t begin, uint64_t end,
                                           size_t chunk_bytes, std::string& error,
                                           ReadBuffer* buffer = nullptr);
  virtual ~ChunkReader() = default;
  // Next chunk; false at the end or on error (then error() is set).
  virtual bool next(Chunk& chunk) = 0;
  virtual const std::string& error() const = 0;
  virtual uint64_t bytes_read() const = 0;
};

bool is_gzip_file(const std::string& path);
uint64_t file_size(const std::string& path);

}  // namespace attribution::blueprint
