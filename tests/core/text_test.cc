#include "attribution/text.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

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

// The vectorised pair search against a plain loop, at every alignment, with blanks placed so that
// pairs straddle the 16- and 32-byte blocks.
TEST(Text, FindBlankPairMatchesALoop) {
  std::mt19937 rng(11);
  for (int round = 0; round < 200; ++round) {
    std::string buf(static_cast<size_t>(rng() % 200), 'x');
    for (auto& c : buf) c = (rng() % 5 == 0) ? ' ' : static_cast<char>('a' + rng() % 26);
    for (size_t off = 0; off < std::min<size_t>(buf.size(), 40); ++off) {
      const char* p = buf.data() + off;
      size_t n = buf.size() - off;
      size_t want = n;
      for (size_t i = 0; i + 1 < n; ++i) {
        if (p[i] == ' ' && p[i + 1] == ' ') {
          want = i;
          break;
        }
      }
      EXPECT_EQ(find_blank_pair(p, n), want) << round << "@" << off;
    }
  }
  EXPECT_EQ(find_blank_pair(" ", 1), 1u);
  EXPECT_EQ(find_blank_pair(std::string(31, 'a').append("  ").data(), 33), 31u);  // across a block end
}

// Collapsing keeps every byte but the extra blanks of each run, and the shifts map every offset
// of the copy back to the same byte of the input.
TEST(Text, CollapseBlankRunsMapsBack) {
  std::string out;
  std::vector<std::pair<size_t, size_t>> shifts;
  EXPECT_EQ(collapse_blank_runs("a b\nc d", 7, out, shifts), 0u);
  EXPECT_TRUE(out.empty());
  std::mt19937 rng(3);
  for (int round = 0; round < 300; ++round) {
    std::string in;
    size_t n = rng() % 300;
    for (size_t i = 0; i < n; ++i) {
      int r = static_cast<int>(rng() % 10);
      in += r < 4 ? ' ' : r == 4 ? '\n' : static_cast<char>('a' + r);
    }
    size_t cut = collapse_blank_runs(in.data(), in.size(), out, shifts);
    if (cut == 0) {
      EXPECT_EQ(in.find("  "), std::string::npos);
      continue;
    }
    EXPECT_EQ(out.size() + cut, in.size());
    EXPECT_EQ(out.find("  "), std::string::npos);
    std::string expect;
    for (char c : in) {
      if (c == ' ' && !expect.empty() && expect.back() == ' ') continue;
      expect += c;
    }
    EXPECT_EQ(out, expect);
    for (size_t o = 0; o < out.size(); ++o) {
      size_t shift = 0;
      for (const auto& [at, removed] : shifts) {
        if (at <= o) shift = removed;
      }
      ASSERT_LT(o + shift, in.size());
      EXPECT_EQ(in[o + shift], out[o]) << round << " offset " << o;
      if (out[o] == '\n') {
        EXPECT_EQ(in[o + shift], '\n');
      }
    }
  }
}

}  // namespace
}  // namespace attribution
