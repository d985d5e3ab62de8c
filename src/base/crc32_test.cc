#include "base/crc32.h"

#include <gtest/gtest.h>
#include <zlib.h>

#include <random>
#include <vector>

namespace flashpipe {
namespace {

uint32_t Zlib(uint32_t crc, const std::vector<uint8_t>& v) {
  return static_cast<uint32_t>(crc32(crc, v.data(), static_cast<uInt>(v.size())));
}

std::vector<uint8_t> Random(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> v(n);
  for (auto& b : v) b = static_cast<uint8_t>(rng());
  return v;
}

TEST(Crc32Test, KnownValue) {
  const char* s = "123456789";
  EXPECT_EQ(Crc32Update(0, s, 9), 0xCBF43926u);
  EXPECT_EQ(Crc32Update(0, s, 0), 0u);
}

TEST(Crc32Test, MatchesZlibAtManySizesAndChains) {
  for (size_t n : {1u, 3u, 15u, 16u, 63u, 64u, 255u, 4096u, 100003u}) {
    auto v = Random(n, static_cast<uint32_t>(n));
    EXPECT_EQ(Crc32Update(0, v.data(), v.size()), Zlib(0, v)) << n;
    size_t half = n / 3;
    uint32_t chained = Crc32Update(Crc32Update(0, v.data(), half), v.data() + half, n - half);
    EXPECT_EQ(chained, Zlib(0, v)) << n;
  }
}

TEST(Crc32Test, CombineMatchesConcatenation) {
  auto a = Random(1000, 1), b = Random(7777, 2);
  std::vector<uint8_t> ab = a;
  ab.insert(ab.end(), b.begin(), b.end());
  EXPECT_EQ(Crc32Combine(Zlib(0, a), Zlib(0, b), b.size()), Zlib(0, ab));
}

TEST(Crc32Test, AppendPatternMatchesExplicitBytes) {
  auto prefix = Random(37, 3);
  for (uint64_t count : {0u, 1u, 2u, 3u, 5u, 1024u, 12345u}) {
    for (uint32_t pattern : {0u, 0xDEADBEEFu, 0x01020304u}) {
      std::vector<uint8_t> v = prefix;
      for (uint64_t i = 0; i < count; ++i) {
        for (int k = 0; k < 4; ++k) v.push_back(static_cast<uint8_t>(pattern >> (8 * k)));
      }
      EXPECT_EQ(Crc32AppendPattern(Zlib(0, prefix), pattern, count), Zlib(0, v)) << count << " " << pattern;
    }
  }
}

TEST(Crc32Test, AppendPatternHugeCountIsFastAndConsistent) {
  // 2^40 zero words, computed two ways: in one call and as two halves.
  uint32_t once = Crc32AppendPattern(0, 0, uint64_t{1} << 40);
  uint32_t halves = Crc32AppendPattern(Crc32AppendPattern(0, 0, uint64_t{1} << 39), 0, uint64_t{1} << 39);
  EXPECT_EQ(once, halves);
}

}  // namespace
}  // namespace flashpipe
