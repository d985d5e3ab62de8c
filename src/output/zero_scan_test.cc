#include "output/zero_scan.h"

#include <gtest/gtest.h>

#include "base/zero.h"
#include "output/output_test_util.h"

namespace flashpipe::output {
namespace {

using test::Run;

// Runs must tile [0, length), start on block boundaries, and data runs must
// hold no all-zero block.
void CheckRuns(const test::RunRecorder& rec, const std::vector<uint8_t>& image) {
  uint64_t at = 0;
  for (const Run& r : rec.runs) {
    EXPECT_EQ(r.offset, at);
    EXPECT_EQ(r.offset % kRunBlock, 0u);
    if (r.offset + r.length != image.size()) EXPECT_EQ(r.length % kRunBlock, 0u);
    if (r.kind == Run::kData) {
      for (uint64_t b = r.offset; b < r.offset + r.length; b += kRunBlock) {
        uint64_t n = std::min<uint64_t>(kRunBlock, image.size() - b);
        EXPECT_FALSE(IsAllZero({image.data() + b, n})) << "zero block at " << b << " sent as data";
      }
    }
    at += r.length;
  }
  EXPECT_EQ(at, image.size());
  EXPECT_EQ(rec.finished_length, image.size());
}

TEST(ZeroScanTest, PiecesCutAnywhereBecomeBlockRunsWithTheSameBytes) {
  for (uint32_t seed = 1; seed <= 20; ++seed) {
    auto image = test::SampleImage(300, seed, seed % 3 == 0 ? 1000 : 0);
    test::RunRecorder rec;
    ZeroScan scan(&rec, image.size());
    ASSERT_TRUE(test::FeedPieces(scan, image, {}, seed).ok());
    EXPECT_EQ(rec.image, image) << "seed " << seed;
    CheckRuns(rec, image);
    const ScanStats& s = scan.stats();
    EXPECT_EQ(s.data_bytes + s.zero_bytes + s.hole_bytes, image.size());
    EXPECT_EQ(s.hole_bytes, 0u);
  }
}

TEST(ZeroScanTest, AdjacentZeroRunsOfOneKindAreMerged) {
  std::vector<uint8_t> image(64 * 4096, 0);
  image[40 * 4096] = 1;
  test::RunRecorder rec;
  ZeroScan scan(&rec, image.size());
  ASSERT_TRUE(test::FeedPieces(scan, image, {}, 3).ok());
  ASSERT_EQ(rec.runs.size(), 3u);
  EXPECT_EQ(rec.runs[0].kind, Run::kZeroRead);
  EXPECT_EQ(rec.runs[0].length, 40u * 4096);
  EXPECT_EQ(rec.runs[1].kind, Run::kData);
  EXPECT_EQ(rec.runs[2].length, 23u * 4096);
}

TEST(ZeroScanTest, HolesAreTheirOwnKindAndABlockPartlyReadCountsAsRead) {
  std::vector<uint8_t> image(32 * 4096, 0);
  image[3] = 7;  // block 0 holds data
  // A hole over blocks 4..9, and one starting mid-block 20 (512 in).
  std::vector<std::pair<uint64_t, uint64_t>> holes = {{4 * 4096, 6 * 4096}, {20 * 4096 + 512, 4096 * 5 - 512}};
  test::RunRecorder rec;
  ZeroScan scan(&rec, image.size());
  ASSERT_TRUE(test::FeedPieces(scan, image, holes, 5).ok());
  CheckRuns(rec, image);
  auto kind_at = [&](uint64_t block) {
    for (const test::Run& r : rec.runs)
      if (r.offset <= block * 4096 && block * 4096 < r.offset + r.length) return r.kind;
    return Run::kData;
  };
  EXPECT_EQ(kind_at(0), Run::kData);
  EXPECT_EQ(kind_at(1), Run::kZeroRead);
  EXPECT_EQ(kind_at(4), Run::kHole);
  EXPECT_EQ(kind_at(9), Run::kHole);
  EXPECT_EQ(kind_at(20), Run::kZeroRead) << "the first 512 bytes were read";
  EXPECT_EQ(kind_at(21), Run::kHole);
  EXPECT_EQ(kind_at(24), Run::kHole);
  EXPECT_EQ(kind_at(25), Run::kZeroRead);
  const ScanStats& s = scan.stats();
  EXPECT_EQ(s.hole_bytes, 10u * 4096);
  EXPECT_EQ(s.data_bytes + s.zero_bytes + s.hole_bytes, image.size());
}

TEST(ZeroScanTest, APieceOutOfOrderIsAnError) {
  std::vector<uint8_t> image(8192, 1);
  test::RunRecorder rec;
  ZeroScan scan(&rec, image.size());
  EXPECT_FALSE(scan.Piece({4096, 4096, false, {image.data(), 4096}}, 0).ok());
  EXPECT_FALSE(scan.Finish().ok()) << "finishing short of the length";
}

}  // namespace
}  // namespace flashpipe::output
