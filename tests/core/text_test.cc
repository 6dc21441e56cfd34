#include "attribution/text.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>

namespace attribution {
namespace {

// The vectorised counter against std::count at every alignment and tail length, including
// buffers longer than the 255-block fold and runs of newlines that fill every byte lane.
TEST(Text, CountNewlinesMatchesStdCount) {
  std::mt19937 rng(7);
  std::string buf(3 * 255 * 32 + 97, 'x');
  for (auto& c : buf) c = (rng() % 7 == 0) ? '\n' : static_cast<char>('a' + rng() % 26);
  for (size_t off = 0; off < 40; ++off) {
    for (size_t len : {size_t{0}, size_t{1}, size_t{15}, size_t{31}, size_t{32}, size_t{33}, size_t{255 * 32},
                       size_t{255 * 32 + 1}, buf.size() - off}) {
      if (off + len > buf.size()) continue;
      const char* p = buf.data() + off;
      EXPECT_EQ(count_newlines(p, len), static_cast<uint64_t>(std::count(p, p + len, '\n'))) << off << "+" << len;
    }
  }
  std::string all(300 * 32 + 5, '\n');
  EXPECT_EQ(count_newlines(all), all.size());
}

TEST(Text, CountLinesCountsAnUnterminatedLastLine) {
  EXPECT_EQ(count_lines(""), 0u);
  EXPECT_EQ(count_lines("a"), 1u);
  EXPECT_EQ(count_lines("a\n"), 1u);
  EXPECT_EQ(count_lines("a\nb"), 2u);
  EXPECT_EQ(count_lines("\n\n"), 2u);
}

}  // namespace
}  // namespace attribution
