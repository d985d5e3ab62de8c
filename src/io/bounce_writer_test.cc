// The bounce model's exact requests (sizes, offsets, one blocking write at a
// time), its bounds, its errors, and the discard model, on a recording queue
// (testing/fault_queue.h) over a buffered file with an eMMC-like geometry.
#include "io/bounce_writer.h"

#include <fcntl.h>
#include <gtest/gtest.h>

#include <algorithm>

#include "io/queues.h"
#include "io/write_model.h"
#include "sparse/decoder.h"
#include "testing/fault_queue.h"
#include "testing/sparse_builder.h"
#include "testing/temp_dir.h"

namespace flashpipe::io {
namespace {

constexpr uint64_t kWindow = 64 << 10;  // image byte 0 is file byte 64 KiB
constexpr uint64_t kFileSize = 2 << 20;
constexpr uint8_t kOld = 0xAA;

struct Request {
  uint64_t offset, length;
  unsigned in_flight;  // ops already in flight when it was submitted
  bool operator==(const Request&) const = default;
};
std::ostream& operator<<(std::ostream& os, const Request& r) {
  return os << "{" << r.offset << ", " << r.length << ", in flight " << r.in_flight << "}";
}

class BounceWriterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    testing::WriteFile(path(), std::vector<uint8_t>(kFileSize, kOld));
    fd_ = UniqueFd(::open(path().c_str(), O_RDWR | O_CLOEXEC));
    ASSERT_TRUE(fd_.valid());
    inner_ = MakeSyncQueue(fd_.get(), 4);
    fault_ = std::make_unique<testing::FaultQueue>(inner_.get());
    fault_->OnSubmit([this](const IoOp& op) {
      if (op.kind == OpKind::kWrite) requests_.push_back({op.offset - kWindow, op.length, fault_->in_flight()});
    });
    fault_->BeforeSync([this] { ++syncs_; });
  }
  // eMMC-like: 512-byte logical blocks; buffered, so any length may go out.
  Device Dev(uint64_t window_size = kFileSize - kWindow, bool direct = false) {
    Geometry g{.size = kFileSize, .logical_block = 512, .physical_block = 512, .mem_align = 512,
               .offset_align = 512, .max_request = 1 << 20, .direct = direct};
    return Device{"emmc", fault_.get(), g, kWindow, window_size};
  }
  std::string path() const { return dir_ / "disk"; }
  std::vector<uint8_t> Window(uint64_t n) {
    auto all = testing::ReadFile(path());
    return {all.begin() + kWindow, all.begin() + kWindow + static_cast<long>(n)};
  }
  // Decodes `image` into `sink` in slices of `slice` bytes, then Finish.
  static Status Decode(const std::vector<uint8_t>& image, WriteSink& sink, size_t slice) {
    sparse::Decoder d(&sink);
    for (size_t at = 0; at < image.size(); at += slice) {
      FP_RETURN_IF_ERROR(d.Feed({image.data() + at, std::min(slice, image.size() - at)}));
    }
    FP_RETURN_IF_ERROR(d.Finish());
    return sink.Finish();
  }

  testing::TempDir dir_;
  UniqueFd fd_;
  std::unique_ptr<IoQueue> inner_;
  std::unique_ptr<testing::FaultQueue> fault_;
  std::vector<Request> requests_;
  int syncs_ = 0;
};

// RAW 25 blocks, FILL 3, DONT_CARE 2, two RAW chunks of 13 back to back,
// zero FILL 4, FILL 200 (800 KiB, more than the 512 KiB fill buffer).
testing::SparseBuilder Sample() {
  testing::SparseBuilder b(4096);
  b.RawBlocks(25, 1).Fill(3, 0x11223344).DontCare(2).RawBlocks(13, 2).RawBlocks(13, 3).Fill(4, 0);
  b.Fill(200, 0xA5A5A5A5);
  return b;
}

TEST_F(BounceWriterTest, WritesEachChunkThroughTheBufferOneBlockingRequestAtATime) {
  auto b = Sample();
  auto w = BounceWriter::Create(Dev(), {.buffer_bytes = 100 * 512});
  ASSERT_TRUE(w.ok()) << w.status().ToString();
  // 1000-byte slices: the requests depend on chunks, not on how bytes arrive.
  ASSERT_TRUE(Decode(b.Build(), **w, 1000).ok());
  const std::vector<Request> want = {
      {0, 51200, 0},       {51200, 51200, 0},   // RAW 100 KiB: two full buffers
      {102400, 12288, 0},                       // FILL from the fill buffer
      {122880, 51200, 0},  {174080, 2048, 0},   // RAW of 13 blocks: full, then the rest
      {176128, 51200, 0},  {227328, 2048, 0},   // the next RAW chunk starts a new buffer
      {229376, 16384, 0},                       // zero FILL written as data
      {245760, 524288, 0}, {770048, 294912, 0}, // 800 KiB FILL: 512 KiB, then the rest
  };
  EXPECT_EQ(requests_, want);
  EXPECT_EQ(syncs_, 1);
  EXPECT_EQ((*w)->stats().requests, want.size());
  EXPECT_EQ((*w)->stats().bytes_written, 258u * 4096);
  EXPECT_EQ((*w)->stats().bytes_skipped, 2u * 4096);
  EXPECT_EQ((*w)->stats().image_size, 260u * 4096);
  auto disk = Window(260 * 4096);
  const auto& exp = b.expanded();
  EXPECT_TRUE(std::equal(exp.begin(), exp.begin() + 28 * 4096, disk.begin()));
  EXPECT_TRUE(std::all_of(disk.begin() + 28 * 4096, disk.begin() + 30 * 4096, [](uint8_t c) { return c == kOld; }));
  EXPECT_TRUE(std::equal(exp.begin() + 30 * 4096, exp.end(), disk.begin() + 30 * 4096));
}

TEST_F(BounceWriterTest, RawBytesWithoutChunksAreOneChunkEndedByOnEnd) {
  std::vector<uint8_t> data(102400 + 1024, 0x3C);
  auto w = BounceWriter::Create(Dev(), {.buffer_bytes = 100 * 512, .sync = false});
  ASSERT_TRUE(w.ok());
  ASSERT_TRUE((*w)->OnRaw(0, {data.data(), 70000}).ok());
  ASSERT_TRUE((*w)->OnRaw(70000, {data.data() + 70000, data.size() - 70000}).ok());
  ASSERT_TRUE((*w)->OnEnd().ok());
  ASSERT_TRUE((*w)->Finish().ok());
  EXPECT_EQ(requests_, (std::vector<Request>{{0, 51200, 0}, {51200, 51200, 0}, {102400, 1024, 0}}));
  EXPECT_EQ(syncs_, 0);  // sync = false: the caller syncs
  EXPECT_EQ(Window(data.size()), data);
}

TEST_F(BounceWriterTest, NothingOutsideTheWindow) {
  std::vector<uint8_t> data(128 << 10, 0x3C);
  auto w = BounceWriter::Create(Dev(/*window_size=*/64 << 10), {.buffer_bytes = 100 * 512});
  ASSERT_TRUE(w.ok());
  Status st = (*w)->OnRaw(0, data);
  EXPECT_EQ(st.code(), Code::kNoSpace) << st.ToString();
  EXPECT_NE(st.message().find("emmc: write at image offset 0xc800+51200 is outside the window (65536 bytes)"),
            std::string::npos) << st.message();
  EXPECT_EQ(requests_, (std::vector<Request>{{0, 51200, 0}}));
  EXPECT_EQ((*w)->Finish().code(), Code::kNoSpace);  // the first error sticks
  EXPECT_EQ(requests_.size(), 1u);
  EXPECT_EQ(syncs_, 0);
}

TEST_F(BounceWriterTest, AHeaderLargerThanTheWindowIsRefusedBeforeAnyWrite) {
  auto b = Sample();
  auto w = BounceWriter::Create(Dev(/*window_size=*/256 << 10), {.buffer_bytes = 100 * 512});
  ASSERT_TRUE(w.ok());
  EXPECT_EQ(Decode(b.Build(), **w, SIZE_MAX).code(), Code::kNoSpace);
  EXPECT_TRUE(requests_.empty());
}

TEST_F(BounceWriterTest, AFailedWriteNamesTheOffsetAndStopsTheModel) {
  fault_->FailWrites(kWindow + 60000, EIO);
  auto b = Sample();
  auto w = BounceWriter::Create(Dev(), {.buffer_bytes = 100 * 512});
  ASSERT_TRUE(w.ok());
  Status st = Decode(b.Build(), **w, 4096);
  EXPECT_EQ(st.code(), Code::kIoError) << st.ToString();
  EXPECT_NE(st.message().find("0x1c800+51200"), std::string::npos) << st.message();  // file byte 64 KiB + 51200
  EXPECT_EQ(requests_.size(), 2u);
  EXPECT_EQ(syncs_, 0);
}

TEST_F(BounceWriterTest, UnalignedRequestOnADirectDeviceIsRefusedNotSent) {
  std::vector<uint8_t> data(1000, 1);
  auto w = BounceWriter::Create(Dev(kFileSize - kWindow, /*direct=*/true), {.buffer_bytes = 100 * 512});
  ASSERT_TRUE(w.ok());
  ASSERT_TRUE((*w)->OnRaw(0, data).ok());
  EXPECT_EQ((*w)->OnEnd().code(), Code::kUnsupported);
  EXPECT_TRUE(requests_.empty());
}

TEST_F(BounceWriterTest, BufferMustBeWholeBlocks) {
  EXPECT_EQ(BounceWriter::Create(Dev(), {.buffer_bytes = 1000}).status().code(), Code::kInvalidArgument);
  EXPECT_EQ(BounceWriter::Create(Dev(), {.buffer_bytes = 0}).status().code(), Code::kInvalidArgument);
}

TEST_F(BounceWriterTest, WriteModelBounceCountsLogicalBlocks) {
  auto b = Sample();
  auto w = MakeWriteSink(*ParseWriteModel("bounce:16"), Dev(), {});
  ASSERT_TRUE(w.ok()) << w.status().ToString();
  ASSERT_TRUE(Decode(b.Build(), **w, SIZE_MAX).ok());
  ASSERT_FALSE(requests_.empty());
  EXPECT_EQ(requests_[0], (Request{0, 8192, 0}));  // 16 x 512
  EXPECT_EQ(Window(260 * 4096)[0], b.expanded()[0]);
}

TEST_F(BounceWriterTest, DiscardModelChecksRangesAndWritesNothing) {
  auto b = Sample();
  auto w = MakeWriteSink(*ParseWriteModel("discard"), Dev(), {});
  ASSERT_TRUE(w.ok());
  ASSERT_TRUE(Decode(b.Build(), **w, 1000).ok());
  EXPECT_TRUE(requests_.empty());
  EXPECT_EQ(syncs_, 0);
  EXPECT_EQ((*w)->stats().image_size, 260u * 4096);
  EXPECT_EQ((*w)->stats().bytes_written, 0u);
  EXPECT_EQ(Window(4096), std::vector<uint8_t>(4096, kOld));

  auto small = MakeWriteSink(*ParseWriteModel("discard"), Dev(/*window_size=*/4096), {});
  ASSERT_TRUE(small.ok());
  std::vector<uint8_t> data(8192);
  EXPECT_EQ((*small)->OnRaw(0, data).code(), Code::kNoSpace);
}

// A logical partition's window: two extents out of device order. A request
// that crosses the first extent's end goes out as one request per extent;
// nothing lands outside them, and an image past their total is refused by
// both models before anything is issued.
TEST_F(BounceWriterTest, AWindowOfExtentsSplitsRequestsAtExtentEnds) {
  Device d = Dev();
  d.window_offset = 0;
  d.window_size = 0;
  d.extents = {{kWindow + (1 << 20), 40 << 10}, {kWindow, 80 << 10}};  // 120 KiB
  std::vector<uint8_t> data(100 << 10);
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<uint8_t>(i * 7 + 1);
  auto w = BounceWriter::Create(d, {.buffer_bytes = 100 * 512});
  ASSERT_TRUE(w.ok()) << w.status().ToString();
  ASSERT_TRUE((*w)->OnRaw(0, data).ok());
  ASSERT_TRUE((*w)->Finish().ok());
  EXPECT_EQ(requests_, (std::vector<Request>{{1 << 20, 40960, 0}, {0, 10240, 0}, {10240, 51200, 0}}));
  auto file = testing::ReadFile(path());
  EXPECT_TRUE(std::equal(data.begin(), data.begin() + 40960, file.begin() + kWindow + (1 << 20)));
  EXPECT_TRUE(std::equal(data.begin() + 40960, data.end(), file.begin() + kWindow));
  EXPECT_TRUE(std::all_of(file.begin() + kWindow + 61440, file.begin() + kWindow + (1 << 20),
                          [](uint8_t c) { return c == kOld; }));
  EXPECT_TRUE(std::all_of(file.begin(), file.begin() + kWindow, [](uint8_t c) { return c == kOld; }));

  requests_.clear();
  std::vector<uint8_t> big(124 << 10, 1);
  for (const char* model : {"bounce:100", "discard"}) {
    auto sink = MakeWriteSink(*ParseWriteModel(model), d, {});
    ASSERT_TRUE(sink.ok()) << sink.status().ToString();
    sparse::FileHeader h{.blk_sz = 4096, .total_blks = 31};
    Status st = (*sink)->OnHeader(h);
    EXPECT_EQ(st.code(), Code::kNoSpace) << model;
    EXPECT_NE(st.message().find("outside the window (122880 bytes)"), std::string::npos) << st.message();
  }
  EXPECT_TRUE(requests_.empty());
}

TEST_F(BounceWriterTest, PipelinedModelIsTheEngine) {
  auto b = Sample();
  auto w = MakeWriteSink(*ParseWriteModel("pipelined"), Dev(), {});
  ASSERT_TRUE(w.ok()) << w.status().ToString();
  ASSERT_TRUE(Decode(b.Build(), **w, 1000).ok());
  EXPECT_NE(dynamic_cast<ImageWriter*>(w->get()), nullptr);
  EXPECT_LT(requests_.size(), 10u);  // coalesced, not one per bounce buffer
  auto disk = Window(28 * 4096);
  EXPECT_TRUE(std::equal(disk.begin(), disk.end(), b.expanded().begin()));
}

TEST(WriteModelTest, ParsesAndNamesEachModel) {
  for (const char* text : {"pipelined", "bounce:100", "bounce:16384", "discard"}) {
    auto m = ParseWriteModel(text);
    ASSERT_TRUE(m.ok()) << text << ": " << m.status().ToString();
    EXPECT_EQ(WriteModelName(*m), text);
  }
  EXPECT_EQ(ParseWriteModel("bounce:100")->bounce_blocks, 100u);
  EXPECT_EQ(ParseWriteModel("fast").status().message(), "write model 'fast': expected pipelined, bounce:N or discard");
  for (const char* bad : {"bounce", "bounce:", "bounce:0", "bounce:-1", "bounce:12x", "bounce:1048577"}) {
    EXPECT_EQ(ParseWriteModel(bad).status().code(), Code::kInvalidArgument) << bad;
  }
  EXPECT_EQ(ParseWriteModel("bounce:0").status().message(),
            "write model 'bounce:0': N of bounce:N must be a block count, 1..1048576");
}

}  // namespace
}  // namespace flashpipe::io
