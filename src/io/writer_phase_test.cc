// ImageWriter's phases (sync, verify with its progress), its cancel flag and
// failed_device(): what `flashpipe write` builds its progress, its handling
// of SIGINT and its report per target on.
#include <fcntl.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include "io/image_writer.h"
#include "testing/fault_queue.h"
#include "testing/image_events.h"
#include "testing/temp_dir.h"

namespace flashpipe::io {
namespace {

constexpr uint64_t kSize = 16 << 20;

// Two 16 MiB files, each behind a FaultQueue.
class PhaseRig {
 public:
  PhaseRig() {
    for (int i = 0; i < 2; ++i) {
      TargetOptions o{.create = true, .truncate_to = kSize};
      auto t = Target::Open(dir_.File("t" + std::to_string(i)), o);
      EXPECT_TRUE(t.ok()) << t.status().ToString();
      targets_.push_back(std::move(*t));
      auto q = targets_.back()->MakeQueue(Backend::kThreads, 4);
      EXPECT_TRUE(q.ok()) << q.status().ToString();
      inner_.push_back(std::move(*q));
      faults_.push_back(std::make_unique<testing::FaultQueue>(inner_.back().get()));
    }
    std::mt19937_64 rng(3);
    data_ = testing::RandomBytes(rng, 8 << 20);
  }
  std::unique_ptr<ImageWriter> Writer(const WriterOptions& wo, int devices = 2) {
    std::vector<Device> d;
    for (int i = 0; i < devices; ++i) d.push_back(DeviceFor(*targets_[i], faults_[i].get()));
    auto w = ImageWriter::Create(std::move(d), wo);
    EXPECT_TRUE(w.ok()) << w.status().ToString();
    return std::move(*w);
  }
  // 8 MiB of data in 64 KiB events, a zero fill to 16 MiB, Finish().
  Status Write(ImageWriter& w) {
    for (uint64_t off = 0; off < data_.size(); off += 65536) {
      FP_RETURN_IF_ERROR(w.OnRaw(off, {data_.data() + off, 65536}));
    }
    FP_RETURN_IF_ERROR(w.OnFill(data_.size(), kSize - data_.size(), 0));
    return w.Finish();
  }
  testing::FaultQueue& fault(int i) { return *faults_[i]; }
  std::string path(int i) const { return dir_.File("t" + std::to_string(i)); }

 private:
  testing::TempDir dir_;
  std::vector<std::unique_ptr<Target>> targets_;
  std::vector<std::unique_ptr<IoQueue>> inner_;
  std::vector<std::unique_ptr<testing::FaultQueue>> faults_;
  std::vector<uint8_t> data_;
};

struct PhaseCall {
  WritePhase phase;
  uint64_t done, total;
};

TEST(WriterPhaseTest, SyncThenVerifyWithGrowingProgress) {
  PhaseRig rig;
  std::vector<PhaseCall> calls;
  WriterOptions wo{.verify = true};
  wo.phase = [&](WritePhase p, uint64_t done, uint64_t total) { calls.push_back({p, done, total}); };
  auto w = rig.Writer(wo);
  ASSERT_TRUE(rig.Write(*w).ok());
  ASSERT_GE(calls.size(), 3u);
  EXPECT_EQ(calls[0].phase, WritePhase::kSync);
  EXPECT_EQ(calls[1].phase, WritePhase::kVerify);
  EXPECT_EQ(calls[1].done, 0u);
  const uint64_t total = calls[1].total;
  EXPECT_EQ(total, 2 * kSize);  // both devices, data and zero fill
  for (size_t i = 2; i < calls.size(); ++i) {
    EXPECT_EQ(calls[i].phase, WritePhase::kVerify);
    EXPECT_GT(calls[i].done, calls[i - 1].done);
    EXPECT_EQ(calls[i].total, total);
  }
  EXPECT_EQ(calls.back().done, total);
}

TEST(WriterPhaseTest, NoVerifyPhaseWithoutVerify) {
  PhaseRig rig;
  std::vector<PhaseCall> calls;
  WriterOptions wo;
  wo.phase = [&](WritePhase p, uint64_t done, uint64_t total) { calls.push_back({p, done, total}); };
  auto w = rig.Writer(wo);
  ASSERT_TRUE(rig.Write(*w).ok());
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(calls[0].phase, WritePhase::kSync);
}

TEST(WriterCancelTest, StopsBetweenEvents) {
  PhaseRig rig;
  CancelFlag cancel;
  WriterOptions wo;
  wo.cancel = &cancel;
  int writes = 0;
  rig.fault(0).OnSubmit([&](const IoOp& op) {
    if (op.kind == OpKind::kWrite && ++writes == 3) cancel.Cancel(2);
  });
  auto w = rig.Writer(wo);
  Status s = rig.Write(*w);
  EXPECT_EQ(s.code(), Code::kCancelled) << s.ToString();
  EXPECT_EQ(s.message(), "interrupted by SIGINT");
  EXPECT_LT(w->stats().changed_end, 8u << 20);  // it stopped before the end of the data
  EXPECT_FALSE(w->failed_device().has_value());
}

TEST(WriterCancelTest, StopsInsideOneLongRawEvent) {
  PhaseRig rig;
  CancelFlag cancel;
  WriterOptions wo{.request_size = 1 << 20};
  wo.cancel = &cancel;
  int requests = 0;
  rig.fault(0).OnSubmit([&](const IoOp& op) {
    if (op.kind == OpKind::kWrite && ++requests == 2) cancel.Cancel();
  });
  auto w = rig.Writer(wo, 1);
  std::vector<uint8_t> big(12 << 20, 7);
  Status s = w->OnRaw(0, big);
  EXPECT_EQ(s.code(), Code::kCancelled) << s.ToString();
  EXPECT_LE(w->stats().changed_end, 4u << 20);
  EXPECT_EQ(w->Finish().code(), Code::kCancelled);
}

TEST(WriterCancelTest, StopsTheVerify) {
  PhaseRig rig;
  CancelFlag cancel;
  WriterOptions wo{.verify = true};
  wo.cancel = &cancel;
  uint64_t last_done = 0;
  wo.phase = [&](WritePhase p, uint64_t done, uint64_t) {
    last_done = done;
    if (p == WritePhase::kVerify && done >= (2u << 20)) cancel.Cancel(15);
  };
  auto w = rig.Writer(wo);
  Status s = rig.Write(*w);
  EXPECT_EQ(s.code(), Code::kCancelled) << s.ToString();
  EXPECT_EQ(s.message(), "interrupted by SIGTERM");
  EXPECT_LT(last_done, 2 * kSize);
  EXPECT_FALSE(w->stats().verified);
  EXPECT_FALSE(w->failed_device().has_value());
}

TEST(WriterFailedDeviceTest, NamesTheDeviceWhoseWriteFailed) {
  PhaseRig rig;
  rig.fault(1).FailWrites(3 << 20, EIO);
  auto w = rig.Writer({});
  Status s = rig.Write(*w);
  EXPECT_EQ(s.code(), Code::kIoError) << s.ToString();
  ASSERT_TRUE(w->failed_device().has_value());
  EXPECT_EQ(*w->failed_device(), 1u);
}

TEST(WriterFailedDeviceTest, NamesTheDeviceWhoseSyncFailed) {
  PhaseRig rig;
  rig.fault(0).FailSync(EIO);
  auto w = rig.Writer({});
  EXPECT_EQ(rig.Write(*w).code(), Code::kIoError);
  ASSERT_TRUE(w->failed_device().has_value());
  EXPECT_EQ(*w->failed_device(), 0u);
}

TEST(WriterFailedDeviceTest, NamesTheDeviceThatReadsBackWrong) {
  PhaseRig rig;
  rig.fault(1).BeforeSync([&] {
    int fd = ::open(rig.path(1).c_str(), O_WRONLY);
    uint8_t b = 0xA5;
    ASSERT_EQ(::pwrite(fd, &b, 1, 5 << 20), 1);
    ::close(fd);
  });
  auto w = rig.Writer({.verify = true});
  Status s = rig.Write(*w);
  EXPECT_EQ(s.code(), Code::kMismatch) << s.ToString();
  ASSERT_TRUE(w->failed_device().has_value());
  EXPECT_EQ(*w->failed_device(), 1u);
}

}  // namespace
}  // namespace flashpipe::io
