#include "input/compressed_size.h"

#include <fcntl.h>
#include <gtest/gtest.h>

#include <random>

#include "base/unique_fd.h"
#include "testing/compress.h"
#include "testing/temp_dir.h"

namespace flashpipe::input {
namespace {

std::vector<uint8_t> Sample(size_t size, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> v(size);
  for (auto& b : v) b = static_cast<uint8_t>(rng() % 5);
  return v;
}

std::vector<uint8_t> Cat(std::vector<uint8_t> a, const std::vector<uint8_t>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

class CompressedSizeTest : public ::testing::Test {
 protected:
  // The hint for `bytes` stored at an offset in a file, as stdin redirected
  // from a file that was partly read already would present it.
  SizeHint FromFile(ImageKind kind, const std::vector<uint8_t>& bytes, size_t lead = 0) {
    std::vector<uint8_t> file(lead, 0xEE);
    file.insert(file.end(), bytes.begin(), bytes.end());
    testing::WriteFile(dir_ / "c", file);
    UniqueFd fd(::open((dir_ / "c").c_str(), O_RDONLY));
    return SizeFromFile(kind, fd.get(), lead, bytes.size());
  }
  testing::TempDir dir_;
};

TEST_F(CompressedSizeTest, XzIndexGivesTheExactSize) {
  auto a = Sample(300000, 1), b = Sample(12345, 2);
  SizeHint h = FromFile(ImageKind::kXz, testing::Xz(a));
  ASSERT_TRUE(h.exact.has_value());
  EXPECT_EQ(*h.exact, a.size());
  EXPECT_EQ(h.at_least, a.size());
  // Concatenated streams (`cat a.xz b.xz`), at an offset in the file.
  h = FromFile(ImageKind::kXz, Cat(testing::Xz(a), testing::Xz(b)), 777);
  ASSERT_TRUE(h.exact.has_value());
  EXPECT_EQ(*h.exact, a.size() + b.size());
}

TEST_F(CompressedSizeTest, BrokenXzIsOfUnknownSize) {
  auto c = testing::Xz(Sample(100000, 3));
  c.resize(c.size() - 10);  // the index and footer are cut
  SizeHint h = FromFile(ImageKind::kXz, c);
  EXPECT_FALSE(h.exact.has_value());
  EXPECT_EQ(h.at_least, 0u);
}

TEST_F(CompressedSizeTest, ZstdFramesGiveTheExactSizeWhenEachRecordsIt) {
  auto a = Sample(300000, 4), b = Sample(70001, 5);
  // A skippable frame (magic 0x184D2A50, 4-byte length) between them.
  std::vector<uint8_t> skip = {0x50, 0x2A, 0x4D, 0x18, 3, 0, 0, 0, 'x', 'y', 'z'};
  SizeHint h = FromFile(ImageKind::kZstd, Cat(Cat(testing::Zstd(a), skip), testing::Zstd(b)), 100);
  ASSERT_TRUE(h.exact.has_value());
  EXPECT_EQ(*h.exact, a.size() + b.size());
}

TEST_F(CompressedSizeTest, ZstdFrameWithoutItsSizeLeavesALowerBound) {
  auto a = Sample(300000, 6), b = Sample(5000, 7);
  SizeHint h = FromFile(ImageKind::kZstd, Cat(testing::Zstd(a), testing::Zstd(b, /*record_size=*/false)));
  EXPECT_FALSE(h.exact.has_value());
  EXPECT_EQ(h.at_least, a.size());
  // Cut inside the last frame: not an exact size either.
  auto c = testing::Zstd(a);
  c.resize(c.size() - 20);
  h = FromFile(ImageKind::kZstd, c);
  EXPECT_FALSE(h.exact.has_value());
}

TEST_F(CompressedSizeTest, GzipIsizeIsOnlyALowerBound) {
  auto a = Sample(200000, 8), b = Sample(3000, 9);
  SizeHint h = FromFile(ImageKind::kGzip, Cat(testing::Gzip(a), testing::Gzip(b)));
  EXPECT_FALSE(h.exact.has_value());
  EXPECT_EQ(h.at_least, b.size());  // the last member's ISIZE
}

TEST_F(CompressedSizeTest, StreamHeadsGiveTheFirstFramesSize) {
  auto a = Sample(100000, 10);
  SizeHint h = SizeFromHead(ImageKind::kZstd, testing::Zstd(a));
  EXPECT_FALSE(h.exact.has_value());  // more frames may follow on a stream
  EXPECT_EQ(h.at_least, a.size());
  EXPECT_EQ(SizeFromHead(ImageKind::kZstd, testing::Zstd(a, false)).at_least, 0u);
  EXPECT_EQ(SizeFromHead(ImageKind::kLz4, testing::Lz4(a, /*record_size=*/true)).at_least, a.size());
  EXPECT_EQ(SizeFromHead(ImageKind::kLz4, testing::Lz4(a)).at_least, 0u);
  EXPECT_EQ(SizeFromHead(ImageKind::kGzip, testing::Gzip(a)).at_least, 0u);
  EXPECT_EQ(SizeFromHead(ImageKind::kBzip2, testing::Bzip2(a)).at_least, 0u);
}

}  // namespace
}  // namespace flashpipe::input
