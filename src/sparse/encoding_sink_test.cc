#include "sparse/encoding_sink.h"

#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <string>

#include "sparse/decoder.h"

namespace flashpipe::sparse {
namespace {

// A seekable Output in memory.
class MemoryOutput : public Output {
 public:
  std::vector<uint8_t> bytes;
  Status Write(std::span<const uint8_t> a, std::span<const uint8_t> b) override {
    bytes.insert(bytes.end(), a.begin(), a.end());
    bytes.insert(bytes.end(), b.begin(), b.end());
    return Status::Ok();
  }
  bool seekable() const override { return true; }
  Status WriteAt(uint64_t offset, std::span<const uint8_t> data) override {
    std::memcpy(bytes.data() + offset, data.data(), data.size());
    return Status::Ok();
  }
};

// Decodes a sparse image: the expanded bytes (DONT_CARE as 0xDC) and the
// chunk kinds in order ("R3 F1:0 D2": RAW of 3 blocks, FILL of 1 with
// pattern 0, DONT_CARE of 2).
struct Decoded {
  std::vector<uint8_t> image;
  std::string chunks;
};

class DecodeSink : public Sink {
 public:
  Decoded out;
  Status OnHeader(const FileHeader& h) override {
    out.image.assign(h.image_size(), 0xDC);
    return Status::Ok();
  }
  Status OnRaw(uint64_t off, std::span<const uint8_t> d) override {
    std::memcpy(out.image.data() + off, d.data(), d.size());
    return Status::Ok();
  }
  Status OnFill(uint64_t off, uint64_t len, uint32_t pattern) override {
    for (uint64_t i = 0; i < len; i += 4) std::memcpy(out.image.data() + off + i, &pattern, 4);
    return Status::Ok();
  }
  Status OnSkip(uint64_t, uint64_t) override { return Status::Ok(); }
  Status OnChunk(const ChunkInfo& c) override {
    if (!out.chunks.empty()) out.chunks += ' ';
    const char* kind = c.type == kChunkRaw ? "R" : c.type == kChunkFill ? "F" : "D";
    out.chunks += fmt::format("{}{}", kind, c.blocks);
    if (c.type == kChunkFill) out.chunks += fmt::format(":{:x}", c.value);
    return Status::Ok();
  }
};

Decoded Decode(const std::vector<uint8_t>& sparse) {
  DecodeSink sink;
  Decoder d(&sink);
  Status s = d.Feed(sparse);
  if (s.ok()) s = d.Finish();
  EXPECT_TRUE(s.ok()) << s.ToString();
  return sink.out;
}

std::unique_ptr<EncodingSink> Make(MemoryOutput* out, uint64_t size, uint32_t blk = 4096) {
  auto s = EncodingSink::Create(out, blk, size);
  EXPECT_TRUE(s.ok()) << s.status().ToString();
  return std::move(s).value();
}

std::vector<uint8_t> Random(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> v(n);
  for (auto& b : v) b = static_cast<uint8_t>(rng() | 1);  // never a uniform block
  return v;
}

TEST(EncodingSinkTest, BlocksBecomeRawFillOrDontCare) {
  MemoryOutput out;
  auto sink = Make(&out, 10 * 4096);
  std::vector<uint8_t> data = Random(3 * 4096, 1);
  std::memset(data.data() + 4096, 0, 4096);  // a zero block inside RAW data
  ASSERT_TRUE(sink->OnRaw(0, data).ok());
  ASSERT_TRUE(sink->OnFill(3 * 4096, 2 * 4096, 0x11223344).ok());
  // Gap of two blocks, then data again.
  ASSERT_TRUE(sink->OnRaw(7 * 4096, std::span(data).first(4096)).ok());
  ASSERT_TRUE(sink->Finish().ok());
  Decoded d = Decode(out.bytes);
  EXPECT_EQ(d.chunks, "R1 F1:0 R1 F2:11223344 D2 R1 D2");
  EXPECT_TRUE(std::equal(data.begin(), data.end(), d.image.begin()));
}

TEST(EncodingSinkTest, AdjacentRunsOfAKindMergeAcrossEvents) {
  MemoryOutput out;
  auto sink = Make(&out, 8 * 4096);
  std::vector<uint8_t> data = Random(4 * 4096, 2);
  ASSERT_TRUE(sink->OnRaw(0, std::span(data).first(4096)).ok());
  ASSERT_TRUE(sink->OnRaw(4096, std::span(data).subspan(4096)).ok());
  ASSERT_TRUE(sink->OnFill(4 * 4096, 4096, 0).ok());
  ASSERT_TRUE(sink->OnRaw(5 * 4096, std::vector<uint8_t>(4096, 0)).ok());  // zeros as data: same FILL
  ASSERT_TRUE(sink->OnSkip(6 * 4096, 4096).ok());
  ASSERT_TRUE(sink->Finish().ok());
  EXPECT_EQ(Decode(out.bytes).chunks, "R4 F2:0 D2");
}

// Events that start and end anywhere: the expanded image must equal the
// events' bytes wherever an event defined them, and a block is DONT_CARE
// only where no event touched it.
TEST(EncodingSinkTest, UnalignedEventsShareBlocks) {
  for (uint32_t seed = 1; seed <= 200; ++seed) {
    std::mt19937 rng(seed);
    const uint32_t blk = 512;
    const uint64_t size = blk * (4 + rng() % 12);
    std::vector<uint8_t> expect(size, 0);
    std::vector<bool> defined(size, false);
    MemoryOutput out;
    auto sink = Make(&out, size, blk);
    uint64_t pos = 0;
    while (pos < size) {
      uint64_t gap = rng() % 3 == 0 ? rng() % 700 : 0;
      uint64_t at = std::min(size, pos + gap);
      uint64_t len = std::min<uint64_t>(size - at, 1 + rng() % 1500) & ~uint64_t{3};
      if (len == 0) break;
      switch (rng() % 3) {
        case 0: {
          std::vector<uint8_t> d = Random(len, seed * 1000 + static_cast<uint32_t>(at));
          if (rng() % 4 == 0) std::fill(d.begin(), d.end(), 0);
          ASSERT_TRUE(sink->OnRaw(at, d).ok());
          std::copy(d.begin(), d.end(), expect.begin() + at);
          std::fill(defined.begin() + at, defined.begin() + at + len, true);
          break;
        }
        case 1: {
          const uint32_t pattern = rng() % 2 ? 0 : rng();
          ASSERT_TRUE(sink->OnFill(at, len, pattern).ok());
          for (uint64_t i = 0; i < len; i += 4) std::memcpy(expect.data() + at + i, &pattern, 4);
          std::fill(defined.begin() + at, defined.begin() + at + len, true);
          break;
        }
        default:
          ASSERT_TRUE(sink->OnSkip(at, len).ok());
      }
      pos = at + len;
    }
    ASSERT_TRUE(sink->Finish().ok());
    Decoded d = Decode(out.bytes);
    ASSERT_EQ(d.image.size(), size);
    for (uint64_t i = 0; i < size; ++i) {
      if (defined[i]) {
        ASSERT_EQ(d.image[i], expect[i]) << "seed " << seed << " byte " << i;
      }
      const uint64_t b = i / blk * blk;
      const bool touched = std::any_of(defined.begin() + b, defined.begin() + b + blk, [](bool x) { return x; });
      if (touched && !defined[i]) {
        ASSERT_EQ(d.image[i], 0) << "seed " << seed << " byte " << i;
      } else if (!touched) {
        ASSERT_EQ(d.image[i], 0xDC) << "seed " << seed << " byte " << i;
      }
    }
  }
}

TEST(EncodingSinkTest, RefusesEventsOutOfOrderOrPastTheEnd) {
  MemoryOutput out;
  auto sink = Make(&out, 4 * 4096);
  ASSERT_TRUE(sink->OnFill(8192, 4096, 0).ok());
  EXPECT_EQ(sink->OnRaw(4096, std::vector<uint8_t>(16, 1)).message(),
            "an event at byte 0x1000 comes after byte 0x3000: events must come in increasing order");
  EXPECT_EQ(sink->OnSkip(12288, 8192).message(), "8192 bytes at byte 0x3000 run past the image's 16384 bytes");
  EXPECT_EQ(EncodingSink::Create(&out, 4096, 5000).status().message(),
            "image size 5000 is not a non-zero multiple of the block size 4096 (at most 2^32-1 blocks)");
}

}  // namespace
}  // namespace flashpipe::sparse
