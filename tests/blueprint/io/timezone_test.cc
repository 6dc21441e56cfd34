// utc_offset_at reads TZif files itself (no TZ, no tzset). The reference is glibc's localtime_r
// under TZ=<zone>, set here in this single-threaded test only.
#include "io/timezone.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <ctime>
#include <fstream>
#include <iterator>
#include <string>

namespace attribution::blueprint {
namespace {

int64_t libc_offset(const std::string& zone, int64_t t) {
  setenv("TZ", zone.c_str(), 1);
  tzset();
  time_t tt = static_cast<time_t>(t);
  struct tm tm {};
  localtime_r(&tt, &tm);
  unsetenv("TZ");
  tzset();
  return tm.tm_gmtoff;
}

std::string read_zone(const std::string& zone) {
  std::ifstream in("/usr/share/zoneinfo/" + zone, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

class ZoneMatchesLibc : public ::testing::TestWithParam<const char*> {};

TEST_P(ZoneMatchesLibc, EveryFewDaysFrom1970To2099) {
  const std::string zone = GetParam();
  ASSERT_FALSE(read_zone(zone).empty()) << "tzdata lacks " << zone;
  int mismatches = 0;
  // Every 3 days and 7 hours: crosses every DST switch of every year within a day or so, and the
  // hours of the day drift so switch hours are hit too. Beyond 2037 (the last transition a fat
  // TZif file lists) the footer rule applies.
  for (int64_t t = 0; t < 4102444800LL && mismatches < 5; t += 3 * 86400 + 7 * 3600) {
    int64_t ours = 0;
    ASSERT_TRUE(utc_offset_at(zone, t * 1000000000LL, ours)) << zone << " at " << t;
    int64_t want = libc_offset(zone, t);
    if (ours != want) {
      ++mismatches;
      ADD_FAILURE() << zone << " at " << t << ": " << ours << " s, libc says " << want << " s";
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Zones, ZoneMatchesLibc,
                         ::testing::Values("America/New_York", "Europe/Berlin", "Europe/Dublin", "Asia/Tokyo",
                                           "Asia/Kolkata", "Australia/Lord_Howe", "America/Sao_Paulo",
                                           "Pacific/Chatham", "America/Los_Angeles", "Asia/Shanghai"));

TEST(UtcOffset, FixedOffsetsAndUtcNeedNoFile) {
  int64_t off = 1;
  EXPECT_TRUE(utc_offset_at("UTC", kNoTime, off));
  EXPECT_EQ(off, 0);
  EXPECT_TRUE(utc_offset_at("+02:00", kNoTime, off));
  EXPECT_EQ(off, 7200);
  EXPECT_TRUE(utc_offset_at("-0530", kNoTime, off));
  EXPECT_EQ(off, -(5 * 3600 + 30 * 60));
}

TEST(UtcOffset, UnknownOrEscapingZonesAreRefused) {
  int64_t off = 0;
  EXPECT_FALSE(utc_offset_at("Mars/Olympus_Mons", kNoTime, off));
  EXPECT_FALSE(utc_offset_at("../../etc/passwd", kNoTime, off));
  EXPECT_FALSE(utc_offset_at("/etc/passwd", kNoTime, off));
}

TEST(UtcOffset, NeverTouchesTheEnvironment) {
  setenv("TZ", "Asia/Tokyo", 1);
  int64_t off = 0;
  ASSERT_TRUE(utc_offset_at("Europe/Berlin", 1700000000LL * 1000000000LL, off));
  EXPECT_EQ(off, 3600);
  ASSERT_NE(std::getenv("TZ"), nullptr);
  EXPECT_STREQ(std::getenv("TZ"), "Asia/Tokyo");
  unsetenv("TZ");
}

TEST(UtcOffsetFromTzif, TruncatedOrForeignBytesAreRefused) {
  std::string berlin = read_zone("Europe/Berlin");
  ASSERT_GT(berlin.size(), 100u);
  int64_t off = 0;
  for (size_t cut : {size_t{0}, size_t{3}, size_t{43}, size_t{44}, size_t{200}, berlin.size() / 2}) {
    EXPECT_FALSE(utc_offset_from_tzif(berlin.substr(0, cut), 1700000000, off)) << "cut at " << cut;
  }
  EXPECT_FALSE(utc_offset_from_tzif("not a tz file at all, but long enough to have a header of 44 bytes", 0, off));
  std::string bad_counts = berlin;
  bad_counts[4 + 1 + 15 + 12] = '\x7f';  // timecnt of the first header: absurd
  EXPECT_FALSE(utc_offset_from_tzif(bad_counts, 1700000000, off));
}

}  // namespace
}  // namespace attribution::blueprint
