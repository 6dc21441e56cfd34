#include "io/file_reader.h"

#include "attribution/engine.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

namespace attribution::blueprint {
namespace {

// The engine gives unstamped lines the time of a stamped line up to kTimeLookBackBytes before
// them; every chunk carries that much preceding text, also a byte range's first chunk (read from
// before the range), so times do not depend on chunk or range boundaries.
constexpr size_t kLookBackBytes = kTimeLookBackBytes;
// The most one read system call asks for.
constexpr size_t kMaxReadBytes = size_t{1} << 20;

// Where the look-back kept from a consumed buffer starts: the first line that begins within the
// last kLookBackBytes before `consumed`.
size_t look_back_start(const ReadBuffer& buf, size_t consumed) {
  size_t start = consumed > kLookBackBytes ? consumed - kLookBackBytes : 0;
  if (start > 0) {
    const void* nl = memchr(buf.data() + start, '\n', consumed - start);
    start = nl == nullptr ? consumed : static_cast<const char*>(nl) - buf.data() + 1;
  }
  return start;
}

class Source {
 public:
  virtual ~Source() = default;
  virtual ssize_t read(char* dst, size_t n) = 0;  // -1 on error
  // True once a read has reached the end: the next read would return 0.
  virtual bool at_end() const { return false; }
  std::string error;
};

class PlainSource : public Source {
 public:
  // `size`: the file's size when it was opened. A short read at or past it is the end of the file,
  // so a small file takes one read, not a second one that returns 0. A size of 0 (procfs and the
  // like, whose reads are short by design) is read until a read returns 0.
  PlainSource(int fd, uint64_t pos, uint64_t size) : fd_(fd), pos_(pos), size_(size) {}
  ~PlainSource() override {
    if (fd_ >= 0) ::close(fd_);
  }
  int release() { return std::exchange(fd_, -1); }
  ssize_t read(char* dst, size_t n) override {
    if (at_end_) return 0;
    ssize_t r = ::pread(fd_, dst, n, static_cast<off_t>(pos_));
    if (r < 0) {
      error = std::strerror(errno);
      return -1;
    }
    pos_ += static_cast<uint64_t>(r);
    if (size_ > 0 && static_cast<size_t>(r) < n && pos_ >= size_) at_end_ = true;
    return r;
  }
  bool at_end() const override { return at_end_; }

 private:
  int fd_;
  uint64_t pos_;
  uint64_t size_;
  bool at_end_ = false;
};

class GzipSource : public Source {
 public:
  explicit GzipSource(gzFile f) : f_(f) {}
  ~GzipSource() override { gzclose(f_); }
  ssize_t read(char* dst, size_t n) override {
    int r = gzread(f_, dst, static_cast<unsigned>(std::min<size_t>(n, 1 << 30)));
    int code = Z_OK;
    const char* msg = gzerror(f_, &code);
    // A truncated or corrupt stream ends with an error code rather than a clean end of file.
    if (r < 0 || (r == 0 && code != Z_OK && code != Z_STREAM_END)) {
      error = fmt::format("gzip: {}", msg != nullptr ? msg : "corrupt stream");
      return -1;
    }
    return r;
  }

 private:
  gzFile f_;
};

class ReaderImpl : public ChunkReader {
 public:
  // The source is positioned at `start` (absolute). Lines whose first byte is in [begin, end) are
  // returned; the whole lines between start and begin are their look-back context. skip_first:
  // start is inside a line (start = context start - 1), which is dropped.
  // `own` is the buffer when the caller gave none. `prefilled`: the buffer already holds the source's
  // first bytes, read from `start` (the source is positioned after them).
  ReaderImpl(std::string path, std::unique_ptr<Source> src, uint64_t start, bool skip_first, uint64_t begin,
             uint64_t end, size_t chunk, ReadBuffer* buffer, std::unique_ptr<ReadBuffer> own = nullptr,
             bool prefilled = false)
      : path_(std::move(path)), src_(std::move(src)), base_(start), read_pos_(start),
        skip_first_(skip_first), begin_(begin), end_(end), chunk_(chunk), own_(std::move(own)) {
    if (buffer == nullptr) {
      if (own_ == nullptr) own_ = std::make_unique<ReadBuffer>();
      buffer = own_.get();
    }
    buf_ = buffer;
    if (prefilled) {
      read_pos_ += buf_->size();
      if (buf_->size() == 0 || src_->at_end()) src_eof_ = true;
    } else {
      buf_->clear();
    }
  }

  bool next(Chunk& out) override {
    if (done_) return false;
    ReadBuffer& buf = *buf_;
    if (scanned_to_ > 0) {
      // Keep the look-back lines and the unscanned tail (a partial line), in one move.
      size_t start = look_back_start(buf, scanned_to_);
      buf.erase_front(start);
      base_ += start;
      look_back_ = scanned_to_ - start;
      scanned_to_ = 0;
    }
    if (!positioned_ && !position()) return false;
    if (!fill()) return false;  // a chunk's worth of lines after the look-back
    if (buf.size() <= look_back_) {
      done_ = true;
      return false;
    }
    size_t scan_end = buf.size();
    if (!src_eof_) {
      const void* nl = memrchr(buf.data() + look_back_, '\n', buf.size() - look_back_);
      if (nl != nullptr) scan_end = static_cast<const char*>(nl) - buf.data() + 1;
    }
    out.buffer = std::string_view(buf.data(), scan_end);
    out.scan_from = look_back_;
    scanned_to_ = scan_end;
    bytes_ += scan_end - look_back_;
    return true;
  }
  const std::string& error() const override { return error_; }
  uint64_t bytes_read() const override { return bytes_; }

 private:
  // First chunk: reads until the first line that starts at or after begin_ is in the buffer;
  // what precedes it is look-back context.
  bool position() {
    ReadBuffer& buf = *buf_;
    positioned_ = true;
    while (true) {
      if (!fill()) return false;
      if (begin_ <= base_) return true;  // no context before the range
      size_t pos = static_cast<size_t>(begin_ - 1 - base_);  // the byte before begin
      if (pos < buf.size()) {
        const void* nl = memchr(buf.data() + pos, '\n', buf.size() - pos);
        if (nl != nullptr) {
          look_back_ = static_cast<size_t>(static_cast<const char*>(nl) - buf.data()) + 1;
          if (end_ > 0 && base_ + look_back_ >= end_) {  // no line starts inside [begin, end)
            done_ = true;
            return false;
          }
          return true;
        }
        if (!src_eof_ && buf.size() - pos > chunk_) {
          // A line longer than a chunk straddles begin: drop the context, skip the rest of it.
          base_ += buf.size();
          buf.clear();
          look_back_ = 0;
          skip_first_ = true;
          continue;
        }
      }
      if (src_eof_) {
        done_ = true;
        return false;
      }
      look_back_ = buf.size();  // all context so far: read on
    }
  }

  bool fill() {
    ReadBuffer& buf = *buf_;
    while (!src_eof_ && buf.size() - look_back_ < chunk_) {
      size_t old = buf.size();
      size_t n = std::min(chunk_ + look_back_ - old, kMaxReadBytes);
      buf.resize(old + n);
      ssize_t r = src_->read(buf.data() + old, n);
      if (r < 0) {
        error_ = fmt::format("{}: read failed: {}", path_, src_->error);
        done_ = true;
        return false;
      }
      buf.resize(old + static_cast<size_t>(r));
      read_pos_ += static_cast<uint64_t>(r);
      if (r == 0 || src_->at_end()) src_eof_ = true;
      if (skip_first_) {
        const void* nl = memchr(buf.data(), '\n', buf.size());
        if (nl == nullptr) {
          base_ += buf.size();
          buf.clear();
          continue;
        }
        size_t cut = static_cast<const char*>(nl) - buf.data() + 1;
        buf.erase_front(cut);
        base_ += cut;
        skip_first_ = false;
        if (end_ > 0 && base_ >= end_) {  // no line starts inside [begin, end)
          buf.clear();
          src_eof_ = true;
          break;
        }
      }
      if (end_ > 0 && read_pos_ >= end_) {
        // Finish the line that contains byte end-1, then stop.
        uint64_t from_abs = std::max<uint64_t>(end_ - 1, base_ + look_back_);
        if (from_abs < base_ + buf.size()) {
          size_t from = static_cast<size_t>(from_abs - base_);
          const void* nl = memchr(buf.data() + from, '\n', buf.size() - from);
          if (nl != nullptr) {
            buf.resize(static_cast<const char*>(nl) - buf.data() + 1);
            src_eof_ = true;
          }
        } else {
          src_eof_ = true;  // the range ended inside the skipped line
        }
      }
    }
    return true;
  }

  std::string path_;
  std::unique_ptr<Source> src_;
  uint64_t base_;      // absolute offset of buf_[0]
  uint64_t read_pos_;  // absolute offset of the next read
  bool skip_first_;
  uint64_t begin_;
  uint64_t end_;
  size_t chunk_;
  std::unique_ptr<ReadBuffer> own_;  // when the caller gave no buffer
  ReadBuffer* buf_ = nullptr;
  size_t look_back_ = 0;
  size_t scanned_to_ = 0;
  uint64_t bytes_ = 0;
  bool src_eof_ = false;
  bool done_ = false;
  bool positioned_ = false;
  std::string error_;
};

}  // namespace

void ReadBuffer::erase_front(size_t n) {
  if (n == 0) return;
  if (n < size_) std::memmove(bytes_.get(), bytes_.get() + n, size_ - n);
  size_ = n < size_ ? size_ - n : 0;
}

void ReadBuffer::grow(size_t n) {
  size_t capacity = std::max(n, capacity_ * 2);
  auto bytes = std::make_unique_for_overwrite<char[]>(capacity);
  if (size_ > 0) std::memcpy(bytes.get(), bytes_.get(), size_);
  bytes_ = std::move(bytes);
  capacity_ = capacity;
}

bool is_gzip_file(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  unsigned char magic[2] = {0, 0};
  ssize_t r = ::read(fd, magic, 2);
  ::close(fd);
  return r == 2 && magic[0] == 0x1f && magic[1] == 0x8b;
}

uint64_t file_size(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return 0;
  return static_cast<uint64_t>(st.st_size);
}

std::unique_ptr<ChunkReader> ChunkReader::open(const std::string& path, uint64_t begin, uint64_t end,
                                               size_t chunk_bytes, std::string& error,
                                               ReadBuffer* buffer) {
  // One open per file: the gzip magic is read from the same descriptor (thousands of rank files
  // make every extra open/stat count).
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    error = fmt::format("{}: {}", path, std::strerror(errno));
    return nullptr;
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0 || S_ISDIR(st.st_mode)) {
    error = S_ISDIR(st.st_mode) ? fmt::format("{}: is a directory", path)
                                : fmt::format("{}: {}", path, std::strerror(errno));
    ::close(fd);
    return nullptr;
  }
  // A range that starts mid-file is read from up to kLookBackBytes earlier: those lines are its
  // look-back context. Reading starts one byte before the context so that a line starting exactly
  // there is recognised (the dropped partial line is then just that '\n').
  uint64_t context = begin > kLookBackBytes ? begin - kLookBackBytes : 0;
  uint64_t start = context > 0 ? context - 1 : 0;
  // Read-ahead matters for files longer than a chunk; a small file is one read.
  if (static_cast<uint64_t>(st.st_size) > start + chunk_bytes)
    ::posix_fadvise(fd, static_cast<off_t>(start), 0, POSIX_FADV_SEQUENTIAL);
  auto plain = std::make_unique<PlainSource>(fd, start, static_cast<uint64_t>(st.st_size));  // owns fd
  std::unique_ptr<ReadBuffer> own;
  bool gzip = false;
  const bool whole = begin == 0 && end == 0;
  if (whole) {
    // A whole-file read takes its first block here, and that block shows whether the file is gzip:
    // a file that fits in one block is one read (16,384 rank files of 7 KB: two system calls fewer
    // each than a magic read, a data read and a read that returns 0).
    if (buffer == nullptr) {
      own = std::make_unique<ReadBuffer>();
      buffer = own.get();
    }
    size_t n = std::min(chunk_bytes, kMaxReadBytes);  // what the reader's first fill reads
    buffer->resize(n);
    ssize_t r = plain->read(buffer->data(), n);
    if (r < 0) {
      error = fmt::format("{}: read failed: {}", path, plain->error);
      return nullptr;
    }
    buffer->resize(static_cast<size_t>(r));
    const auto* head = reinterpret_cast<const unsigned char*>(buffer->data());
    gzip = r >= 2 && head[0] == 0x1f && head[1] == 0x8b;
  } else {
    unsigned char magic[2] = {0, 0};
    gzip = ::pread(fd, magic, 2, 0) == 2 && magic[0] == 0x1f && magic[1] == 0x8b;
  }
  if (gzip) {
    if (buffer != nullptr) buffer->clear();
    fd = plain->release();
    gzFile f = gzdopen(fd, "rb");  // owns fd from here; gzip reads from its own position, still 0
    if (f == nullptr) {
      ::close(fd);
      error = fmt::format("{}: cannot open gzip file", path);
      return nullptr;
    }
    gzbuffer(f, 256 * 1024);
    return std::make_unique<ReaderImpl>(path, std::make_unique<GzipSource>(f), 0, false, 0, 0, chunk_bytes, buffer,
                                        std::move(own));
  }
  return std::make_unique<ReaderImpl>(path, std::move(plain), start, context > 0, begin, end, chunk_bytes, buffer,
                                      std::move(own), whole);
}

}  // namespace attribution::blueprint
