#include "input/decompress_reader.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <random>

#include "testing/compress.h"
#include "testing/image_recorder.h"

namespace flashpipe::input {
namespace {

using testing::ByteVectorReader;

// Compressible but not trivial: runs of random bytes and zeros.
std::vector<uint8_t> Sample(size_t size, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> v(size);
  for (size_t i = 0; i < size; i += 4096) {
    bool zero = rng() % 3 == 0;
    for (size_t j = i; j < std::min(size, i + 4096); ++j) v[j] = zero ? 0 : static_cast<uint8_t>(rng() % 7);
  }
  return v;
}

std::vector<uint8_t> Gzip(const std::vector<uint8_t>& in) { return testing::Gzip(in, 6); }
std::vector<uint8_t> Xz(const std::vector<uint8_t>& in) { return testing::Xz(in); }
std::vector<uint8_t> Zstd(const std::vector<uint8_t>& in) { return testing::Zstd(in); }
std::vector<uint8_t> Bzip2(const std::vector<uint8_t>& in) { return testing::Bzip2(in); }
std::vector<uint8_t> Lz4(const std::vector<uint8_t>& in) { return testing::Lz4(in); }

struct Format {
  ImageKind kind;
  std::vector<uint8_t> (*compress)(const std::vector<uint8_t>&);
};

class DecompressTest : public ::testing::TestWithParam<Format> {
 protected:
  // Decompresses with small buffers and reads so that every boundary moves.
  Result<std::vector<uint8_t>> Run(std::vector<uint8_t> compressed, size_t max_read = 777) {
    DecompressOptions o{.buffer_size = 10000, .buffers = 3, .input_chunk = 3001};
    auto r = DecompressReader::Start(GetParam().kind, std::make_unique<ByteVectorReader>(std::move(compressed), max_read, "x.img"), o);
    if (!r.ok()) return r.status();
    std::vector<uint8_t> out;
    std::vector<uint8_t> buf(4099);
    while (true) {
      auto n = (*r)->Read(buf);
      if (!n.ok()) return n.status();
      if (*n == 0) break;
      out.insert(out.end(), buf.begin(), buf.begin() + static_cast<long>(*n));
    }
    return out;
  }
};

TEST_P(DecompressTest, RoundTrip) {
  auto data = Sample(300000, 1);
  auto out = Run(GetParam().compress(data));
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(*out, data);
}

TEST_P(DecompressTest, ConcatenatedMembersAreAllDecoded) {
  auto a = Sample(70000, 2), b = Sample(50001, 3);
  auto ca = GetParam().compress(a), cb = GetParam().compress(b);
  ca.insert(ca.end(), cb.begin(), cb.end());
  auto out = Run(ca);
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  a.insert(a.end(), b.begin(), b.end());
  EXPECT_EQ(*out, a);
}

TEST_P(DecompressTest, TruncatedStreamIsAnErrorWithOffsets) {
  auto c = GetParam().compress(Sample(300000, 4));
  c.resize(c.size() * 2 / 3);
  auto out = Run(c);
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), Code::kCorrupt) << out.status().ToString();
  EXPECT_NE(out.status().message().find("compressed byte"), std::string::npos) << out.status().ToString();
  EXPECT_NE(out.status().message().find("x.img"), std::string::npos) << out.status().ToString();
}

TEST_P(DecompressTest, TruncatedAtTheLastByteIsAnError) {
  auto c = GetParam().compress(Sample(20000, 5));
  c.pop_back();
  EXPECT_FALSE(Run(c).ok());
}

TEST_P(DecompressTest, CorruptDataIsAnError) {
  auto data = Sample(300000, 6);
  auto c = GetParam().compress(data);
  for (size_t i = c.size() / 2; i < c.size() / 2 + 64; ++i) c[i] ^= 0x5A;
  auto out = Run(c);
  ASSERT_FALSE(out.ok()) << "corruption went unnoticed";
  EXPECT_EQ(out.status().code(), Code::kCorrupt) << out.status().ToString();
}

TEST_P(DecompressTest, TrailingGarbageIsAnError) {
  auto c = GetParam().compress(Sample(10000, 7));
  for (int i = 0; i < 32; ++i) c.push_back(static_cast<uint8_t>(0x41 + i));
  EXPECT_FALSE(Run(c).ok());
}

INSTANTIATE_TEST_SUITE_P(AllFormats, DecompressTest,
                         ::testing::Values(Format{ImageKind::kGzip, Gzip}, Format{ImageKind::kXz, Xz},
                                           Format{ImageKind::kZstd, Zstd}, Format{ImageKind::kBzip2, Bzip2},
                                           Format{ImageKind::kLz4, Lz4}),
                         [](const auto& info) { return std::string(KindName(info.param.kind)); });

TEST(DecompressReaderTest, ReadErrorOfTheSourceIsReported) {
  int p[2];
  ASSERT_EQ(pipe(p), 0);
  auto c = Gzip(Sample(100000, 8));
  ASSERT_EQ(write(p[1], c.data(), c.size() / 2), static_cast<ssize_t>(c.size() / 2));
  close(p[1]);  // the writer dies mid-stream
  auto r = DecompressReader::Start(ImageKind::kGzip, FdReader::Own(UniqueFd(p[0]), "fifo"));
  ASSERT_TRUE(r.ok());
  std::vector<uint8_t> buf(1 << 16);
  Status last;
  while (true) {
    auto n = (*r)->Read(buf);
    if (!n.ok()) { last = n.status(); break; }
    if (*n == 0) break;
  }
  EXPECT_EQ(last.code(), Code::kCorrupt) << last.ToString();
  EXPECT_NE(last.message().find("truncated"), std::string::npos) << last.ToString();
}

TEST(DecompressReaderTest, DestroyingWhileTheWriterIsSilentDoesNotHang) {
  int p[2];
  ASSERT_EQ(pipe(p), 0);
  auto c = Gzip(Sample(100000, 9));
  ASSERT_EQ(write(p[1], c.data(), 100), 100);  // and then nothing, writer still open
  auto start = std::chrono::steady_clock::now();
  {
    auto r = DecompressReader::Start(ImageKind::kGzip, FdReader::Own(UniqueFd(p[0]), "fifo"));
    ASSERT_TRUE(r.ok());
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(3));
  close(p[1]);
}

TEST(CodecTest, RawHasNoCodec) {
  EXPECT_EQ(MakeCodec(ImageKind::kRaw).status().code(), Code::kInvalidArgument);
}

}  // namespace
}  // namespace flashpipe::input
