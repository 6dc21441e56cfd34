#include <gtest/gtest.h>

#include "attribution/codec.h"
#include "time_parse.h"

namespace attribution {
namespace {

TEST(TimeParse, Rfc3339Shapes) {
  auto z = parse_rfc3339("2024-05-01T10:00:00Z");
  ASSERT_TRUE(z.ok());
  EXPECT_EQ(format_rfc3339(z.value), "2024-05-01T10:00:00.000Z");
  auto off = parse_rfc3339("2024-05-01T12:00:00.250+02:00");
  ASSERT_TRUE(off.ok());
  EXPECT_EQ(format_rfc3339(off.value), "2024-05-01T10:00:00.250Z");
  auto space = parse_rfc3339("2024-05-01 10:00:00,5");
  ASSERT_TRUE(space.ok());
  EXPECT_EQ(format_rfc3339(space.value), "2024-05-01T10:00:00.500Z");
  auto local = parse_rfc3339("2024-05-01T10:00:00", 3600);
  ASSERT_TRUE(local.ok());
  EXPECT_EQ(format_rfc3339(local.value), "2024-05-01T09:00:00.000Z");
  auto date_only = parse_rfc3339("2024-02-29");
  ASSERT_TRUE(date_only.ok());
  EXPECT_EQ(format_rfc3339(date_only.value), "2024-02-29T00:00:00.000Z");
}

TEST(TimeParse, RejectsMalformed) {
  for (const char* bad : {"", "2024-13-01T00:00:00Z", "2024-05-01T25:00:00Z", "yesterday", "2024-05-01T10:00:00Zjunk",
                          "2024-05-01T10:00"}) {
    EXPECT_FALSE(parse_rfc3339(bad).ok()) << bad;
  }
}

TEST(TimeParse, NanosecondRoundTrip) {
  auto t = parse_rfc3339("2026-07-25T14:23:17.527285605Z");
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(format_rfc3339_ns(t.value), "2026-07-25T14:23:17.527285605Z");
  EXPECT_EQ(parse_rfc3339(format_rfc3339_ns(t.value)).value, t.value);
}

TEST(TimeParse, PreEpochAndLeapDays) {
  EXPECT_EQ(detail::days_from_civil(1970, 1, 1), 0);
  EXPECT_EQ(detail::days_from_civil(2000, 3, 1), 11017);
  auto t = parse_rfc3339("1969-12-31T23:59:59Z");
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(format_rfc3339(t.value), "1969-12-31T23:59:59.000Z");
}

}  // namespace
}  // namespace attribution
