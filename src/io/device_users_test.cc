// device_users on a fake /sys, /proc and /dev tree shaped like the kernel's
// (a loop device with two partitions, one mounted), and on a real loop device.
#include "io/device_users.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>

#include "testing/temp_dir.h"

namespace flashpipe::io {
namespace {

namespace fs = std::filesystem;

class FakeSysTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = dir_.path();
    std::string disk = root_ + "/sys/devices/virtual/block/loop0";
    Mkdir(disk + "/loop/");
    Mkdir(disk + "/holders/");
    Put(disk + "/dev", "7:0\n");
    Put(disk + "/loop/backing_file", "/data/backing.img\n");
    for (int p : {1, 2}) {
      std::string part = fmt::format("{}/loop0p{}", disk, p);
      Mkdir(part + "/holders/");
      Put(part + "/dev", fmt::format("259:{}\n", p - 1));
      Put(part + "/partition", fmt::format("{}\n", p));
      Put(part + "/start", fmt::format("{}\n", 2048 * p));
      Put(part + "/size", fmt::format("{}\n", 1000 + p));
      Link(fmt::format("../../devices/virtual/block/loop0/loop0p{}", p), fmt::format("/sys/dev/block/259:{}", p - 1));
    }
    Link("../../devices/virtual/block/loop0", "/sys/dev/block/7:0");
    Link("../devices/virtual/block/loop0", "/sys/block/loop0");
    Mkdir(root_ + "/data/");
    Put(root_ + "/data/backing.img", "an image");
    Put(root_ + "/data/other.img", "another");
    Mkdir(root_ + "/proc/self/");
    Put(root_ + "/proc/self/mountinfo",
        "22 1 254:0 / / rw,relatime shared:1 - ext4 /dev/vda rw\n"
        "42 22 259:1 / /mnt/with\\040space rw,relatime - ext4 /dev/loop0p2 rw\n");
  }
  void Mkdir(const std::string& d) { fs::create_directories(d); }
  void Put(const std::string& path, const std::string& text) {
    fs::create_directories(fs::path(path).parent_path());
    FILE* f = std::fopen(path.c_str(), "w");
    ASSERT_NE(f, nullptr);
    std::fputs(text.c_str(), f);
    std::fclose(f);
  }
  void Link(const std::string& to, const std::string& at) {
    fs::create_directories(fs::path(root_ + at).parent_path());
    fs::create_directory_symlink(to, root_ + at);
  }
  FileId Id(const std::string& path) {
    struct stat st;
    EXPECT_EQ(::stat((root_ + path).c_str(), &st), 0);
    return FileIdOf(st);
  }
  testing::TempDir dir_;
  std::string root_;
};

TEST_F(FakeSysTest, AMountedPartitionMakesTheDiskInUse) {
  BlockUse use = UseOfBlockDevice(makedev(7, 0), root_);
  EXPECT_EQ(use.device, "/dev/loop0");
  ASSERT_EQ(use.mounts.size(), 1u);
  EXPECT_EQ(use.mounts[0].point, "/mnt/with space");
  EXPECT_TRUE(use.in_use());
  EXPECT_EQ(use.Describe(), "/dev/loop0 (mounted on /mnt/with space)");
  // The other partition is not mounted.
  BlockUse p1 = UseOfBlockDevice(makedev(259, 0), root_);
  EXPECT_EQ(p1.device, "/dev/loop0p1");
  EXPECT_FALSE(p1.in_use()) << p1.Describe();
}

TEST_F(FakeSysTest, HoldersMakeTheDiskInUse) {
  Mkdir(root_ + "/sys/devices/virtual/block/loop0/loop0p1/holders/dm-3");
  BlockUse use = UseOfBlockDevice(makedev(7, 0), root_);
  ASSERT_EQ(use.holders.size(), 1u);
  EXPECT_EQ(use.holders[0], "dm-3");
  EXPECT_EQ(use.Why(), "mounted on /mnt/with space, held by dm-3");
}

TEST_F(FakeSysTest, LoopDevicesAreFoundByTheirBackingFile) {
  ASSERT_EQ(LoopBackingFile(makedev(7, 0), root_), Id("/data/backing.img"));
  auto loops = LoopDevicesBackedBy(Id("/data/backing.img"), root_);
  ASSERT_EQ(loops.size(), 1u);
  EXPECT_EQ(loops[0].device, "/dev/loop0");
  EXPECT_TRUE(loops[0].in_use());
  EXPECT_TRUE(LoopDevicesBackedBy(Id("/data/other.img"), root_).empty());
  EXPECT_FALSE(LoopBackingFile(makedev(259, 0), root_).has_value());  // a partition has no loop/
}

TEST_F(FakeSysTest, ADeletedBackingFileIsNoTargetsFile) {
  Put(root_ + "/sys/devices/virtual/block/loop0/loop/backing_file", "/data/backing.img (deleted)\n");
  EXPECT_FALSE(LoopBackingFile(makedev(7, 0), root_).has_value());
}

TEST_F(FakeSysTest, ADiskOverlapsItsPartitionsWhichDoNotOverlapEachOther) {
  EXPECT_EQ(WholeDisk(makedev(259, 1), root_), makedev(7, 0));
  EXPECT_EQ(WholeDisk(makedev(7, 0), root_), makedev(7, 0));
  EXPECT_TRUE(BlockDevicesOverlap(makedev(7, 0), makedev(259, 1), root_));
  EXPECT_TRUE(BlockDevicesOverlap(makedev(259, 0), makedev(7, 0), root_));
  EXPECT_TRUE(BlockDevicesOverlap(makedev(259, 0), makedev(259, 0), root_));
  EXPECT_FALSE(BlockDevicesOverlap(makedev(259, 0), makedev(259, 1), root_));
  EXPECT_FALSE(BlockDevicesOverlap(makedev(7, 0), makedev(254, 0), root_));
}

std::string Shell(const std::string& cmd) {
  std::string out;
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) return out;
  char buf[256];
  while (fgets(buf, sizeof buf, p)) out += buf;
  pclose(p);
  while (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

// The real kernel: a loop device over a temp file is found by the file, and
// an exclusive holder makes it in use.
TEST_F(FakeSysTest, KernelPartitionsOfADisk) {
  auto parts = KernelPartitionsOf(makedev(7, 0), root_);
  ASSERT_EQ(parts.size(), 2u);
  EXPECT_EQ(parts[0].number, 1u);
  EXPECT_EQ(parts[0].name, "loop0p1");
  EXPECT_EQ(parts[1].start, 4096u);
  EXPECT_EQ(parts[1].size, 1002u);
  EXPECT_EQ(parts[1].dev, makedev(259, 1));
  EXPECT_TRUE(KernelPartitionsOf(makedev(259, 0), root_).empty());
}

TEST(LoopDevicesTest, RealLoopDeviceOverAFile) {
  if (geteuid() != 0) GTEST_SKIP() << "loop devices need root";
  testing::TempDir dir;
  testing::WriteFile(dir / "backing", std::vector<uint8_t>(1 << 20, 7));
  std::string loop = Shell("losetup -f --show " + dir / "backing" + " 2>/dev/null");
  ASSERT_FALSE(loop.empty()) << "losetup failed";
  struct stat st;
  ASSERT_EQ(::stat((dir / "backing").c_str(), &st), 0);
  auto loops = LoopDevicesBackedBy(FileIdOf(st));
  ASSERT_EQ(loops.size(), 1u);
  EXPECT_EQ(loops[0].device, loop);
  EXPECT_FALSE(loops[0].in_use()) << loops[0].Describe();
  int holder = ::open(loop.c_str(), O_RDONLY | O_EXCL);
  ASSERT_GE(holder, 0);
  loops = LoopDevicesBackedBy(FileIdOf(st));
  ASSERT_EQ(loops.size(), 1u);
  EXPECT_TRUE(loops[0].busy);
  EXPECT_EQ(loops[0].Describe(), loop + " (opened exclusively by another program)");
  ::close(holder);
  struct stat lst;
  ASSERT_EQ(::stat(loop.c_str(), &lst), 0);
  EXPECT_EQ(LoopBackingFile(lst.st_rdev), FileIdOf(st));
  Shell("losetup -d " + loop);
}

// One reader of mountinfo for every command: the device's own mounts and
// its partitions', with source and mode, paths unescaped.
TEST(DeviceUsersTest, MountsOfTheDeviceAndItsPartitionsFromMountinfo) {
  std::string info =
      "22 1 254:0 / / rw,relatime shared:1 - ext4 /dev/vda rw\n"
      "40 22 7:3 / /mnt/a\\040b rw,noatime shared:2 - ext4 /dev/loop3 rw\n"
      "41 22 259:1 / /mnt/c ro,relatime shared:3 - vfat /dev/loop3p1 ro\n";
  auto mounts = MountsFromMountinfo(info, makedev(7, 3), {makedev(259, 1)});
  ASSERT_EQ(mounts.size(), 2u);
  EXPECT_EQ(mounts[0].source, "/dev/loop3");
  EXPECT_EQ(mounts[0].point, "/mnt/a b");
  EXPECT_TRUE(mounts[0].read_write);
  EXPECT_FALSE(mounts[0].partition);
  EXPECT_EQ(mounts[1].source, "/dev/loop3p1");
  EXPECT_FALSE(mounts[1].read_write);
  EXPECT_TRUE(mounts[1].partition);
  BlockUse use{.mounts = mounts};
  EXPECT_TRUE(use.mounted_read_write());
  BlockUse ro{.mounts = MountsFromMountinfo(info, makedev(259, 1), {})};
  ASSERT_EQ(ro.mounts.size(), 1u);
  EXPECT_FALSE(ro.mounts[0].partition);
  EXPECT_FALSE(ro.mounted_read_write());
}

}  // namespace
}  // namespace flashpipe::io
