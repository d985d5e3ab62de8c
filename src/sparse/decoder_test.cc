#include "sparse/decoder.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "base/crc32.h"
#include "testing/sparse_builder.h"

namespace flashpipe::sparse {
namespace {

using testing::SparseBuilder;

// Records events; adjacent OnRaw pieces are merged so that events do not
// depend on how the input was sliced.
struct Event {
  char kind;  // H, R, F, S, E
  uint64_t offset = 0;
  uint64_t length = 0;
  uint32_t pattern = 0;
  std::vector<uint8_t> data;
  bool operator==(const Event&) const = default;
};

class RecordingSink : public Sink {
 public:
  Status OnHeader(const FileHeader& h) override {
    events.push_back({'H', h.blk_sz, h.total_blks, h.total_chunks});
    return Status::Ok();
  }
  Status OnRaw(uint64_t offset, std::span<const uint8_t> d) override {
    if (!events.empty() && events.back().kind == 'R' &&
        events.back().offset + events.back().data.size() == offset) {
      events.back().data.insert(events.back().data.end(), d.begin(), d.end());
    } else {
      events.push_back({'R', offset, 0, 0, {d.begin(), d.end()}});
    }
    return Status::Ok();
  }
  Status OnFill(uint64_t offset, uint64_t length, uint32_t pattern) override {
    events.push_back({'F', offset, length, pattern});
    return Status::Ok();
  }
  Status OnSkip(uint64_t offset, uint64_t length) override {
    events.push_back({'S', offset, length});
    return Status::Ok();
  }
  Status OnEnd() override {
    events.push_back({'E'});
    return Status::Ok();
  }
  // The image the events describe, skips as zeros.
  std::vector<uint8_t> Expand(uint64_t size) const {
    std::vector<uint8_t> img(size, 0);
    for (const Event& e : events) {
      if (e.kind == 'R') std::copy(e.data.begin(), e.data.end(), img.begin() + e.offset);
      if (e.kind == 'F') {
        for (uint64_t i = 0; i < e.length; i += 4) StoreLE<uint32_t>(img.data() + e.offset + i, e.pattern);
      }
    }
    return img;
  }
  std::vector<Event> events;
};

// Feeds `in` in one piece (slice 0), one byte at a time (slice 1) or in
// random slices (slice > 1 used as a seed); returns Feed's or Finish's status.
Status Decode(const std::vector<uint8_t>& in, Sink* sink, DecoderOptions opt = {}, uint32_t slice = 0) {
  Decoder d(sink, opt);
  std::mt19937 rng(slice);
  size_t pos = 0;
  while (pos < in.size()) {
    size_t n = in.size() - pos;
    if (slice == 1) n = 1;
    if (slice > 1) n = std::min<size_t>(n, rng() % 7000 + 1);
    Status s = d.Feed({in.data() + pos, n});
    if (!s.ok()) return s;
    pos += n;
  }
  return d.Finish();
}

std::string DecodeError(const std::vector<uint8_t>& in, DecoderOptions opt = {}) {
  RecordingSink sink;
  Status s = Decode(in, &sink, opt);
  std::string one_byte = Decode(in, &sink, opt, 1).ToString();
  EXPECT_EQ(s.ToString(), one_byte) << "error depends on slicing";
  if (!s.ok()) {
    EXPECT_EQ(s.code(), Code::kCorrupt);
  }
  return s.ok() ? "OK" : s.message();
}

TEST(DecoderTest, ValidImageEventsAndExpandedImage) {
  SparseBuilder b(4096);
  b.RawBlocks(2, 1).Fill(3, 0xAABBCCDD).DontCare(1).RawBlocks(1, 2).Crc();
  RecordingSink sink;
  ASSERT_TRUE(Decode(b.Build(), &sink).ok());
  ASSERT_EQ(sink.events.size(), 6u);
  EXPECT_EQ(sink.events[0], (Event{'H', 4096, 7, 5}));
  EXPECT_EQ(sink.events[1].kind, 'R');
  EXPECT_EQ(sink.events[1].data.size(), 8192u);
  EXPECT_EQ(sink.events[2], (Event{'F', 8192, 12288, 0xAABBCCDD}));
  EXPECT_EQ(sink.events[3], (Event{'S', 20480, 4096}));
  EXPECT_EQ(sink.events[4].offset, 24576u);
  EXPECT_EQ(sink.events[5].kind, 'E');
  EXPECT_EQ(sink.Expand(7 * 4096), b.expanded());
}

TEST(DecoderTest, BadMagic) {
  SparseBuilder b;
  b.DontCare(1).header().magic = 0x12345678;
  EXPECT_EQ(DecodeError(b.Build()), "file header at input byte 0x0: bad magic 0x12345678 (expected 0xed26ff3a)");
}

TEST(DecoderTest, MajorVersion) {
  SparseBuilder b;
  b.DontCare(1).header().major_version = 2;
  EXPECT_EQ(DecodeError(b.Build()), "file header at input byte 0x0: major_version 2 unsupported (expected 1)");
}

TEST(DecoderTest, MinorVersionIgnored) {
  SparseBuilder b;
  b.DontCare(1).header().minor_version = 7;
  EXPECT_EQ(DecodeError(b.Build()), "OK");
}

TEST(DecoderTest, FileHeaderTooSmall) {
  SparseBuilder b;
  b.DontCare(1).header().file_hdr_sz = 20;
  EXPECT_EQ(DecodeError(b.Build()), "file header at input byte 0x0: file_hdr_sz 20 < 28");
}

TEST(DecoderTest, ChunkHeaderTooSmall) {
  SparseBuilder b;
  b.DontCare(1).header().chunk_hdr_sz = 8;
  EXPECT_EQ(DecodeError(b.Build()), "file header at input byte 0x0: chunk_hdr_sz 8 < 12");
}

TEST(DecoderTest, BlockSizeZero) {
  SparseBuilder b;
  b.DontCare(1).SetTotalBlocks(1).header().blk_sz = 0;
  EXPECT_EQ(DecodeError(b.Build()), "file header at input byte 0x0: blk_sz 0 is not a non-zero multiple of 4");
}

TEST(DecoderTest, BlockSizeNotMultipleOfFour) {
  SparseBuilder b;
  b.DontCare(1).SetTotalBlocks(1).header().blk_sz = 4094;
  EXPECT_EQ(DecodeError(b.Build()), "file header at input byte 0x0: blk_sz 4094 is not a non-zero multiple of 4");
}

TEST(DecoderTest, TotalBlocksZero) {
  SparseBuilder b;
  b.SetTotalBlocks(0);
  EXPECT_EQ(DecodeError(b.Build()), "file header at input byte 0x0: total_blks is 0");
}

TEST(DecoderTest, LargerHeadersSkippedWithSameEvents) {
  SparseBuilder small(1024), large(1024);
  for (SparseBuilder* b : {&small, &large}) b->RawBlocks(3, 9).Fill(2, 7).DontCare(4).RawBlocks(1, 3).Crc();
  large.header().file_hdr_sz = 32;
  large.header().chunk_hdr_sz = 16;
  RecordingSink a, c;
  ASSERT_TRUE(Decode(small.Build(), &a).ok());
  for (uint32_t slice : {0u, 1u, 5u}) {
    c.events.clear();
    Status s = Decode(large.Build(), &c, {}, slice);
    ASSERT_TRUE(s.ok()) << s.ToString();
    EXPECT_EQ(a.events, c.events);
  }
}

TEST(DecoderTest, RawTotalSizeMismatch) {
  SparseBuilder b;
  b.Chunk(kChunkRaw, 1, std::vector<uint8_t>(4096), 40).SetTotalBlocks(1);
  EXPECT_EQ(DecodeError(b.Build()), "chunk 0 at input byte 0x1c: RAW total_sz 40 != 12 + 1 * 4096");
}

TEST(DecoderTest, RawTotalSizeNoOverflow) {
  // 2^20 blocks of 4096 bytes is 2^32: a 32-bit product would wrap to 0 and
  // the header-only total_sz would pass.
  SparseBuilder b;
  b.DontCare(1).Chunk(kChunkRaw, 1u << 20, {}, 12).SetTotalBlocks((1u << 20) + 1);
  EXPECT_EQ(DecodeError(b.Build()), "chunk 1 at input byte 0x28: RAW total_sz 12 != 12 + 1048576 * 4096");
}

TEST(DecoderTest, FillPayloadSize) {
  SparseBuilder b;
  b.DontCare(1).Chunk(kChunkFill, 1, std::vector<uint8_t>(8)).SetTotalBlocks(2);
  EXPECT_EQ(DecodeError(b.Build()), "chunk 1 at input byte 0x28: FILL total_sz 20 != 12 + 4");
}

TEST(DecoderTest, CrcPayloadSize) {
  SparseBuilder b;
  b.DontCare(1).Chunk(kChunkCrc32, 0, {});
  EXPECT_EQ(DecodeError(b.Build()), "chunk 1 at input byte 0x28: CRC32 total_sz 12 != 12 + 4");
}

TEST(DecoderTest, DontCarePayloadSize) {
  SparseBuilder b;
  b.Chunk(kChunkDontCare, 1, std::vector<uint8_t>(4)).SetTotalBlocks(1);
  EXPECT_EQ(DecodeError(b.Build()), "chunk 0 at input byte 0x1c: DONT_CARE total_sz 16 != 12");
}

TEST(DecoderTest, UnknownChunkType) {
  SparseBuilder b;
  b.RawBlocks(1, 1).Chunk(0xCAC5, 1, std::vector<uint8_t>(100)).SetTotalBlocks(2);
  EXPECT_EQ(DecodeError(b.Build()), "chunk 1 at input byte 0x1028: unknown chunk type 0xcac5");
}

TEST(DecoderTest, OutputRunsPastTotalBlocks) {
  SparseBuilder b;
  b.DontCare(2).Fill(3, 1).SetTotalBlocks(4);
  EXPECT_EQ(DecodeError(b.Build()), "chunk 1 at input byte 0x28: FILL of 3 blocks at block 2 runs past total_blks 4");
}

TEST(DecoderTest, BlocksShortOfTotal) {
  SparseBuilder b;
  b.DontCare(2).Fill(1, 1).SetTotalBlocks(4);
  EXPECT_EQ(DecodeError(b.Build()), "input byte 0x38: the 2 chunks cover 3 blocks but total_blks is 4");
}

TEST(DecoderTest, FewerChunksThanTotalChunks) {
  SparseBuilder b;
  b.DontCare(2).Fill(1, 1).SetTotalChunks(3).SetTotalBlocks(4);
  EXPECT_EQ(DecodeError(b.Build()), "input byte 0x38: truncated after 2 of 3 chunks");
}

TEST(DecoderTest, MoreChunksThanTotalChunks) {
  SparseBuilder b;
  b.DontCare(2).DontCare(1).SetTotalChunks(1).SetTotalBlocks(2);
  EXPECT_EQ(DecodeError(b.Build()), "input byte 0x28: data after the last chunk (total_chunks 1)");
}

TEST(DecoderTest, DataAfterLastChunk) {
  SparseBuilder b;
  b.DontCare(2).Trailer({0});
  EXPECT_EQ(DecodeError(b.Build()), "input byte 0x28: data after the last chunk (total_chunks 1)");
}

TEST(DecoderTest, EmptyInput) { EXPECT_EQ(DecodeError({}), "input byte 0x0: empty input, no sparse file header"); }

TEST(DecoderTest, TruncatedFileHeader) {
  auto in = SparseBuilder().DontCare(1).Build();
  in.resize(10);
  EXPECT_EQ(DecodeError(in), "input byte 0xa: truncated in the file header (10 of 28 bytes)");
}

TEST(DecoderTest, TruncatedChunkHeader) {
  auto in = SparseBuilder().DontCare(1).Fill(1, 0).Build();
  in.resize(28 + 12 + 5);
  EXPECT_EQ(DecodeError(in), "chunk 1 at input byte 0x28: truncated in the chunk header (5 of 12 bytes) at input byte 0x2d");
}

TEST(DecoderTest, TruncatedRawPayload) {
  auto in = SparseBuilder().RawBlocks(2, 1).Build();
  in.resize(in.size() - 1);
  EXPECT_EQ(DecodeError(in), "chunk 0 at input byte 0x1c: truncated RAW payload (8191 of 8192 bytes) at input byte 0x2027");
}

TEST(DecoderTest, TruncatedFillValue) {
  auto in = SparseBuilder().Fill(2, 1).Build();
  in.resize(in.size() - 2);
  EXPECT_EQ(DecodeError(in), "chunk 0 at input byte 0x1c: truncated FILL value (2 of 4 bytes) at input byte 0x2a");
}

TEST(DecoderTest, TruncatedInExtraHeaderBytes) {
  SparseBuilder b;
  b.DontCare(1).header().chunk_hdr_sz = 20;
  auto in = b.Build();
  in.resize(28 + 15);
  EXPECT_EQ(DecodeError(in), "chunk 0 at input byte 0x1c: truncated in the chunk header (5 bytes missing) at input byte 0x2b");
}

TEST(DecoderTest, CrcChunkMatches) {
  SparseBuilder b(1024);
  b.RawBlocks(3, 4).Crc().Fill(5, 0x01020304).DontCare(7).Crc().RawBlocks(1, 5).Crc();
  EXPECT_EQ(DecodeError(b.Build()), "OK");
}

TEST(DecoderTest, CrcChunkMismatch) {
  SparseBuilder b(1024);
  b.RawBlocks(1, 4).CrcValue(0xdeadbeef);
  uint32_t good = b.expanded_crc();
  EXPECT_EQ(DecodeError(b.Build()),
            fmt::format("chunk 1 at input byte 0x428: CRC32 0xdeadbeef != 0x{:08x}, the CRC-32 of the 1024 bytes "
                        "of output so far", good));
  EXPECT_EQ(DecodeError(b.Build(), {.check_crc = false}), "OK");
}

TEST(DecoderTest, LibsparseWriterCrcRecognised) {
  // libsparse's writer adds one block of a FILL and nothing for DONT_CARE.
  SparseBuilder b(1024);
  b.RawBlocks(1, 4).Fill(3, 0x55).DontCare(2);
  std::vector<uint8_t> wrong(b.expanded().begin(), b.expanded().begin() + 2048);
  uint32_t libsparse_crc = Crc32Update(0, wrong.data(), wrong.size());
  b.CrcValue(libsparse_crc);
  EXPECT_EQ(DecodeError(b.Build()),
            fmt::format("chunk 3 at input byte 0x444: CRC32 0x{:08x} != 0x{:08x}, the CRC-32 of the 6144 bytes of "
                        "output so far; it equals libsparse's miscomputed writer CRC (FILL counted as one block, "
                        "DONT_CARE not counted), so the data is probably intact: check_crc=false / --no-crc-check "
                        "skips the check", libsparse_crc, b.expanded_crc()));
  EXPECT_EQ(DecodeError(b.Build(), {.check_crc = false}), "OK");
}

TEST(DecoderTest, CrcChunkSizeIgnored) {
  SparseBuilder b;
  b.DontCare(1).Crc();
  auto in = b.Build();
  in[28 + 12 + 4] = 5;  // CRC32 chunk_sz = 5, as libsparse accepts
  EXPECT_EQ(DecodeError(in), "OK");
}

TEST(DecoderTest, CrcUncheckableBeyond2To60Bytes) {
  // 2^31 blocks of 2^30 bytes: 2^61 bytes of DONT_CARE, then a CRC chunk.
  SparseBuilder b(4);
  b.header().blk_sz = 1u << 30;
  b.Chunk(kChunkDontCare, 1u << 31, {}).CrcValue(0).SetTotalBlocks(1u << 31);
  EXPECT_EQ(DecodeError(b.Build()),
            "chunk 1 at input byte 0x28: CRC32 cannot be checked after 2^60 bytes of output (check_crc=false / "
            "--no-crc-check skips it)");
  EXPECT_EQ(DecodeError(b.Build(), {.check_crc = false}), "OK");
}

// The AOSP fastboot client's split part without its final DONT_CARE.
SparseBuilder MissingTail() {
  SparseBuilder b(4096);
  b.RawBlocks(2, 1).DontCare(1).SetTotalBlocks(5).SetTotalChunks(3);
  return b;
}

TEST(DecoderTest, MissingTailRejectedByDefault) {
  EXPECT_EQ(DecodeError(MissingTail().Build()), "input byte 0x2034: truncated after 2 of 3 chunks");
}

TEST(DecoderTest, MissingTailToleratedReportsSkip) {
  RecordingSink sink;
  Status s = Decode(MissingTail().Build(), &sink, {.tolerate_missing_tail = true});
  ASSERT_TRUE(s.ok()) << s.ToString();
  ASSERT_EQ(sink.events.size(), 5u);
  EXPECT_EQ(sink.events[3], (Event{'S', 12288, 8192}));
  EXPECT_EQ(sink.events[4].kind, 'E');
}

TEST(DecoderTest, MissingTailToleratesOnlyOneChunk) {
  auto b = MissingTail().SetTotalChunks(4);
  EXPECT_EQ(DecodeError(b.Build(), {.tolerate_missing_tail = true}), "input byte 0x2034: truncated after 2 of 4 chunks");
}

TEST(DecoderTest, MissingTailStillRejectsMidChunkTruncation) {
  auto in = MissingTail().Build();
  in.resize(in.size() - 12 - 1);
  EXPECT_EQ(DecodeError(in, {.tolerate_missing_tail = true}),
            "chunk 0 at input byte 0x1c: truncated RAW payload (8191 of 8192 bytes) at input byte 0x2027");
}

TEST(DecoderTest, SinkErrorReturnedUnchangedAndSticky) {
  struct FailingSink : RecordingSink {
    Status OnFill(uint64_t, uint64_t, uint32_t) override { return NoSpace("target full"); }
  } sink;
  auto in = SparseBuilder().DontCare(1).Fill(1, 1).DontCare(1).Build();
  Decoder d(&sink);
  Status s = d.Feed(in);
  EXPECT_EQ(s.code(), Code::kNoSpace);
  EXPECT_EQ(s.message(), "target full");
  EXPECT_EQ(d.Feed(in).message(), "target full");
  EXPECT_EQ(d.Finish().message(), "target full");
}

TEST(DecoderTest, AdvanceRawZeroCopy) {
  SparseBuilder b(1024);
  b.RawBlocks(4, 8).Fill(1, 3).Crc();
  auto in = b.Build();
  RecordingSink sink;
  Decoder d(&sink);
  ASSERT_TRUE(d.Feed({in.data(), 28 + 12}).ok());
  ASSERT_EQ(d.raw_pending(), 4096u);
  EXPECT_EQ(d.raw_output_offset(), 0u);
  const uint8_t* payload = in.data() + 40;
  ASSERT_TRUE(d.Feed({payload, 100}).ok());  // mixed: 100 fed, the rest advanced
  EXPECT_EQ(d.raw_output_offset(), 100u);
  ASSERT_TRUE(d.AdvanceRaw(3996, Crc32Update(0, payload + 100, 3996)).ok());
  EXPECT_EQ(d.raw_pending(), 0u);
  EXPECT_EQ(d.input_offset(), 40u + 4096);
  EXPECT_EQ(d.chunks_done(), 1u);
  Status s = d.Feed({in.data() + 40 + 4096, in.size() - 40 - 4096});
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_TRUE(d.finished());
  EXPECT_TRUE(d.Finish().ok());
  EXPECT_EQ(d.AdvanceRaw(1, 0).code(), Code::kInternal);
}

TEST(DecoderTest, AdvanceRawWrongCrcIsCaught) {
  SparseBuilder b(1024);
  b.RawBlocks(1, 8).Crc();
  auto in = b.Build();
  RecordingSink sink;
  Decoder d(&sink);
  ASSERT_TRUE(d.Feed({in.data(), 40}).ok());
  ASSERT_TRUE(d.AdvanceRaw(1024, 0x1234).ok());
  EXPECT_NE(d.Feed({in.data() + 40 + 1024, in.size() - 40 - 1024}).message().find("CRC32 0x"), std::string::npos);
}

SparseBuilder RandomImage(std::mt19937& rng) {
  static constexpr uint32_t kBlockSizes[] = {4, 16, 512, 1024, 4096};
  SparseBuilder b(kBlockSizes[rng() % 5]);
  if (rng() % 4 == 0) b.header().file_hdr_sz = 28 + rng() % 8;
  if (rng() % 4 == 0) b.header().chunk_hdr_sz = 12 + rng() % 8;
  int chunks = 1 + rng() % 12;
  for (int i = 0; i < chunks; ++i) {
    uint32_t blocks = rng() % 6;
    switch (rng() % 4) {
      case 0: b.RawBlocks(blocks, rng()); break;
      case 1: b.Fill(blocks, rng() % 2 ? rng() : 0); break;
      case 2: b.DontCare(blocks); break;
      case 3: b.Crc(); break;
    }
  }
  if (b.blocks() == 0) b.DontCare(1);
  return b;
}

TEST(DecoderTest, SlicingDoesNotChangeEvents) {
  std::mt19937 rng(42);
  for (int i = 0; i < 200; ++i) {
    SparseBuilder b = RandomImage(rng);
    auto in = b.Build();
    RecordingSink whole, bytes, slices;
    Status s = Decode(in, &whole);
    ASSERT_TRUE(s.ok()) << "image " << i << ": " << s.ToString();
    ASSERT_TRUE(Decode(in, &bytes, {}, 1).ok());
    ASSERT_TRUE(Decode(in, &slices, {}, 1000 + i).ok());
    EXPECT_EQ(whole.events, bytes.events) << "image " << i;
    EXPECT_EQ(whole.events, slices.events) << "image " << i;
    EXPECT_EQ(whole.Expand(b.expanded().size()), b.expanded()) << "image " << i;
  }
}

TEST(DecoderTest, SlicingDoesNotChangeErrors) {
  // Random corruption of a random image: same status however it is fed.
  std::mt19937 rng(7);
  for (int i = 0; i < 200; ++i) {
    auto in = RandomImage(rng).Build();
    in[rng() % in.size()] ^= static_cast<uint8_t>(1 + rng() % 255);
    if (rng() % 3 == 0) in.resize(rng() % in.size());
    RecordingSink a, c, e;
    std::string whole = Decode(in, &a).ToString();
    EXPECT_EQ(whole, Decode(in, &c, {}, 1).ToString()) << "image " << i;
    EXPECT_EQ(whole, Decode(in, &e, {}, 77 + i).ToString()) << "image " << i;
    EXPECT_EQ(a.events, c.events) << "image " << i;
  }
}

}  // namespace
}  // namespace flashpipe::sparse

namespace flashpipe::sparse {
namespace {

TEST(DecoderTest, OnChunkReportsOffsetsAndValues) {
  struct ChunkSink : RecordingSink {
    Status OnChunk(const ChunkInfo& c) override {
      chunks.push_back(c);
      return Status::Ok();
    }
    std::vector<ChunkInfo> chunks;
  } sink;
  testing::SparseBuilder b(1024);
  b.header().chunk_hdr_sz = 16;
  b.RawBlocks(2, 1).Fill(3, 0xABCD).DontCare(1).Crc();
  ASSERT_TRUE(Decode(b.Build(), &sink, {}, 1).ok());
  ASSERT_EQ(sink.chunks.size(), 4u);
  const ChunkInfo& raw = sink.chunks[0];
  EXPECT_EQ(raw.type, kChunkRaw);
  EXPECT_EQ(raw.input_offset, 28u);
  EXPECT_EQ(raw.payload_offset, 28u + 16);
  EXPECT_EQ(raw.total_sz, 16u + 2048);
  EXPECT_EQ(sink.chunks[1].index, 1u);
  EXPECT_EQ(sink.chunks[1].output_offset, 2048u);
  EXPECT_EQ(sink.chunks[1].value, 0xABCDu);
  EXPECT_EQ(sink.chunks[2].output_offset, 5u * 1024);
  EXPECT_EQ(sink.chunks[3].type, kChunkCrc32);
  EXPECT_TRUE(sink.chunks[3].crc_checked);
  EXPECT_EQ(sink.chunks[3].computed_crc, b.expanded_crc());
  EXPECT_EQ(sink.chunks[3].value, b.expanded_crc());
  EXPECT_EQ(sink.chunks[3].input_offset, 28u + 16 + 2048 + 20 + 16);
}

}  // namespace
}  // namespace flashpipe::sparse
