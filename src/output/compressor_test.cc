#include "output/compressor.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include "input/byte_reader.h"
#include "input/decompress_reader.h"
#include "output/output_test_util.h"
#include "testing/temp_dir.h"

namespace flashpipe::output {
namespace {

input::ImageKind KindOf(Format f) {
  return f == Format::kZstd ? input::ImageKind::kZstd : f == Format::kXz ? input::ImageKind::kXz : input::ImageKind::kGzip;
}

// Compresses `image` as runs (through a ZeroScan) into a file, and decodes
// it back with the input layer's decompressor, as `flashpipe write` would.
std::vector<uint8_t> RoundTrip(Format f, const std::vector<uint8_t>& image, const CompressOptions& o,
                               unsigned* threads) {
  flashpipe::testing::TempDir dir;
  std::string path = dir.File("out");
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC, 0644);
  sparse::FdOutput out(fd, path);
  auto c = MakeCompressor(f, &out, o);
  EXPECT_TRUE(c.ok()) << c.status().ToString();
  if (!c.ok()) return {};
  *threads = (*c)->threads();
  CompressOutput sink(std::move(*c));
  ZeroScan scan(&sink, image.size());
  EXPECT_TRUE(test::FeedPieces(scan, image, {}, 1).ok());
  ::close(fd);
  UniqueFd in(::open(path.c_str(), O_RDONLY));
  auto r = input::DecompressReader::Start(KindOf(f), input::FdReader::Own(std::move(in), path));
  EXPECT_TRUE(r.ok());
  std::vector<uint8_t> back(image.size() + 1);
  auto n = (*r)->ReadUpTo(back);
  EXPECT_TRUE(n.ok()) << n.status().ToString();
  back.resize(n.ok() ? *n : 0);
  return back;
}

class CompressorTest : public ::testing::TestWithParam<Format> {};

TEST_P(CompressorTest, TheInputLayerDecodesWhatItWrites) {
  auto image = test::SampleImage(400, 21, 77);
  unsigned threads = 0;
  EXPECT_EQ(RoundTrip(GetParam(), image, {.level = 1, .threads = 2}, &threads), image);
  EXPECT_GE(threads, 1u);
}

INSTANTIATE_TEST_SUITE_P(Formats, CompressorTest, ::testing::Values(Format::kZstd, Format::kXz, Format::kGzip),
                         [](const auto& info) { return std::string(FormatName(info.param)); });

TEST(CompressorLimitsTest, ZstdUsesWorkersAndXzStaysInsideItsMemoryBudget) {
  auto image = test::SampleImage(64, 2);
  unsigned threads = 0;
  RoundTrip(Format::kZstd, image, {.threads = 2}, &threads);
  EXPECT_EQ(threads, 2u);
  RoundTrip(Format::kXz, image, {.level = 1, .threads = 2, .memory_budget = 64 << 20}, &threads);
  EXPECT_EQ(threads, 2u) << "xz -1 with 2 threads fits 64 MiB";
  RoundTrip(Format::kXz, image, {.level = 6, .threads = 2, .memory_budget = 64 << 20}, &threads);
  EXPECT_EQ(threads, 1u) << "xz -6 needs more than 64 MiB per thread: one thread";
}

TEST(CompressorLimitsTest, LevelsOutsideTheFormatsRangeAreRefused) {
  EXPECT_TRUE(CheckLevel(Format::kXz, 0).ok());
  EXPECT_FALSE(CheckLevel(Format::kZstd, 0).ok());
  EXPECT_FALSE(CheckLevel(Format::kGzip, 10).ok());
  EXPECT_TRUE(CheckLevel(Format::kGzip, -1).ok());
  Status s = CheckLevel(Format::kSparse, 3);
  EXPECT_NE(s.message().find("--level is for compressed output"), std::string::npos) << s.ToString();
}

}  // namespace
}  // namespace flashpipe::output
