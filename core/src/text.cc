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

// Two blanks in a row: lanes where byte i and byte i + 1 are both ' '.
__attribute__((target("avx2"))) size_t pair_avx2(const char* p, size_t n) {
  const __m256i sp = _mm256_set1_epi8(' ');
  size_t i = 0;
  for (; n - i >= 33; i += 32) {
    __m256i a = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + i));
    __m256i b = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + i + 1));
    auto m = static_cast<uint32_t>(
        _mm256_movemask_epi8(_mm256_and_si256(_mm256_cmpeq_epi8(a, sp), _mm256_cmpeq_epi8(b, sp))));
    if (m != 0) return i + static_cast<size_t>(__builtin_ctz(m));
  }
  for (; i + 1 < n; ++i) {
    if (p[i] == ' ' && p[i + 1] == ' ') return i;
  }
  return n;
}

size_t pair_sse2(const char* p, size_t n) {
  const __m128i sp = _mm_set1_epi8(' ');
  size_t i = 0;
  for (; n - i >= 17; i += 16) {
    __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + i));
    __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + i + 1));
    auto m = static_cast<uint32_t>(_mm_movemask_epi8(_mm_and_si128(_mm_cmpeq_epi8(a, sp), _mm_cmpeq_epi8(b, sp))));
    if (m != 0) return i + static_cast<size_t>(__builtin_ctz(m));
  }
  for (; i + 1 < n; ++i) {
    if (p[i] == ' ' && p[i + 1] == ' ') return i;
  }
  return n;
}

using PairFn = size_t (*)(const char*, size_t);
PairFn pick_pair() { return __builtin_cpu_supports("avx2") ? pair_avx2 : pair_sse2; }
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

size_t find_blank_pair(const char* data, size_t size) {
  if (size < 2) return size;
#ifdef ATTRIBUTION_X86
  static const PairFn fn = pick_pair();
  return fn(data, size);
#else
  for (size_t i = 0; i + 1 < size; ++i) {
    if (data[i] == ' ' && data[i + 1] == ' ') return i;
  }
  return size;
#endif
}

size_t collapse_blank_runs(const char* data, size_t size, std::string& out,
                           std::vector<std::pair<size_t, size_t>>& shifts) {
  out.clear();
  shifts.clear();
  size_t i = 0;
  size_t removed = 0;
  while (i < size) {
    size_t k = find_blank_pair(data + i, size - i);
    if (k == size - i) {
      if (removed == 0) return 0;  // nothing to collapse: out stays empty
      out.append(data + i, size - i);
      break;
    }
    if (removed == 0) out.reserve(size);
    size_t run = i + k + 1;  // keeps the run's first blank
    out.append(data + i, run - i);
    size_t q = run;
    while (q < size && data[q] == ' ') ++q;
    removed += q - run;
    shifts.emplace_back(out.size(), removed);
    i = q;
  }
  return removed;
}

}  // namespace attribution
