// Target on regular files: opening rules, geometry, window bounds.
#include "io/target.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "io/image_writer.h"
#include "testing/image_events.h"
#include "testing/temp_dir.h"

namespace flashpipe::io {
namespace {

TEST(TargetTest, CreatesAndSizesFile) {
  testing::TempDir dir;
  TargetOptions o;
  o.create = true;
  o.truncate_to = 3 << 20;
  auto t = Target::Open(dir.File("new.img"), o);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  const Geometry& g = (*t)->geometry();
  EXPECT_EQ(g.size, 3u << 20);
  EXPECT_FALSE(g.block_device);
  EXPECT_TRUE(g.direct);  // ext4/xfs temp dirs support O_DIRECT
  EXPECT_EQ(g.offset_align, 4096u);
  EXPECT_GE(g.max_request, 1u << 20);
  EXPECT_TRUE((*t)->fresh());
  EXPECT_EQ((*t)->window_size(), 3u << 20);
  EXPECT_TRUE(fcntl((*t)->fd(), F_GETFL) & O_DIRECT);
}

TEST(TargetTest, TruncateDropsOldContent) {
  testing::TempDir dir;
  testing::WriteFile(dir.File("old.img"), std::vector<uint8_t>(8192, 0x77));
  TargetOptions o;
  o.truncate_to = 16384;
  auto t = Target::Open(dir.File("old.img"), o);
  ASSERT_TRUE(t.ok());
  auto data = testing::ReadFile(dir.File("old.img"));
  ASSERT_EQ(data.size(), 16384u);
  EXPECT_TRUE(std::all_of(data.begin(), data.end(), [](uint8_t b) { return b == 0; }));
}

TEST(TargetTest, ExistingFileKeepsSizeAndIsNotFresh) {
  testing::TempDir dir;
  testing::WriteFile(dir.File("old.img"), std::vector<uint8_t>(12345, 1));
  auto t = Target::Open(dir.File("old.img"), {});
  ASSERT_TRUE(t.ok());
  EXPECT_EQ((*t)->geometry().size, 12345u);
  EXPECT_FALSE((*t)->fresh());
}

TEST(TargetTest, MissingFileWithoutCreateIsNotFound) {
  testing::TempDir dir;
  auto t = Target::Open(dir.File("nope"), {});
  EXPECT_EQ(t.status().code(), Code::kNotFound);
}

TEST(TargetTest, MissingDevPathNeverBecomesAFile) {
  TargetOptions o;
  o.create = true;
  o.truncate_to = 4096;
  auto t = Target::Open("/dev/flashpipe-test-no-such-disk", o);
  EXPECT_EQ(t.status().code(), Code::kNotFound);
  EXPECT_NE(t.status().message().find("/dev/flashpipe-test-no-such-disk"), std::string::npos);
  struct stat st;
  EXPECT_NE(stat("/dev/flashpipe-test-no-such-disk", &st), 0);
}

// bench creates its own files: never through a symlink whose target is
// missing (the file would appear elsewhere and the link be removed later).
TEST(TargetTest, CreateRefusesADanglingSymlink) {
  testing::TempDir dir;
  ASSERT_EQ(symlink(dir.File("elsewhere").c_str(), dir.File("link").c_str()), 0);
  auto t = Target::Open(dir.File("link"), {.create = true, .truncate_to = 4096});
  EXPECT_EQ(t.status().code(), Code::kInvalidArgument) << t.status().ToString();
  EXPECT_NE(t.status().message().find("symbolic link"), std::string::npos) << t.status().ToString();
  struct stat st;
  EXPECT_NE(stat(dir.File("elsewhere").c_str(), &st), 0) << "a file was created through the link";
  EXPECT_EQ(lstat(dir.File("link").c_str(), &st), 0);
}

// An AtomicFile's temporary file is opened without O_DIRECT; the target
// turns it on, so the writer's aligned requests skip the page cache there too.
TEST(TargetTest, AdoptTurnsOnDirectIoAndSizes) {
  testing::TempDir dir;
  testing::WriteFile(dir.File("t"), std::vector<uint8_t>(5000, 9));
  int fd = open(dir.File("t").c_str(), O_RDWR | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  ASSERT_FALSE(fcntl(fd, F_GETFL) & O_DIRECT);
  auto t = Target::Adopt(UniqueFd(fd), "out.img", {.truncate_to = 3 << 20});
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_TRUE((*t)->geometry().direct);  // ext4/xfs temp dirs support O_DIRECT
  EXPECT_TRUE(fcntl((*t)->fd(), F_GETFL) & O_DIRECT);
  EXPECT_EQ((*t)->geometry().size, 3u << 20);
  EXPECT_EQ((*t)->window_size(), 3u << 20);
  EXPECT_TRUE((*t)->fresh());
  EXPECT_EQ((*t)->path(), "out.img");
  auto data = testing::ReadFile(dir.File("t"));
  EXPECT_TRUE(std::all_of(data.begin(), data.end(), [](uint8_t b) { return b == 0; }));
}

TEST(TargetTest, TruncateRefusesSizesNoFileCanHave) {
  testing::TempDir dir;
  testing::WriteFile(dir.File("t"), std::vector<uint8_t>(5000, 9));
  auto t = Target::Open(dir.File("t"), {});
  ASSERT_TRUE(t.ok());
  EXPECT_FALSE((*t)->Truncate(UINT64_MAX - 4095).ok());
  ASSERT_TRUE((*t)->Truncate(8192).ok());
  EXPECT_EQ(testing::ReadFile(dir.File("t")), std::vector<uint8_t>(8192, 0));
  EXPECT_EQ((*t)->window_size(), 8192u);
}

// With --force no O_EXCL was asked for: suggesting it again would be wrong.
TEST(TargetTest, BusyMessageSuggestsForceOnlyWithoutIt) {
  Status without = DeviceBusy("/dev/sdz", "mounted on /mnt", false);
  EXPECT_EQ(without.code(), Code::kBusy);
  EXPECT_NE(without.message().find("mounted on /mnt"), std::string::npos);
  EXPECT_NE(without.message().find("--force to write anyway"), std::string::npos) << without.message();
  Status with = DeviceBusy("/dev/sdz", "mounted on /mnt", true);
  EXPECT_EQ(with.code(), Code::kBusy);
  EXPECT_EQ(with.message().find("--force to"), std::string::npos) << with.message();
  EXPECT_EQ(with.message().find("--force overrides"), std::string::npos) << with.message();
  EXPECT_NE(with.message().find("unmount"), std::string::npos) << with.message();
}

TEST(TargetTest, RefusesDirectoriesAndCharDevices) {
  testing::TempDir dir;
  EXPECT_EQ(Target::Open(dir.path(), {}).status().code(), Code::kInvalidArgument);
  EXPECT_EQ(Target::Open("/dev/null", {}).status().code(), Code::kInvalidArgument);
}

TEST(TargetTest, WindowBounds) {
  testing::TempDir dir;
  TargetOptions o;
  o.create = true;
  o.truncate_to = 1 << 20;
  o.window_offset = 64 << 10;
  o.window_size = 128 << 10;
  auto t = Target::Open(dir.File("w.img"), o);
  ASSERT_TRUE(t.ok());
  EXPECT_TRUE((*t)->CheckRange(0, 128 << 10).ok());
  EXPECT_TRUE((*t)->CheckRange(127 << 10, 1 << 10).ok());
  Status s = (*t)->CheckRange(127 << 10, 2 << 10);
  EXPECT_EQ(s.code(), Code::kNoSpace);
  EXPECT_NE(s.message().find("0x1fc00+2048"), std::string::npos) << s.message();
  EXPECT_FALSE((*t)->CheckRange(UINT64_MAX - 10, 20).ok());  // no wrap-around
  EXPECT_FALSE((*t)->CheckRange(200 << 10, 0).ok());

  EXPECT_EQ(Target::Open(dir.File("w.img"), o).status().code(), Code::kBusy);  // one writer at a time
  (*t).reset();
  o.window_offset = 1 << 20;
  o.window_size = 1;
  EXPECT_EQ(Target::Open(dir.File("w.img"), o).status().code(), Code::kNoSpace);
}

TEST(TargetTest, WindowDefaultsToTheRest) {
  testing::TempDir dir;
  TargetOptions o;
  o.create = true;
  o.truncate_to = 1 << 20;
  o.window_offset = 4096;
  auto t = Target::Open(dir.File("w.img"), o);
  ASSERT_TRUE(t.ok());
  EXPECT_EQ((*t)->window_size(), (1u << 20) - 4096);
}

TEST(TargetTest, ParseBackend) {
  EXPECT_EQ(*ParseBackend("auto"), Backend::kAuto);
  EXPECT_EQ(*ParseBackend("io_uring"), Backend::kUring);
  EXPECT_EQ(*ParseBackend("threads"), Backend::kThreads);
  EXPECT_EQ(*ParseBackend("sync"), Backend::kSync);
  EXPECT_EQ(ParseBackend("aio").status().code(), Code::kInvalidArgument);
}

TEST(TargetTest, TmpfsFallsBackOrKeepsDirect) {
  // /dev/shm is tmpfs: O_DIRECT only since Linux 6.6; either way it opens and
  // geometry tells the truth.
  std::string path = "/dev/shm/fp_io_target_test_" + std::to_string(getpid());
  TargetOptions o;
  o.create = true;
  o.truncate_to = 8192;
  auto t = Target::Open(path, o);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  bool has_direct = fcntl((*t)->fd(), F_GETFL) & O_DIRECT;
  EXPECT_EQ((*t)->geometry().direct, has_direct);
  unlink(path.c_str());
}

// ramfs has no O_DIRECT at all: the file opens buffered and says so, and the
// writer still produces the right bytes through it.
TEST(TargetTest, NoDirectIoFilesystemFallsBackToBuffered) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to mount ramfs";
  testing::TempDir mnt;
  ASSERT_EQ(mount("ramfs", mnt.path().c_str(), "ramfs", 0, nullptr), 0) << strerror(errno);
  {
    TargetOptions o;
    o.create = true;
    o.truncate_to = (1 << 20) + 1000;
    auto t = Target::Open(mnt.File("f"), o);
    ASSERT_TRUE(t.ok()) << t.status().ToString();
    EXPECT_FALSE((*t)->geometry().direct);
    EXPECT_FALSE(fcntl((*t)->fd(), F_GETFL) & O_DIRECT);
    auto q = (*t)->MakeQueue(Backend::kAuto, 4);
    ASSERT_TRUE(q.ok());
    auto w = ImageWriter::Create({DeviceFor(**t, q->get())}, {});
    ASSERT_TRUE(w.ok());
    std::vector<uint8_t> data((1 << 20) + 1000, 0x42);
    ASSERT_TRUE((*w)->OnRaw(0, data).ok());
    Status s = (*w)->Finish();
    ASSERT_TRUE(s.ok()) << s.ToString();
    EXPECT_EQ(testing::ReadFile(mnt.File("f")), data);
  }
  umount2(mnt.path().c_str(), MNT_DETACH);
}

}  // namespace
}  // namespace flashpipe::io
