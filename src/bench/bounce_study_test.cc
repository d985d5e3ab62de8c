#include "bench/bounce_study.h"

#include <gtest/gtest.h>

#include <cstring>
#include <deque>

#include "bench/sim_queue.h"
#include "testing/sparse_builder.h"
#include "testing/temp_dir.h"

namespace flashpipe::bench {
namespace {

// Executes writes into memory and records each request's offset and length.
class MemoryQueue : public io::IoQueue {
 public:
  explicit MemoryQueue(size_t size) : bytes(size, 0xAA) {}
  std::vector<uint8_t> bytes;
  std::vector<std::pair<uint64_t, uint64_t>> writes;
  unsigned max_in_flight = 0;
  bool synced = false;

  std::string_view name() const override { return "memory"; }
  unsigned depth() const override { return 8; }
  unsigned in_flight() const override { return static_cast<unsigned>(pending_.size()); }
  Status Submit(const io::IoOp& op) override {
    if (op.kind != io::OpKind::kWrite) return Unsupported("memory queue: writes only");
    if (op.offset + op.length > bytes.size()) return NoSpace("memory queue: beyond the end");
    std::memcpy(bytes.data() + op.offset, op.buf, op.length);
    writes.emplace_back(op.offset, op.length);
    pending_.push_back(op.tag);
    max_in_flight = std::max(max_in_flight, in_flight());
    return Status::Ok();
  }
  Result<io::IoCompletion> Wait() override {
    io::IoCompletion c{pending_.front(), Status::Ok()};
    pending_.pop_front();
    return c;
  }
  Status Sync() override {
    synced = true;
    return Status::Ok();
  }

 private:
  std::deque<uint64_t> pending_;
};

// The image in a file of its own, removed with its directory.
struct TempImage {
  explicit TempImage(const std::vector<uint8_t>& data) { testing::WriteFile(path, data); }
  testing::TempDir dir;
  std::string path = dir / "image.simg";
};

// A device of `size` bytes on `queue` (512-byte blocks, buffered), the image
// written from byte `base`.
io::Device Dev(io::IoQueue* queue, uint64_t size, uint64_t base = 0) {
  io::Geometry g{.size = size, .logical_block = 512, .physical_block = 4096, .mem_align = 4096,
                 .offset_align = 4096, .max_request = 1 << 20, .direct = false};
  return io::Device{"mem", queue, g, base, size - base};
}

// 25 RAW blocks (100 KiB), 3 FILL, 2 DONT_CARE, 1 RAW, 4 zero FILL.
testing::SparseBuilder Sample() {
  testing::SparseBuilder b(4096);
  b.RawBlocks(25, 1).Fill(3, 0x11223344).DontCare(2).RawBlocks(1, 2).Fill(4, 0);
  return b;
}

TEST(BounceStudyTest, WritesLikeABootloaderThroughTheBuffer) {
  auto b = Sample();
  TempImage img(b.Build());
  auto summary = SummarizeSparse(img.path);
  ASSERT_TRUE(summary.ok()) << summary.status().ToString();
  EXPECT_EQ(summary->image_size, 35u * 4096);
  EXPECT_EQ(summary->raw_bytes, 26u * 4096);
  EXPECT_EQ(summary->fill_bytes, 7u * 4096);
  EXPECT_EQ(summary->zero_fill_bytes, 4u * 4096);
  EXPECT_EQ(summary->skip_bytes, 2u * 4096);
  EXPECT_EQ(summary->largest_raw, 25u * 4096);

  const uint64_t base = 1 << 20;
  MemoryQueue q(base + summary->image_size);
  ManualClock clock;
  StudyVariant v;
  v.buffer_blocks = 100;  // 51200 bytes of 512-byte blocks
  auto r = RunVariant(img.path, *summary, v, Dev(&q, q.bytes.size(), base), {}, clock);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const std::vector<std::pair<uint64_t, uint64_t>> want = {
      {base, 51200}, {base + 51200, 51200},  // RAW: two full buffers
      {base + 25 * 4096, 3 * 4096},          // FILL from the fill buffer
      {base + 30 * 4096, 4096},              // RAW after the DONT_CARE
      {base + 31 * 4096, 4 * 4096},          // zero FILL written too
  };
  EXPECT_EQ(q.writes, want);
  EXPECT_EQ(q.max_in_flight, 1u);  // blocking
  EXPECT_TRUE(q.synced);
  EXPECT_EQ(r->requests, 5u);
  EXPECT_EQ(r->data_bytes, 33u * 4096);
  const auto& exp = b.expanded();
  EXPECT_TRUE(std::equal(exp.begin(), exp.begin() + 25 * 4096, q.bytes.begin() + base));
  EXPECT_TRUE(std::equal(exp.begin() + 30 * 4096, exp.end(), q.bytes.begin() + base + 30 * 4096));
  EXPECT_EQ(q.bytes[base + 28 * 4096], 0xAA);  // DONT_CARE untouched
}

TEST(BounceStudyTest, ChunkBufferWritesEachChunkOnce) {
  auto b = Sample();
  TempImage img(b.Build());
  auto summary = SummarizeSparse(img.path);
  ASSERT_TRUE(summary.ok());
  MemoryQueue q(summary->image_size);
  ManualClock clock;
  StudyVariant v;
  v.chunk = true;
  auto r = RunVariant(img.path, *summary, v, Dev(&q, q.bytes.size()), {}, clock);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(q.writes.size(), 4u);
  EXPECT_EQ(q.writes[0], std::make_pair(uint64_t{0}, uint64_t{25 * 4096}));
}

// On the simulated eMMC with no host cost (ManualClock), a bounce run takes
// exactly the sum of its requests' service times: 26 RAW blocks through a
// 4 KiB buffer, and each FILL chunk in one request from the fill buffer.
TEST(BounceStudyTest, SimTimeIsTheSumOfServiceTimes) {
  auto b = Sample();
  TempImage img(b.Build());
  auto summary = SummarizeSparse(img.path);
  ASSERT_TRUE(summary.ok());
  const SimSpec s = *ParseSimSpec("sim:size=64M,bw=45M,cmd_us=300");
  ManualClock clock;
  SimQueue q(s, &clock, 1);
  StudyVariant v;
  v.buffer_blocks = 8;  // 4 KiB: one request per RAW block
  auto r = RunVariant(img.path, *summary, v, Dev(&q, s.size), {}, clock);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->requests, 28u);
  EXPECT_EQ(r->ns, 26 * SimServiceNs(s, io::OpKind::kWrite, 4096) + SimServiceNs(s, io::OpKind::kWrite, 3 * 4096) +
                       SimServiceNs(s, io::OpKind::kWrite, 4 * 4096));
}

TEST(BounceStudyTest, PipelinedEngineBeatsSmallBuffersOnTheSim) {
  testing::SparseBuilder b(4096);
  b.RawBlocks(1024, 3).Fill(256, 0).RawBlocks(512, 4);  // 6 MiB
  TempImage img(b.Build());
  auto summary = SummarizeSparse(img.path);
  ASSERT_TRUE(summary.ok());
  const SimSpec s = *ParseSimSpec("sim:size=64M,bw=45M,cmd_us=300");
  ManualClock clock;
  SimQueue q1(s, &clock, 1);
  StudyVariant v;
  v.buffer_blocks = 100;
  auto bounce = RunVariant(img.path, *summary, v, Dev(&q1, s.size), {}, clock);
  ASSERT_TRUE(bounce.ok()) << bounce.status().ToString();
  SimQueue q4(s, &clock, 4);
  io::Device dev{"sim", &q4, SimGeometry(s), 0, summary->image_size};
  io::WriterOptions wo;
  wo.request_size = 1 << 20;
  StudyVariant pv;
  pv.pipelined = true;
  auto piped = RunVariant(img.path, *summary, pv, dev, wo, clock);
  ASSERT_TRUE(piped.ok()) << piped.status().ToString();
  // 51200-byte requests pay 300 us each on top of the bytes; 1 MiB ones 1/20 as often.
  EXPECT_LT(piped->ns, bounce->ns);
  EXPECT_GT(double(bounce->ns) / double(piped->ns), 1.2);
  EXPECT_EQ(q4.stats().bytes, 1536u * 4096);  // zero FILL was zeroed, not written
  EXPECT_EQ(piped->data_bytes, bounce->data_bytes);
}

TEST(BounceStudyTest, ParsesBufferBlocks) {
  auto v = ParseBufferBlocks("100,16384,chunk");
  ASSERT_TRUE(v.ok());
  ASSERT_EQ(v->size(), 3u);
  EXPECT_EQ(VariantLabel((*v)[0]), "buffer 100 blocks");
  EXPECT_EQ(VariantLabel((*v)[2]), "buffer = chunk");
  EXPECT_EQ(ParseBufferBlocks("100,x").status().message(), "--buffer-blocks: 'x' is not a block count or 'chunk'");
  StudyResult r{(*v)[0], 2'000'000'000, 10'000'000, 0};
  EXPECT_EQ(FormatStudyLine(r, 500'000'000), "buffer 100 blocks: 2.000 s, 5.0 MB/s (4.00x the fastest)");
  EXPECT_EQ(FormatStudyLine(r, 2'000'000'000), "buffer 100 blocks: 2.000 s, 5.0 MB/s (fastest)");
}

}  // namespace
}  // namespace flashpipe::bench
