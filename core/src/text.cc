#include "attribution/text.h"

#include <algorithm>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define ATTRIBUTION_X86 1
#endif

namespace attribution {
namespace {

#ifdef ATTRIBUTION_X86
// Byte counters: each block adds 1 (subtracts -1) per '\n' lane; after at most 255 blocks the
// per-lane counts are folded into 64-bit sums with SAD, before an 8-bit lane can overflow.
__attribute__((target("avx2"))) uint64_t count_avx2(const char* p, size_t n) {
  const __m256i nl = _mm256_set1_epi8('\n');
  const __m256i zero = _mm256_setzero_si256();
  uint64_t total = 0;
  size_t i = 0;
  while (n - i >= 32) {
    __m256i acc = zero;
    size_t blocks = std::min<size_t>((n - i) / 32, 255);
    for (size_t b = 0; b < blocks; ++b, i += 32) {
      __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + i));
      acc = _mm256_sub_epi8(acc, _mm256_cmpeq_epi8(v, nl));
    }
    __m256i sums = _mm256_sad_epu8(acc, zero);
    total += static_cast<uint64_t>(_mm256_extract_epi64(sums, 0)) + static_cast<uint64_t>(_mm256_extract_epi64(sums, 1)) +
             static_cast<uint64_t>(_mm256_extract_epi64(sums, 2)) + static_cast<uint64_t>(_mm256_extract_epi64(sums, 3));
  }
  for (; i < n; ++i) total += p[i] == '\n';
  return total;
}

uint64_t count_sse2(const char* p, size_t n) {
  const __m128i nl = _mm_set1_epi8('\n');
  const __m128i zero = _mm_setzero_si128();
  uint64_t total = 0;
  size_t i = 0;
  while (n - i >= 16) {
    __m128i acc = zero;
    size_t blocks = std::min<size_t>((n - i) / 16, 255);
    for (size_t b = 0; b < blocks; ++b, i += 16) {
      __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + i));
      acc = _mm_sub_epi8(acc, _mm_cmpeq_epi8(v, nl));
    }
    __m128i sums = _mm_sad_epu8(acc, zero);
    total += static_cast<uint64_t>(_mm_cvtsi128_si64(sums)) +
             static_cast<uint64_t>(_mm_cvtsi128_si64(_mm_unpackhi_epi64(sums, sums)));
  }
  for (; i < n; ++i) total += p[i] == '\n';
  return total;
}

using CountFn = uint64_t (*)(const char*, size_t);
CountFn pick() { return __builtin_cpu_supports("avx2") ? count_avx2 : count_sse2; }
#endif

}  // namespace

uint64_t count_newlines(const char* data, size_t size) {
#ifdef ATTRIBUTION_X86
  static const CountFn fn = pick();
  return fn(data, size);
#else
  return static_cast<uint64_t>(std::count(data, data + size, '\n'));
#endif
}

}  // namespace attribution
