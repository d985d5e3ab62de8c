// The engine on real block devices: loop devices with direct I/O over a file
// in a temp dir (needs root, which the test machines have). Every device is
// detached when its test ends, pass or fail.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>

#include "io/image_writer.h"
#include "testing/image_events.h"
#include "testing/temp_dir.h"

namespace flashpipe::io {
namespace {

std::string Shell(const std::string& cmd) {
  std::string out;
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return out;
  char buf[256];
  while (fgets(buf, sizeof buf, p)) out += buf;
  pclose(p);
  while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
  return out;
}

// A loop device over `size` bytes of `content` (random if empty).
class LoopDevice {
 public:
  LoopDevice(const testing::TempDir& dir, const std::vector<uint8_t>& content) {
    backing_ = dir.File("backing");
    testing::WriteFile(backing_, content);
    path_ = Shell("losetup --direct-io=on -f --show " + backing_ + " 2>/dev/null");
  }
  ~LoopDevice() {
    if (!path_.empty()) Shell("losetup -d " + path_);
  }
  const std::string& path() const { return path_; }
  const std::string& backing() const { return backing_; }

 private:
  std::string backing_, path_;
};

class LoopTest : public ::testing::TestWithParam<Backend> {
 protected:
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "loop devices need root";
    std::mt19937_64 rng(11);
    content_ = testing::RandomBytes(rng, kSize);
    loop_ = std::make_unique<LoopDevice>(dir_, content_);
    ASSERT_FALSE(loop_->path().empty()) << "losetup failed";
  }
  void TearDown() override { loop_.reset(); }
  std::vector<uint8_t> Read() { return testing::ReadFile(loop_->path()); }

  static constexpr uint64_t kSize = 24 << 20;
  testing::TempDir dir_;
  std::vector<uint8_t> content_;
  std::unique_ptr<LoopDevice> loop_;
};

TEST_P(LoopTest, Geometry) {
  auto t = Target::Open(loop_->path(), {});
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  const Geometry& g = (*t)->geometry();
  EXPECT_TRUE(g.block_device);
  EXPECT_TRUE(g.direct);
  EXPECT_EQ(g.size, kSize);
  EXPECT_EQ(g.logical_block, 512u);
  EXPECT_GE(g.physical_block, 512u);
  EXPECT_EQ(g.offset_align, 4096u);
  auto queue = [&](const std::string& name) {
    return std::stoull(Shell("cat /sys/block/" + loop_->path().substr(5) + "/queue/" + name));
  };
  EXPECT_EQ(g.max_request, queue("max_sectors_kb") * 1024);
  // One bio: every 4 KiB page a segment (a loop device's segments hold 64 KiB).
  ASSERT_GE(queue("max_segment_size"), 4096u);
  EXPECT_EQ(g.max_unsplit, std::min<uint64_t>(g.max_request, queue("max_segments") * 4096));
  EXPECT_FALSE((*t)->fresh());
}

TEST_P(LoopTest, ExclusiveOpenRefusedUnlessForced) {
  int holder = open(loop_->path().c_str(), O_RDONLY | O_EXCL);
  ASSERT_GE(holder, 0);
  auto t = Target::Open(loop_->path(), {});
  EXPECT_EQ(t.status().code(), Code::kBusy);
  EXPECT_NE(t.status().message().find(loop_->path()), std::string::npos);
  TargetOptions force;
  force.force = true;
  EXPECT_TRUE(Target::Open(loop_->path(), force).ok());
  close(holder);
  EXPECT_TRUE(Target::Open(loop_->path(), {}).ok());
}

TEST_P(LoopTest, RandomImagesMatchModel) {
  std::mt19937_64 rng(static_cast<uint64_t>(GetParam()) + 20);
  std::vector<uint8_t> model = content_;
  {
    auto t = Target::Open(loop_->path(), {});
    ASSERT_TRUE(t.ok());
    auto q = (*t)->MakeQueue(GetParam(), 4);
    ASSERT_TRUE(q.ok());
    WriterOptions wo;
    wo.verify = true;
    wo.first_block_last = true;
    auto w = ImageWriter::Create({DeviceFor(**t, q->get())}, wo);
    ASSERT_TRUE(w.ok());
    for (uint32_t blk : {4096u, 1024u}) {
      for (const auto& e : testing::RandomPart(rng, blk, kSize / blk - rng() % 100)) {
        Status s = e.kind == testing::Event::kRaw    ? (*w)->OnRaw(e.offset, e.data)
                   : e.kind == testing::Event::kFill ? (*w)->OnFill(e.offset, e.length, e.pattern)
                                                  : (*w)->OnSkip(e.offset, e.length);
        ASSERT_TRUE(s.ok()) << s.ToString();
        testing::ApplyToModel(e, model);
      }
    }
    Status s = (*w)->Finish();
    ASSERT_TRUE(s.ok()) << s.ToString();
    EXPECT_TRUE((*w)->stats().verified);
    EXPECT_GT((*w)->stats().bytes_zeroed, 0u);
  }
  auto got = Read();
  ASSERT_EQ(got.size(), model.size());
  auto mm = std::mismatch(got.begin(), got.end(), model.begin());
  EXPECT_TRUE(mm.first == got.end()) << "first difference at 0x" << std::hex << (mm.first - got.begin());
}

TEST_P(LoopTest, ZeroOutAndDiscardReadBack) {
  auto t = Target::Open(loop_->path(), {});
  ASSERT_TRUE(t.ok());
  auto q = (*t)->MakeQueue(GetParam(), 4);
  ASSERT_TRUE(q.ok());
  uint64_t zeroouts = 0, discards = 0, writes = 0;
  struct Counting : IoQueue {
    IoQueue* in;
    uint64_t *z, *d, *w;
    std::string_view name() const override { return "counting"; }
    unsigned depth() const override { return in->depth(); }
    unsigned in_flight() const override { return in->in_flight(); }
    Status Submit(const IoOp& op) override {
      if (op.kind == OpKind::kZeroOut) *z += op.length;
      if (op.kind == OpKind::kDiscard) *d += op.length;
      if (op.kind == OpKind::kWrite) *w += op.length;
      return in->Submit(op);
    }
    Result<IoCompletion> Wait() override { return in->Wait(); }
    Status Sync() override { return in->Sync(); }
  } counting;
  counting.in = q->get();
  counting.z = &zeroouts;
  counting.d = &discards;
  counting.w = &writes;
  WriterOptions wo;
  wo.discard = true;
  wo.verify = true;
  auto w = ImageWriter::Create({DeviceFor(**t, &counting)}, wo);
  ASSERT_TRUE(w.ok());
  ASSERT_TRUE((*w)->OnFill(1 << 20, 8 << 20, 0).ok());    // BLKZEROOUT
  ASSERT_TRUE((*w)->OnSkip(9 << 20, 4 << 20).ok());       // BLKDISCARD
  ASSERT_TRUE((*w)->OnFill(13 << 20, 1 << 20, 0x11223344).ok());
  Status s = (*w)->Finish();
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(zeroouts, 8u << 20);
  EXPECT_EQ(discards, 4u << 20);
  EXPECT_EQ(writes, 1u << 20);
  EXPECT_EQ((*w)->stats().bytes_zeroed, 8u << 20);
  EXPECT_EQ((*w)->stats().bytes_discarded, 4u << 20);
  auto got = Read();
  EXPECT_TRUE(std::equal(got.begin(), got.begin() + (1 << 20), content_.begin()));
  EXPECT_TRUE(std::all_of(got.begin() + (1 << 20), got.begin() + (9 << 20), [](uint8_t b) { return b == 0; }));
  EXPECT_EQ(got[(13 << 20) + 1], 0x33);
  EXPECT_TRUE(std::equal(got.begin() + (14 << 20), got.end(), content_.begin() + (14 << 20)));
}

TEST_P(LoopTest, ZeroWriteModeWritesZeros) {
  auto t = Target::Open(loop_->path(), {});
  ASSERT_TRUE(t.ok());
  auto q = (*t)->MakeQueue(GetParam(), 4);
  WriterOptions wo;
  wo.zero_mode = ZeroMode::kWrite;
  auto w = ImageWriter::Create({DeviceFor(**t, q->get())}, wo);
  ASSERT_TRUE((*w)->OnFill(0, 4 << 20, 0).ok());
  ASSERT_TRUE((*w)->Finish().ok());
  EXPECT_EQ((*w)->stats().bytes_written, 4u << 20);
  auto got = Read();
  EXPECT_TRUE(std::all_of(got.begin(), got.begin() + (4 << 20), [](uint8_t b) { return b == 0; }));
}

TEST_P(LoopTest, PartitionWindow) {
  TargetOptions o;
  o.window_offset = 2 << 20;
  o.window_size = 3 << 20;
  auto t = Target::Open(loop_->path(), o);
  ASSERT_TRUE(t.ok());
  auto q = (*t)->MakeQueue(GetParam(), 4);
  auto w = ImageWriter::Create({DeviceFor(**t, q->get())}, {});
  ASSERT_TRUE(w.ok());
  std::vector<uint8_t> img(3 << 20, 0xEE);
  ASSERT_TRUE((*w)->OnRaw(0, img).ok());
  EXPECT_EQ((*w)->OnRaw(3 << 20, img).code(), Code::kNoSpace);
  ASSERT_TRUE((*w)->Finish().ok());
  auto got = Read();
  EXPECT_TRUE(std::equal(got.begin(), got.begin() + (2 << 20), content_.begin()));
  EXPECT_TRUE(std::all_of(got.begin() + (2 << 20), got.begin() + (5 << 20), [](uint8_t b) { return b == 0xEE; }));
  EXPECT_TRUE(std::equal(got.begin() + (5 << 20), got.end(), content_.begin() + (5 << 20)));
}

INSTANTIATE_TEST_SUITE_P(Backends, LoopTest, ::testing::Values(Backend::kUring, Backend::kThreads, Backend::kSync),
                         [](const auto& info) {
                           return std::string(info.param == Backend::kUring     ? "io_uring"
                                              : info.param == Backend::kThreads ? "threads"
                                                                                : "sync");
                         });

}  // namespace
}  // namespace flashpipe::io
