// Verify's digests: one SHA-256 per run of bytes the image defines (RAW and
// FILL that follow on), a DONT_CARE ends a run; a raw image of odd size is
// one range of exactly its bytes; the device's two INFO halves put together.
#include "host/verify.h"

#include <gtest/gtest.h>

#include "base/sha256.h"
#include "testing/sparse_builder.h"
#include "testing/temp_dir.h"

namespace flashpipe::host {
namespace {

std::string Hex(std::span<const uint8_t> bytes) {
  Sha256 h;
  h.Update(bytes);
  return Sha256::Hex(h.Final());
}

TEST(VerifyTest, SparseImageGapsSplitRanges) {
  testing::TempDir dir;
  testing::SparseBuilder b(4096);
  b.RawBlocks(2, 1).Fill(3, 0xAABBCCDD).DontCare(4).RawBlocks(1, 2).Fill(1, 0);
  testing::WriteFile(dir.File("a.simg"), b.Build());
  auto ranges = ImageDigests({.path = dir.File("a.simg")});
  ASSERT_TRUE(ranges.ok()) << ranges.status().ToString();
  ASSERT_EQ(ranges->size(), 2u);
  const auto& img = b.expanded();
  EXPECT_EQ((*ranges)[0].offset, 0u);
  EXPECT_EQ((*ranges)[0].size, 5u * 4096);
  EXPECT_EQ((*ranges)[0].sha256, Hex(std::span(img).first(5 * 4096)));
  EXPECT_EQ((*ranges)[1].offset, 9u * 4096);
  EXPECT_EQ((*ranges)[1].size, 2u * 4096);
  EXPECT_EQ((*ranges)[1].sha256, Hex(std::span(img).subspan(9 * 4096, 2 * 4096)));
}

TEST(VerifyTest, OddRawImageIsOneRangeOfItsBytes) {
  testing::TempDir dir;
  std::vector<uint8_t> raw(3 * 4096 + 77, 0x5A);
  raw[5] = 1;
  testing::WriteFile(dir.File("a.raw"), raw);
  auto ranges = ImageDigests({.path = dir.File("a.raw")});
  ASSERT_TRUE(ranges.ok()) << ranges.status().ToString();
  ASSERT_EQ(ranges->size(), 1u);
  EXPECT_EQ((*ranges)[0].size, raw.size());
  EXPECT_EQ((*ranges)[0].sha256, Hex(raw));
}

TEST(VerifyTest, StdinCannotBeVerified) {
  auto ranges = ImageDigests({.path = "-"});
  ASSERT_FALSE(ranges.ok());
  EXPECT_EQ(ranges.status().code(), Code::kInvalidArgument);
}

TEST(VerifyTest, DigestFromTwoInfoHalves) {
  std::string a(32, 'a'), b(32, 'b');
  EXPECT_EQ(DigestFromInfo({"reading", "sha256 1/2 " + a, "sha256 2/2 " + b}), a + b);
  EXPECT_EQ(DigestFromInfo({"sha256 1/2 " + a}), "");
  EXPECT_EQ(DigestFromInfo({"sha256 1/2 " + a, "sha256 2/2 short"}), "");
}

}  // namespace
}  // namespace flashpipe::host
