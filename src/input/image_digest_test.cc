// ImageDigest and TapSink: the SHA-256 of the expanded image from the events
// (gaps as zeros, file ranges read again, out of order refused), and the
// sink that feeds it, splits long file ranges and stops on a cancel.
#include "input/image_digest.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <random>

#include "base/crc32.h"
#include "input/bmap.h"
#include "input/tap_sink.h"
#include "testing/image_recorder.h"
#include "testing/temp_dir.h"

namespace flashpipe::input {
namespace {

std::string Sha256(std::span<const uint8_t> bytes) {
  auto d = Digest::Create("sha256");
  d->Update(bytes);
  return d->HexFinal();
}

std::vector<uint8_t> Random(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> v(n);
  for (auto& b : v) b = static_cast<uint8_t>(rng());
  return v;
}

TEST(ImageDigestTest, DataFillsFileRangesAndGapsInOrder) {
  testing::TempDir dir;
  std::vector<uint8_t> file = Random(3 << 20, 1);
  testing::WriteFile(dir.File("f"), file);
  int fd = ::open(dir.File("f").c_str(), O_RDONLY);
  ASSERT_GE(fd, 0);
  std::vector<uint8_t> data = Random(100000, 2);

  // The image: data, a gap, a pattern, a file range, a trailing gap.
  std::vector<uint8_t> want(data);
  want.resize(want.size() + 5000, 0);
  for (int i = 0; i < 4096; ++i) want.push_back(static_cast<uint8_t>(0x04030201u >> (8 * (i % 4))));
  uint64_t file_at = want.size();
  want.insert(want.end(), file.begin() + 1000, file.begin() + 1000 + (2 << 20));
  want.resize(want.size() + 7777, 0);

  auto d = ImageDigest::Start();
  ASSERT_TRUE(d.ok());
  (*d)->Data(0, data);
  (*d)->Fill(data.size() + 5000, 4096, 0x04030201);
  (*d)->FileRange(file_at, fd, 1000, 2 << 20);
  std::optional<std::string> got = (*d)->Finish(want.size());
  ::close(fd);
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(*got, Sha256(want));
}

TEST(ImageDigestTest, OverlapOrAnEventPastTheEndGivesNone) {
  auto d = ImageDigest::Start();
  std::vector<uint8_t> data(4096, 1);
  (*d)->Data(0, data);
  (*d)->Data(2048, data);  // overlaid parts
  EXPECT_FALSE((*d)->Finish(8192).has_value());
  d = ImageDigest::Start();
  (*d)->Fill(0, 8192, 0);
  EXPECT_FALSE((*d)->Finish(4096).has_value());
}

TEST(ImageDigestTest, AShortFileRangeGivesNone) {
  testing::TempDir dir;
  testing::WriteFile(dir.File("f"), std::vector<uint8_t>(1000, 3));
  int fd = ::open(dir.File("f").c_str(), O_RDONLY);
  auto d = ImageDigest::Start();
  (*d)->FileRange(0, fd, 0, 4096);
  EXPECT_FALSE((*d)->Finish(4096).has_value());
  ::close(fd);
}

TEST(ImageDigestTest, AProducerFarAheadOfTheThreadNeitherReordersNorDropsData) {
  // 96 MiB of data in events of uneven sizes between fills and gaps, handed
  // over as fast as the producer can: the queue fills (64 MiB), buffers are
  // reused, and the digest is still that of the whole, in order.
  std::vector<uint8_t> pool = Random(1 << 20, 7);
  std::vector<uint8_t> want;
  auto d = ImageDigest::Start();
  ASSERT_TRUE(d.ok());
  std::mt19937 rng(9);
  while (want.size() < (96u << 20)) {
    size_t n = 1 + rng() % (3 << 20);
    size_t from = rng() % pool.size();
    std::vector<uint8_t> data(n);
    for (size_t i = 0; i < n; ++i) data[i] = static_cast<uint8_t>(pool[(from + i) % pool.size()] + want.size());
    (*d)->Data(want.size(), data);
    want.insert(want.end(), data.begin(), data.end());
    std::fill(data.begin(), data.end(), 0xEE);  // the caller's buffer is its own again at once
    if (rng() % 4 == 0) {
      uint64_t gap = (rng() % 64) << 10;
      want.resize(want.size() + gap, 0);
      (*d)->Fill(want.size(), 8192, 0x11223344);
      for (int i = 0; i < 8192; ++i) want.push_back(static_cast<uint8_t>(0x11223344u >> (8 * (i % 4))));
    }
  }
  std::optional<std::string> got = (*d)->Finish(want.size());
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(*got, Sha256(want));
  EXPECT_GE((*d)->waited(), 0);
  EXPECT_GT((*d)->bytes_per_second(), 0);
}

TEST(ImageDigestTest, DestroyedUnfinishedWithMuchQueued) {
  auto d = ImageDigest::Start();
  std::vector<uint8_t> data(1 << 20, 5);
  for (int i = 0; i < 32; ++i) (*d)->Data(uint64_t(i) << 20, data);
  d->reset();  // no hang, no leak (ASan)
}

// Counts RawFromFd calls and their sizes; the default RawFromFd reads into OnRaw.
class CountingSink : public testing::ImageRecorder {
 public:
  Result<uint32_t> RawFromFd(uint64_t out, int fd, uint64_t in, uint64_t n) override {
    sizes.push_back(n);
    return ImageSink::RawFromFd(out, fd, in, n);
  }
  std::vector<uint64_t> sizes;
};

TEST(TapSinkTest, SplitsLongFileRangesWithTheSameCrcAndFeedsTheDigest) {
  testing::TempDir dir;
  std::vector<uint8_t> file = Random(40 << 20, 3);
  testing::WriteFile(dir.File("f"), file);
  int fd = ::open(dir.File("f").c_str(), O_RDONLY);
  CountingSink inner;
  auto d = ImageDigest::Start();
  TapSink tap(&inner, nullptr, d->get());
  auto crc = tap.RawFromFd(0, fd, 0, file.size());
  ASSERT_TRUE(crc.ok()) << crc.status().ToString();
  EXPECT_EQ(*crc, Crc32Update(0, file.data(), file.size()));
  EXPECT_EQ(inner.sizes, (std::vector<uint64_t>{16 << 20, 16 << 20, 8 << 20}));
  EXPECT_EQ((*d)->Finish(file.size()).value_or(""), Sha256(file));
  ::close(fd);
}

TEST(TapSinkTest, StopsOnCancelBetweenPieces) {
  testing::TempDir dir;
  std::vector<uint8_t> file = Random(40 << 20, 4);
  testing::WriteFile(dir.File("f"), file);
  int fd = ::open(dir.File("f").c_str(), O_RDONLY);
  CancelFlag cancel;
  class CancelAfterOne : public CountingSink {
   public:
    CancelFlag* flag = nullptr;
    Result<uint32_t> RawFromFd(uint64_t out, int fd, uint64_t in, uint64_t n) override {
      flag->Cancel(2);
      return CountingSink::RawFromFd(out, fd, in, n);
    }
  } inner;
  inner.flag = &cancel;
  TapSink tap(&inner, &cancel, nullptr);
  auto crc = tap.RawFromFd(0, fd, 0, file.size());
  EXPECT_EQ(crc.status().code(), Code::kCancelled);
  EXPECT_EQ(inner.sizes.size(), 1u);
  EXPECT_EQ(tap.OnFill(0, 4096, 0).code(), Code::kCancelled);
  ::close(fd);
}

}  // namespace
}  // namespace flashpipe::input
