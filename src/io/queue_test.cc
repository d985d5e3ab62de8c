// The three backends on regular files: transfers, zeroing, completion tags,
// short writes finished or reported (a full tmpfs), reads past the end.
#include <gtest/gtest.h>
#include <sys/mount.h>
#include <sys/stat.h>

#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/prctl.h>
#include <sys/syscall.h>

#include <cstddef>
#include <map>

#include "base/aligned_buffer.h"
#include "io/queues.h"
#include "io/target.h"
#include "testing/image_events.h"
#include "testing/temp_dir.h"

namespace flashpipe::io {
namespace {

class QueueTest : public ::testing::TestWithParam<Backend> {
 protected:
  void SetUp() override {
    TargetOptions o;
    o.create = true;
    o.truncate_to = 8 << 20;
    auto t = Target::Open(dir_.File("q.img"), o);
    ASSERT_TRUE(t.ok());
    target_ = std::move(*t);
    auto q = target_->MakeQueue(GetParam(), 4);
    ASSERT_TRUE(q.ok()) << q.status().ToString();
    queue_ = std::move(*q);
  }
  // Submits ops (waiting when the queue is full), returns status per tag.
  std::map<uint64_t, Status> RunAll(const std::vector<IoOp>& ops) {
    std::map<uint64_t, Status> done;
    auto reap = [&] {
      auto c = queue_->Wait();
      EXPECT_TRUE(c.ok());
      if (c.ok()) done[c->tag] = c->status;
    };
    for (const IoOp& op : ops) {
      while (queue_->in_flight() >= queue_->depth()) reap();
      EXPECT_TRUE(queue_->Submit(op).ok());
    }
    while (queue_->in_flight() > 0) reap();
    return done;
  }
  testing::TempDir dir_;
  std::unique_ptr<Target> target_;
  std::unique_ptr<IoQueue> queue_;
};

TEST_P(QueueTest, WritesReadsAndZeroes) {
  std::mt19937_64 rng(1);
  auto data = testing::RandomBytes(rng, 8 << 20);
  AlignedBuffer buf(8 << 20);
  std::memcpy(buf.data(), data.data(), data.size());
  std::vector<IoOp> writes;
  for (uint64_t i = 0; i < 8; ++i)
    writes.push_back({OpKind::kWrite, i << 20, 1 << 20, buf.data() + (i << 20), -1, 100 + i});
  auto done = RunAll(writes);
  ASSERT_EQ(done.size(), 8u);
  for (auto& [tag, s] : done) EXPECT_TRUE(s.ok()) << tag << ": " << s.ToString();
  ASSERT_TRUE(queue_->Sync().ok());
  EXPECT_EQ(testing::ReadFile(dir_.File("q.img")), data);

  done = RunAll({{OpKind::kZeroOut, 1 << 20, 1 << 20, nullptr, -1, 1},
                 {OpKind::kPunchHole, 3 << 20, 64 << 10, nullptr, -1, 2},
                 {OpKind::kDiscard, 5 << 20, 1 << 20, nullptr, -1, 3}});
  for (auto& [tag, s] : done) EXPECT_TRUE(s.ok()) << tag << ": " << s.ToString();
  std::fill(data.begin() + (1 << 20), data.begin() + (2 << 20), 0);
  std::fill(data.begin() + (3 << 20), data.begin() + (3 << 20) + (64 << 10), 0);
  EXPECT_EQ(testing::ReadFile(dir_.File("q.img")), data);  // discard: files keep content

  AlignedBuffer back(2 << 20);
  done = RunAll({{OpKind::kRead, 3 << 20, 2 << 20, back.data(), -1, 9}});
  EXPECT_TRUE(done[9].ok());
  EXPECT_EQ(0, std::memcmp(back.data(), data.data() + (3 << 20), 2 << 20));
}

TEST_P(QueueTest, ReadPastEndOfFileGivesZeros) {
  AlignedBuffer buf(16384);
  std::memset(buf.data(), 0xCC, buf.size());
  auto done = RunAll({{OpKind::kRead, (8 << 20) - 4096, 16384, buf.data(), -1, 5}});
  ASSERT_TRUE(done[5].ok()) << done[5].ToString();
  EXPECT_TRUE(std::all_of(buf.data(), buf.data() + buf.size(), [](uint8_t b) { return b == 0; }));
}

TEST_P(QueueTest, ErrorsNameOpAndOffset) {
  AlignedBuffer buf(4096);
  // Misaligned O_DIRECT write: EINVAL from the kernel, reported per op.
  auto done = RunAll({{OpKind::kWrite, 100, 4096, buf.data(), -1, 7}});
  EXPECT_EQ(done[7].code(), Code::kIoError);
  EXPECT_EQ(done[7].sys_errno(), EINVAL);
  EXPECT_NE(done[7].message().find("write 0x64+4096"), std::string::npos) << done[7].ToString();
}

// A full filesystem: a 1 MiB tmpfs. A 2 MiB write is cut short by the
// kernel; the queue must go on with the rest and then report ENOSPC with the
// offset where it stopped -- no hang, no silent success.
TEST_P(QueueTest, ShortWriteOnFullFilesystemIsReported) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to mount a tmpfs";
  testing::TempDir mnt;
  ASSERT_EQ(mount("tmpfs", mnt.path().c_str(), "tmpfs", 0, "size=1m"), 0) << strerror(errno);
  {
    TargetOptions o;
    o.create = true;
    auto t = Target::Open(mnt.File("f"), o);
    ASSERT_TRUE(t.ok()) << t.status().ToString();
    auto q = (*t)->MakeQueue(GetParam(), 2);
    ASSERT_TRUE(q.ok());
    AlignedBuffer buf(2 << 20);
    ASSERT_TRUE((*q)->Submit({OpKind::kWrite, 0, 2 << 20, buf.data(), -1, 1}).ok());
    auto c = (*q)->Wait();
    ASSERT_TRUE(c.ok());
    EXPECT_EQ(c->status.sys_errno(), ENOSPC) << c->status.ToString();
    EXPECT_NE(c->status.message().find(" at byte 0x100000"), std::string::npos) << c->status.ToString();
  }
  umount2(mnt.path().c_str(), MNT_DETACH);
}

INSTANTIATE_TEST_SUITE_P(Backends, QueueTest, ::testing::Values(Backend::kUring, Backend::kThreads, Backend::kSync),
                         [](const auto& info) {
                           return std::string(info.param == Backend::kUring     ? "io_uring"
                                              : info.param == Backend::kThreads ? "threads"
                                                                                : "sync");
                         });

TEST(QueueProbeTest, AutoPicksUringHere) {
  // Debian 12 kernels and CI allow io_uring; the probe must say so.
  EXPECT_TRUE(ProbeUring().ok()) << ProbeUring().ToString();
  testing::TempDir dir;
  TargetOptions o;
  o.create = true;
  o.truncate_to = 4096;
  auto t = Target::Open(dir.File("p"), o);
  ASSERT_TRUE(t.ok());
  auto q = (*t)->MakeQueue(Backend::kAuto, 2);
  ASSERT_TRUE(q.ok());
  EXPECT_EQ((*q)->name(), "io_uring");
  EXPECT_EQ((*q)->depth(), 2u);
}

// Makes io_uring_setup fail with EPERM in this process, as Docker's default
// seccomp profile does.
bool DenyIoUringSetup() {
  sock_filter filter[] = {
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_io_uring_setup, 0, 1),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
  };
  sock_fprog prog{static_cast<unsigned short>(std::size(filter)), filter};
  return prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0 && prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) == 0;
}

// Runs in a child process (a fresh probe cache): with io_uring refused, auto
// falls back to threads, asking for io_uring explicitly is an error, and the
// fallback still writes. Returns the child's exit code.
int FallbackCheck() {
  if (!DenyIoUringSetup()) return 10;
  Status probe = ProbeUring();
  if (probe.ok() || probe.sys_errno() != EPERM) return 11;
  testing::TempDir dir;
  TargetOptions o;
  o.create = true;
  o.truncate_to = 1 << 20;
  auto t = Target::Open(dir.File("f"), o);
  if (!t.ok()) return 12;
  auto q = (*t)->MakeQueue(Backend::kAuto, 4);
  if (!q.ok() || (*q)->name() != "threads") return 13;
  if ((*t)->MakeQueue(Backend::kUring, 4).ok()) return 14;
  AlignedBuffer buf(4096);
  if (!(*q)->Submit({OpKind::kWrite, 0, 4096, buf.data(), -1, 1}).ok()) return 15;
  auto c = (*q)->Wait();
  return c.ok() && c->status.ok() ? 0 : 16;
}

void AutoFallsBackWhenRefused() { _exit(FallbackCheck()); }  // temp dir removed first

TEST(QueueProbeTest, SeccompRefusalFallsBackToThreads) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(AutoFallsBackWhenRefused(), ::testing::ExitedWithCode(0), "");
}

}  // namespace
}  // namespace flashpipe::io
