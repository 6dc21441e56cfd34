// Text primitives shared by the engine and its edges. Pure functions: no I/O, no state, safe to
// call from any thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace attribution {

// Number of '\n' bytes in [data, data + size). Vectorised (AVX2 when the CPU has it, SSE2
// otherwise): the line count of every buffer the engine scans comes from here, so it runs at
// memory speed rather than at std::count's byte-widening speed.
uint64_t count_newlines(const char* data, size_t size);
inline uint64_t count_newlines(std::string_view text) { return count_newlines(text.data(), text.size()); }

// Lines in a block of text: newlines, plus one for a last line without its '\n'.
inline uint64_t count_lines(std::string_view text) {
  uint64_t n = count_newlines(text);
  if (!text.empty() && text.back() != '\n') ++n;
  return n;
}

}  // namespace attribution
