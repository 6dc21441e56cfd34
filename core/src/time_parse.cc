#include "time_parse.h"

#include <fmt/format.h>

#include "attribution/codec.h"

namespace attribution {
namespace detail {

int64_t days_from_civil(int64_t y, unsigned m, unsigned d) {
  y -= m <= 2;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const unsigned yoe = static_cast<unsigned>(y - era * 400);
  const unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + static_cast<int64_t>(doe) - 719468;
}

int month_from_abbrev(std::string_view s) {
  static constexpr std::string_view kMonths[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                                 "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
  if (s.size() < 3) return 0;
  for (int i = 0; i < 12; ++i) {
    if (s.substr(0, 3) == kMonths[i]) return i + 1;
  }
  return 0;
}

int parse_fixed_digits(std::string_view s, size_t pos, size_t n) {
  if (pos + n > s.size()) return -1;
  int v = 0;
  for (size_t i = 0; i < n; ++i) {
    char c = s[pos + i];
    if (c < '0' || c > '9') return -1;
    v = v * 10 + (c - '0');
  }
  return v;
}

TimeNs make_time(int64_t y, unsigned mo, unsigned d, unsigned h, unsigned mi, unsigned s,
                 int64_t nanos) {
  int64_t days = days_from_civil(y, mo, d);
  return ((days * 86400 + h * 3600 + mi * 60 + s) * 1000000000LL) + nanos;
}

size_t parse_iso_prefix(std::string_view s, int64_t utc_offset_s, TimeNs& t) {
  // YYYY-MM-DD?hh:mm:ss
  if (s.size() < 19) return 0;
  int y = parse_fixed_digits(s, 0, 4);
  // Nanoseconds in int64 reach 2262: bounded years keep every later sum far from overflow.
  if (y < 1900 || y > 2200 || s[4] != '-') return 0;
  int mo = parse_fixed_digits(s, 5, 2);
  if (mo < 1 || mo > 12 || s[7] != '-') return 0;
  int d = parse_fixed_digits(s, 8, 2);
  if (d < 1 || d > 31 || (s[10] != 'T' && s[10] != ' ' && s[10] != '_')) return 0;
  int h = parse_fixed_digits(s, 11, 2);
  if (h < 0 || h > 23 || s[13] != ':') return 0;
  int mi = parse_fixed_digits(s, 14, 2);
  if (mi < 0 || mi > 59 || s[16] != ':') return 0;
  int sec = parse_fixed_digits(s, 17, 2);
  if (sec < 0 || sec > 60) return 0;
  size_t pos = 19;
  int64_t nanos = 0;
  if (pos < s.size() && (s[pos] == '.' || s[pos] == ',')) {
    ++pos;
    int64_t scale = 100000000;
    size_t digits = 0;
    while (pos < s.size() && s[pos] >= '0' && s[pos] <= '9') {
      if (scale > 0) {
        nanos += (s[pos] - '0') * scale;
        scale /= 10;
      }
      ++pos;
      ++digits;
    }
    if (digits == 0) return 0;
  }
  int64_t offset = utc_offset_s;
  if (pos < s.size() && (s[pos] == 'Z' || s[pos] == 'z')) {
    offset = 0;
    ++pos;
  } else if (pos + 5 <= s.size() && (s[pos] == '+' || s[pos] == '-')) {
    int sign = s[pos] == '-' ? -1 : 1;
    int oh = parse_fixed_digits(s, pos + 1, 2);
    size_t mpos = pos + 3;
    if (mpos < s.size() && s[mpos] == ':') ++mpos;
    int om = parse_fixed_digits(s, mpos, 2);
    if (oh >= 0 && om >= 0 && oh <= 23) {
      offset = sign * (oh * 3600 + om * 60);
      pos = mpos + 2;
    }
  }
  t = make_time(y, static_cast<unsigned>(mo), static_cast<unsigned>(d), static_cast<unsigned>(h),
                static_cast<unsigned>(mi), static_cast<unsigned>(sec), nanos) -
      offset * 1000000000LL;
  return pos;
}

}  // namespace detail

Parsed<TimeNs> parse_rfc3339(std::string_view text, int64_t utc_offset_s) {
  Parsed<TimeNs> out;
  while (!text.empty() && (text.front() == ' ' || text.front() == '"')) text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '"')) text.remove_suffix(1);
  if (text.size() == 10) {  // a date alone
    std::string with_time(text);
    with_time += "T00:00:00";
    TimeNs t = 0;
    if (detail::parse_iso_prefix(with_time, utc_offset_s, t) == with_time.size()) {
      out.value = t;
      return out;
    }
  }
  TimeNs t = 0;
  size_t n = detail::parse_iso_prefix(text, utc_offset_s, t);
  if (n == 0 || n != text.size()) {
    out.error = fmt::format("not an RFC 3339 time: '{}'", text.substr(0, 64));
    return out;
  }
  out.value = t;
  return out;
}

std::string format_rfc3339(TimeNs t) {
  if (t == kNoTime) return "";
  int64_t secs = t / 1000000000LL;
  int64_t nanos = t % 1000000000LL;
  if (nanos < 0) {
    nanos += 1000000000LL;
    secs -= 1;
  }
  int64_t days = secs / 86400;
  int64_t rem = secs % 86400;
  if (rem < 0) {
    rem += 86400;
    days -= 1;
  }
  // civil_from_days
  days += 719468;
  const int64_t era = (days >= 0 ? days : days - 146096) / 146097;
  const unsigned doe = static_cast<unsigned>(days - era * 146097);
  const unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  int64_t y = static_cast<int64_t>(yoe) + era * 400;
  const unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const unsigned mp = (5 * doy + 2) / 153;
  const unsigned d = doy - (153 * mp + 2) / 5 + 1;
  const unsigned m = mp < 10 ? mp + 3 : mp - 9;
  y += (m <= 2);
  return fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z", y, m, d, rem / 3600,
                     (rem % 3600) / 60, rem % 60, nanos / 1000000);
}

std::string format_rfc3339_ns(TimeNs t) {
  if (t == kNoTime) return "";
  std::string ms = format_rfc3339(t);  // "....sss" + "Z"
  int64_t nanos = t % 1000000000LL;
  if (nanos < 0) nanos += 1000000000LL;
  ms.pop_back();
  ms += fmt::format("{:06}Z", nanos % 1000000);
  return ms;
}

}  // namespace attribution
