#include "io/timezone.h"

#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <string>

namespace attribution::blueprint {

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
  std::error_code ec;
  if (zone.find("..") != std::string::npos || !std::filesystem::exists("/usr/share/zoneinfo/" + zone, ec)) return false;
  const char* old = std::getenv("TZ");
  std::string saved = old != nullptr ? old : "";
  setenv("TZ", zone.c_str(), 1);
  tzset();
  time_t t = at == kNoTime ? time(nullptr) : static_cast<time_t>(at / 1000000000LL);
  struct tm tm {};
  localtime_r(&t, &tm);
  offset_s = tm.tm_gmtoff;
  if (old != nullptr) setenv("TZ", saved.c_str(), 1);
  else unsetenv("TZ");
  tzset();
  return true;
}

}  // namespace attribution::blueprint
