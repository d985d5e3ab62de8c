#include "input/detect.h"

#include <gtest/gtest.h>

#include <vector>

namespace flashpipe::input {
namespace {

ImageKind Detect(std::vector<uint8_t> b) { return DetectKind(b); }

TEST(DetectTest, EveryMagic) {
  EXPECT_EQ(Detect({0x3A, 0xFF, 0x26, 0xED, 1, 0}), ImageKind::kSparse);
  EXPECT_EQ(Detect({0x1F, 0x8B, 8, 0, 0, 0}), ImageKind::kGzip);
  EXPECT_EQ(Detect({0xFD, '7', 'z', 'X', 'Z', 0}), ImageKind::kXz);
  EXPECT_EQ(Detect({0x28, 0xB5, 0x2F, 0xFD, 0, 0}), ImageKind::kZstd);
  EXPECT_EQ(Detect({'B', 'Z', 'h', '9', '1', 'A'}), ImageKind::kBzip2);
  EXPECT_EQ(Detect({0x04, 0x22, 0x4D, 0x18, 0x64, 0x40}), ImageKind::kLz4);
}

TEST(DetectTest, NearMissesAreRaw) {
  EXPECT_EQ(Detect({0xFD, '7', 'z', 'X', 'Z', 1}), ImageKind::kRaw);  // 6th xz byte
  EXPECT_EQ(Detect({'B', 'Z', 'h', '0'}), ImageKind::kRaw);           // level 0 does not exist
  EXPECT_EQ(Detect({0x3A, 0xFF, 0x26}), ImageKind::kRaw);             // short sparse magic
  EXPECT_EQ(Detect({0, 0, 0, 0, 0, 0}), ImageKind::kRaw);
  EXPECT_EQ(Detect({}), ImageKind::kRaw);
  EXPECT_EQ(Detect({0x1F}), ImageKind::kRaw);
  // A raw image that happens to start 1F 8B (random data: 1 in 65536) is
  // raw unless the next bytes are a gzip header's: CM 8, FLG reserved bits 0.
  EXPECT_EQ(Detect({0x1F, 0x8B, 0x3C, 0x00, 0x11}), ImageKind::kRaw);
  EXPECT_EQ(Detect({0x1F, 0x8B, 0x08, 0xE0, 0x11}), ImageKind::kRaw);
  EXPECT_EQ(Detect({0x1F, 0x8B, 0x08}), ImageKind::kRaw);
  EXPECT_EQ(Detect({0x1F, 0x8B, 0x08, 0x1F, 0x11}), ImageKind::kGzip);
}

TEST(DetectTest, NamesAndCompression) {
  EXPECT_EQ(KindName(ImageKind::kZstd), "zstd");
  EXPECT_EQ(KindName(ImageKind::kRaw), "raw");
  EXPECT_TRUE(IsCompressed(ImageKind::kLz4));
  EXPECT_FALSE(IsCompressed(ImageKind::kSparse));
  EXPECT_FALSE(IsCompressed(ImageKind::kRaw));
}

}  // namespace
}  // namespace flashpipe::input
