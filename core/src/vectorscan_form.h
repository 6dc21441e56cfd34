// Internal: the form of a pattern Vectorscan looks for. The scan only has to say which lines a
// pattern can match; the capture step (capture_engine.h) matches the whole pattern on each of
// those lines and takes the captures from it.
#pragma once

#include <string>
#include <string_view>

namespace attribution::detail {

// `pattern` with `\n` added to every negated class that does not exclude it already ("[^']" →
// "[^'\n]"). On one line (no '\n' in the text) the two match the same. Vectorscan 5.4.9 (Debian 12,
// on this AVX-512 machine) misses matches of such classes at most buffer offsets when they may
// cross a newline: "'[^']+'" over a long quoted C++ type name is found at 18 of 1,024 offsets,
// "'[^'\n]+'" at all of them. Without this a line's verdict depended on where it sat in memory
// (docs/performance.md, "Vectorscan misses"). Returns `pattern` unchanged when it cannot read it
// (an unbalanced class, `\Q...\E`). Pure; thread-safe.
std::string exclude_newline_from_negated_classes(std::string_view pattern);

}  // namespace attribution::detail
