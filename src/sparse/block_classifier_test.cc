// The block kinds BlockClassifier tells, for aligned and unaligned events
// and for an image whose size is not a multiple of the block size.
#include "sparse/block_classifier.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace flashpipe::sparse {
namespace {

// "D3" = 3 data blocks, "U2:0" = 2 uniform blocks of pattern 0, "X1" = 1 undefined.
class Recorder : public BlockSink {
 public:
  explicit Recorder(uint32_t blk) : blk_(blk) {}
  Status OnDataBlocks(std::span<const uint8_t> b) override {
    log.push_back("D" + std::to_string(b.size() / blk_));
    data.insert(data.end(), b.begin(), b.end());
    return Status::Ok();
  }
  Status OnUniformBlocks(uint64_t n, uint32_t p) override {
    log.push_back(fmt::format("U{}:{:x}", n, p));
    return Status::Ok();
  }
  Status OnUndefinedBlocks(uint64_t n) override {
    log.push_back("X" + std::to_string(n));
    return Status::Ok();
  }
  std::vector<std::string> log;
  std::vector<uint8_t> data;

 private:
  uint32_t blk_;
};

std::vector<uint8_t> Random(size_t n, uint8_t seed) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<uint8_t>(i * 131 + seed + (i >> 7));
  return v;
}

using Log = std::vector<std::string>;

TEST(BlockClassifierTest, AlignedRawSplitsIntoDataAndUniformRuns) {
  Recorder r(16);
  BlockClassifier c(&r, 16, UINT64_MAX);
  auto data = Random(64, 1);
  std::fill(data.begin() + 16, data.begin() + 48, 0);  // blocks 1 and 2 are zeros
  ASSERT_TRUE(c.OnRaw(0, data).ok());
  ASSERT_TRUE(c.OnFill(64, 32, 0xAABBCCDD).ok());
  ASSERT_TRUE(c.OnSkip(112, 16).ok());  // the gap 96..112 too
  EXPECT_EQ(r.log, (Log{"D1", "U2:0", "D1", "U2:aabbccdd", "X2"}));
  EXPECT_EQ(c.position(), 128u);
}

TEST(BlockClassifierTest, UnalignedEventsArePutTogetherPerBlock) {
  Recorder r(16);
  BlockClassifier c(&r, 16, UINT64_MAX);
  auto data = Random(10, 2);
  ASSERT_TRUE(c.OnRaw(3, data).ok());       // block 0: 3 skipped bytes (zeros), 10 data, ...
  ASSERT_TRUE(c.OnFill(20, 12, 0).ok());    // ... 3 skipped, then zeros to 32: block 1 uniform 0
  ASSERT_TRUE(c.OnSkip(32, 40).ok());       // blocks 2..3 undefined, block 4 partly skipped
  ASSERT_TRUE(c.OnFill(72, 8, 0x01010101).ok());  // block 4: 8 skipped + 8 fill: data
  EXPECT_EQ(r.log, (Log{"D1", "U1:0", "X2", "D1"}));
  ASSERT_EQ(r.data.size(), 32u);
  EXPECT_EQ(r.data[0], 0);
  EXPECT_EQ(r.data[3], data[0]);
  EXPECT_EQ(r.data[16 + 8], 1);
}

TEST(BlockClassifierTest, SkipToPadsTheLastPartialBlockWithZeros) {
  Recorder r(16);
  BlockClassifier c(&r, 16, 37);  // an image of 37 bytes
  auto data = Random(37, 3);
  ASSERT_TRUE(c.OnRaw(0, data).ok());
  EXPECT_EQ(r.log, (Log{"D2"}));
  ASSERT_TRUE(c.SkipTo(37).ok());
  EXPECT_EQ(r.log, (Log{"D2", "D1"}));
  EXPECT_EQ(c.position(), 48u);
  EXPECT_EQ(r.data[36], data[36]);
  EXPECT_EQ(r.data[37], 0);
  EXPECT_EQ(r.data[47], 0);
  // A partial block of zeros only is uniform, not data.
  Recorder z(16);
  BlockClassifier cz(&z, 16, 20);
  ASSERT_TRUE(cz.OnRaw(0, std::vector<uint8_t>(20, 0)).ok());
  ASSERT_TRUE(cz.SkipTo(20).ok());
  EXPECT_EQ(z.log, (Log{"U1:0", "U1:0"}));
}

TEST(BlockClassifierTest, OutOfOrderAndPastTheLimitAreErrors) {
  Recorder r(16);
  BlockClassifier c(&r, 16, 64);
  ASSERT_TRUE(c.OnSkip(0, 32).ok());
  EXPECT_EQ(c.OnRaw(16, Random(16, 4)).message(),
            "an event at byte 0x10 comes after byte 0x20: events must come in increasing order");
  EXPECT_EQ(c.OnFill(48, 32, 0).message(), "32 bytes at byte 0x30 run past the image's 64 bytes");
}

}  // namespace
}  // namespace flashpipe::sparse
