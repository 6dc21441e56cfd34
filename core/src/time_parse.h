// Internal: allocation-free time parsing helpers for the hot path.
#pragma once

#include <cstdint>
#include <string_view>

#include "attribution/model.h"

namespace attribution::detail {

// Days since 1970-01-01 for a proleptic Gregorian date (Howard Hinnant's algorithm).
int64_t days_from_civil(int64_t y, unsigned m, unsigned d);
// 1..12 for "Jan".."Dec" (case-sensitive first letter upper), 0 otherwise.
int month_from_abbrev(std::string_view s);
// Parses exactly n ASCII digits at s[pos]; returns -1 when not digits.
int parse_fixed_digits(std::string_view s, size_t pos, size_t n);

// Parses "YYYY-MM-DD[T ]hh:mm:ss[.frac][Z|±hh:mm|±hhmm]" at the start of s. On success returns the
// number of bytes consumed and sets t (UTC; zone-less adds -utc_offset_s). Returns 0 otherwise.
size_t parse_iso_prefix(std::string_view s, int64_t utc_offset_s, TimeNs& t);

TimeNs make_time(int64_t y, unsigned mo, unsigned d, unsigned h, unsigned mi, unsigned s,
                 int64_t nanos);

}  // namespace attribution::detail
