// ImageWriter under faults (testing/fault_queue.h) and bad events: a clear
// error naming the offset, nothing outside the window, no hang, no crash.
#include <gtest/gtest.h>

#include "io/image_writer.h"
#include "testing/fault_queue.h"
#include "testing/image_events.h"
#include "testing/temp_dir.h"

namespace flashpipe::io {
namespace {

class WriterFaultTest : public ::testing::TestWithParam<Backend> {
 protected:
  // A 16 MiB file; the writer's window is [window_offset, +window_size).
  void Open(uint64_t window_offset = 0, uint64_t window_size = 0, bool fresh = true) {
    TargetOptions o;
    o.create = true;
    if (fresh) o.truncate_to = 16 << 20;
    else testing::WriteFile(path(), std::vector<uint8_t>(16 << 20, 0x5A));
    o.window_offset = window_offset;
    o.window_size = window_size;
    auto t = Target::Open(path(), o);
    ASSERT_TRUE(t.ok()) << t.status().ToString();
    target_ = std::move(*t);
    auto q = target_->MakeQueue(GetParam(), 4);
    ASSERT_TRUE(q.ok());
    inner_ = std::move(*q);
    fault_ = std::make_unique<testing::FaultQueue>(inner_.get());
  }
  std::unique_ptr<ImageWriter> Writer(WriterOptions wo = {}) {
    auto w = ImageWriter::Create({DeviceFor(*target_, fault_.get())}, wo);
    EXPECT_TRUE(w.ok()) << w.status().ToString();
    return std::move(*w);
  }
  // Feeds `bytes` of random RAW from image offset 0 in 64 KiB slices; returns
  // the first error (from a slice or from Finish).
  Status WriteRaw(ImageWriter& w, uint64_t bytes, uint64_t at = 0) {
    std::mt19937_64 rng(9);
    data_ = testing::RandomBytes(rng, bytes);
    for (uint64_t off = 0; off < bytes; off += 65536) {
      Status s = w.OnRaw(at + off, {data_.data() + off, std::min<uint64_t>(65536, bytes - off)});
      if (!s.ok()) return s;
    }
    return w.Finish();
  }
  std::string path() const { return dir_.File("t.img"); }

  testing::TempDir dir_;
  std::unique_ptr<Target> target_;
  std::unique_ptr<IoQueue> inner_;
  std::unique_ptr<testing::FaultQueue> fault_;
  std::vector<uint8_t> data_;
};

TEST_P(WriterFaultTest, EioNamesTheOffset) {
  Open();
  fault_->FailWrites(5 << 20, EIO);
  auto w = Writer();
  Status s = WriteRaw(*w, 12 << 20);
  EXPECT_EQ(s.code(), Code::kIoError);
  EXPECT_EQ(s.sys_errno(), EIO);
  EXPECT_NE(s.message().find("image offset 0x"), std::string::npos) << s.ToString();
  EXPECT_NE(s.message().find("injected fault on 0x"), std::string::npos) << s.ToString();
  // The writer stays failed and says so again.
  EXPECT_EQ(w->OnRaw(0, data_).code(), Code::kIoError);
}

TEST_P(WriterFaultTest, EnospcStopsTheWrite) {
  Open();
  fault_->FailWrites(3 << 20, ENOSPC);
  auto w = Writer();
  Status s = WriteRaw(*w, 8 << 20);
  EXPECT_EQ(s.sys_errno(), ENOSPC) << s.ToString();
  EXPECT_NE(s.ToString().find("No space"), std::string::npos);
}

TEST_P(WriterFaultTest, ShortWritesStillGiveTheRightContent) {
  Open();
  fault_->ShortWrites(4096 * 3);
  WriterOptions wo;
  wo.verify = true;
  auto w = Writer(wo);
  ASSERT_TRUE(WriteRaw(*w, 5 << 20).ok());
  auto got = testing::ReadFile(path());
  EXPECT_TRUE(std::equal(data_.begin(), data_.end(), got.begin()));
}

TEST_P(WriterFaultTest, FailedSyncIsTheResult) {
  Open();
  fault_->FailSync(EIO);
  auto w = Writer();
  Status s = WriteRaw(*w, 2 << 20);
  EXPECT_EQ(s.sys_errno(), EIO);
  EXPECT_NE(s.message().find("fdatasync"), std::string::npos) << s.ToString();
}

TEST_P(WriterFaultTest, FailedReadModifyWriteRead) {
  Open(0, 0, /*fresh=*/false);
  fault_->FailReads(0, EIO);
  auto w = Writer();
  std::vector<uint8_t> small(1024, 1);
  Status s = w->OnRaw(1024, small);
  if (s.ok()) s = w->Finish();
  EXPECT_EQ(s.sys_errno(), EIO) << s.ToString();
}

TEST_P(WriterFaultTest, FailedVerifyReadIsReported) {
  Open();
  fault_->FailReads(1 << 20, EIO);
  WriterOptions wo;
  wo.verify = true;
  auto w = Writer(wo);
  Status s = WriteRaw(*w, 4 << 20);
  EXPECT_EQ(s.sys_errno(), EIO) << s.ToString();
  EXPECT_FALSE(w->stats().verified);
}

TEST_P(WriterFaultTest, ZeroOutFailure) {
  Open(0, 0, /*fresh=*/false);
  fault_->FailKind(OpKind::kPunchHole, EOPNOTSUPP);
  auto w = Writer();
  Status s = w->OnFill(0, 8 << 20, 0);
  if (s.ok()) s = w->Finish();
  EXPECT_EQ(s.sys_errno(), EOPNOTSUPP) << s.ToString();
}

TEST_P(WriterFaultTest, NothingOutsideTheWindow) {
  const uint64_t off = 3 << 20, size = 5 << 20;
  Open(off, size, /*fresh=*/false);
  auto w = Writer();
  std::mt19937_64 rng(2);
  auto part = testing::RandomPart(rng, 1024, size / 1024);
  for (const auto& e : part) {
    Status s = e.kind == testing::Event::kRaw    ? w->OnRaw(e.offset, e.data)
               : e.kind == testing::Event::kFill ? w->OnFill(e.offset, e.length, e.pattern)
                                              : w->OnSkip(e.offset, e.length);
    ASSERT_TRUE(s.ok()) << s.ToString();
  }
  // Whatever the image says next, nothing goes past the window.
  Status s = w->OnRaw(size - 512, std::vector<uint8_t>(1024, 1));
  EXPECT_EQ(s.code(), Code::kNoSpace);
  EXPECT_NE(s.message().find("0x4ffe00+1024"), std::string::npos) << s.message();
  EXPECT_EQ(w->OnFill(size, 4, 1).code(), Code::kNoSpace);
  EXPECT_EQ(w->OnSkip(UINT64_MAX - 3, 8).code(), Code::kNoSpace);
  ASSERT_TRUE(w->Finish().ok());
  EXPECT_LE(fault_->max_end_written(), off + size);
  EXPECT_GE(fault_->min_offset_written(), off);
  std::vector<uint8_t> model(16 << 20, 0x5A);
  std::vector<uint8_t> window(model.begin() + off, model.begin() + off + size);
  for (const auto& e : part) testing::ApplyToModel(e, window);
  std::copy(window.begin(), window.end(), model.begin() + off);
  EXPECT_EQ(testing::ReadFile(path()), model);
}

TEST_P(WriterFaultTest, TooBigImageRefusedBeforeAnyWrite) {
  Open(0, 1 << 20);
  auto w = Writer();
  sparse::FileHeader h;
  h.blk_sz = 4096;
  h.total_blks = 257;
  Status s = w->OnHeader(h);
  EXPECT_EQ(s.code(), Code::kNoSpace);
  EXPECT_NE(s.message().find("1052672"), std::string::npos) << s.message();
  EXPECT_EQ(fault_->writes(), 0u);
}

TEST_P(WriterFaultTest, DestroyWithRequestsInFlightDoesNotHang) {
  Open();
  auto w = Writer();
  std::vector<uint8_t> data(4 << 20, 3);
  ASSERT_TRUE(w->OnRaw(0, data).ok());
  w.reset();  // no Finish: in-flight requests are drained, buffers freed after
}

TEST_P(WriterFaultTest, FinishTwiceIsAnError) {
  Open();
  auto w = Writer();
  ASSERT_TRUE(w->Finish().ok());
  EXPECT_EQ(w->Finish().code(), Code::kInvalidArgument);
  EXPECT_EQ(w->OnRaw(0, std::vector<uint8_t>(4096)).code(), Code::kInvalidArgument);
}

INSTANTIATE_TEST_SUITE_P(Backends, WriterFaultTest,
                         ::testing::Values(Backend::kUring, Backend::kThreads, Backend::kSync),
                         [](const auto& info) {
                           return std::string(info.param == Backend::kUring     ? "io_uring"
                                              : info.param == Backend::kThreads ? "threads"
                                                                                : "sync");
                         });

}  // namespace
}  // namespace flashpipe::io
