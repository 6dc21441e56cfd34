// Text primitives shared by the engine and its edges. Pure functions: no I/O, no state, safe to
// call from any thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace attribution {

// Number of '\n' bytes in [data, data + size). Vectorised (AVX2 when the CPU has it, SSE2
// otherwise): the line count of every buffer the engine scans comes from here, so it runs at
// memory speed rather than at std::count's byte-widening speed.
uint64_t count_newlines(const char* data, size_t size);
inline uint64_t count_newlines(std::string_view text) { return count_newlines(text.data(), text.size()); }

// Offset of the first two blanks in a row (' ' ' ') in [data, data + size), or size when there
// are none. Vectorised like count_newlines.
size_t find_blank_pair(const char* data, size_t size);

// Copies [data, data + size) to `out` with every run of two or more blanks (' ') cut to one, and
// returns how many bytes were cut. Nothing else changes: newlines and every other byte stay, so
// line k of `out` is line k of the input. `shifts` gets one (offset in out, bytes cut so far) pair
// per run, in order: an offset o of `out` is input offset o + (the cut count of the last pair with
// offset <= o, or 0). When there is no run, returns 0 and leaves `out` empty (scan the input).
size_t collapse_blank_runs(const char* data, size_t size, std::string& out,
                           std::vector<std::pair<size_t, size_t>>& shifts);

// Lines in a block of text: newlines, plus one for a last line without its '\n'.
inline uint64_t count_lines(std::string_view text) {
  uint64_t n = count_newlines(text);
  if (!text.empty() && text.back() != '\n') ++n;
  return n;
}

}  // namespace attribution
