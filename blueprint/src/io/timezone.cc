#include "io/timezone.h"

#include <algorithm>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

namespace attribution::blueprint {
namespace {

int64_t be(std::string_view s, size_t at, int bytes) {
  uint64_t v = 0;
  for (int i = 0; i < bytes; ++i) v = (v << 8) | static_cast<unsigned char>(s[at + i]);
  if (bytes == 4) return static_cast<int32_t>(static_cast<uint32_t>(v));
  return static_cast<int64_t>(v);
}

// A footer such as "JST-9" or "<+0530>-5:30" with no DST rule: its standard offset (POSIX signs are
// west-positive). False when the footer has a DST part or cannot be read.
bool footer_std_offset(std::string_view footer, int64_t& offset_s) {
  size_t i = 0;
  if (i < footer.size() && footer[i] == '<') {
    i = footer.find('>');
    if (i == std::string_view::npos) return false;
    ++i;
  } else {
    while (i < footer.size() && ((footer[i] >= 'A' && footer[i] <= 'Z') || (footer[i] >= 'a' && footer[i] <= 'z'))) ++i;
  }
  if (i == 0 || i >= footer.size()) return false;
  int sign = 1;
  if (footer[i] == '+' || footer[i] == '-') sign = footer[i++] == '-' ? -1 : 1;
  int64_t parts[3] = {0, 0, 0};
  int n = 0;
  while (i < footer.size() && n < 3) {
    if (footer[i] < '0' || footer[i] > '9') return false;
    while (i < footer.size() && footer[i] >= '0' && footer[i] <= '9') parts[n] = parts[n] * 10 + (footer[i++] - '0');
    ++n;
    if (i < footer.size() && footer[i] == ':') ++i;
    else break;
  }
  if (i != footer.size()) return false;  // a DST name or rule follows
  offset_s = -sign * (parts[0] * 3600 + parts[1] * 60 + parts[2]);
  return true;
}

}  // namespace

bool utc_offset_from_tzif(std::string_view s, int64_t at_s, int64_t& offset_s) {
  auto header = [&](size_t at, int64_t c[6]) {
    if (s.size() < at + 44 || s.compare(at, 4, "TZif") != 0) return false;
    for (int k = 0; k < 6; ++k) c[k] = be(s, at + 20 + 4 * k, 4);
    for (int k = 0; k < 6; ++k)
      if (c[k] < 0 || c[k] > 100000) return false;
    return true;
  };
  int64_t c[6];  // isutcnt, isstdcnt, leapcnt, timecnt, typecnt, charcnt
  if (!header(0, c)) return false;
  size_t pos = 0;
  int width = 4;
  auto block_size = [&](const int64_t k[6], int w) {
    return static_cast<size_t>(k[3] * w + k[3] + k[4] * 6 + k[5] + k[2] * (w + 4) + k[1] + k[0]);
  };
  if (s[4] >= '2') {  // skip the 32-bit block, read the 64-bit one
    pos = 44 + block_size(c, 4);
    if (!header(pos, c)) return false;
    width = 8;
  }
  size_t data = pos + 44;
  const int64_t timecnt = c[3], typecnt = c[4];
  if (typecnt == 0 || s.size() < data + block_size(c, width)) return false;
  size_t types_at = data + timecnt * width;
  size_t ttinfo_at = types_at + timecnt;
  auto utoff = [&](int64_t type) -> bool {
    if (type < 0 || type >= typecnt) return false;
    offset_s = be(s, ttinfo_at + type * 6, 4);
    return true;
  };
  auto transition = [&](int64_t k) { return be(s, data + k * width, width); };
  if (timecnt == 0 || at_s < transition(0)) return utoff(0);
  if (at_s >= transition(timecnt - 1) && width == 8) {
    size_t footer_at = data + block_size(c, width);
    if (footer_at < s.size() && s[footer_at] == '\n') {
      size_t end = s.find('\n', footer_at + 1);
      if (end != std::string_view::npos && footer_std_offset(s.substr(footer_at + 1, end - footer_at - 1), offset_s))
        return true;
    }
    constexpr int64_t kCycle = 10227LL * 86400;  // 28 years, 7 of them leap: weekdays repeat
    constexpr int64_t k2100 = 4102444800LL;      // the cycle breaks at 2100 (not a leap year)
    const int64_t last = transition(timecnt - 1);
    if (at_s < k2100)
      while (at_s >= last) at_s -= kCycle;
  }
  // Last transition at or before at_s.
  int64_t lo = 0, hi = timecnt - 1;
  while (lo < hi) {
    int64_t mid = (lo + hi + 1) / 2;
    if (transition(mid) <= at_s) lo = mid;
    else hi = mid - 1;
  }
  return utoff(static_cast<unsigned char>(s[types_at + lo]));
}

bool utc_offset_at(const std::string& zone, TimeNs at, int64_t& offset_s) {
  if (zone.empty() || zone == "UTC" || zone == "Z" || zone == "Etc/UTC") {
    offset_s = 0;
    return true;
  }
  if ((zone[0] == '+' || zone[0] == '-') && zone.size() >= 3) {
    int sign = zone[0] == '-' ? -1 : 1;
    int h = std::atoi(zone.substr(1, 2).c_str());
    int m = zone.size() >= 5 ? std::atoi(zone.substr(zone.size() - 2).c_str()) : 0;
    offset_s = sign * (h * 3600 + m * 60);
    return true;
  }
  if (zone.find("..") != std::string::npos || zone[0] == '/') return false;
  std::ifstream in("/usr/share/zoneinfo/" + zone, std::ios::binary);
  if (!in) return false;
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  int64_t at_s = at == kNoTime ? static_cast<int64_t>(time(nullptr)) : at / 1000000000LL;
  return utc_offset_from_tzif(bytes, at_s, offset_s);
}

}  // namespace attribution::blueprint
