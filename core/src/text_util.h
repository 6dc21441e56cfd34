// Internal: small text helpers for evidence lines.
#pragma once

#include <string>
#include <string_view>

namespace attribution::detail {

// Evidence text: ANSI escapes and control characters removed, invalid UTF-8 replaced by U+FFFD,
// cut to max_bytes on a character boundary.
std::string clean_evidence_text(std::string_view line, size_t max_bytes = 1024);

}  // namespace attribution::detail
