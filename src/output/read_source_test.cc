#include "output/read_source.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cstdio>

#include "testing/temp_dir.h"

namespace flashpipe::output {
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

class SourceFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = dir_.File("disk.img");
    int fd = ::open(path_.c_str(), O_RDWR | O_CREAT, 0644);
    ASSERT_EQ(::ftruncate(fd, 8 << 20), 0);
    ::close(fd);
  }
  flashpipe::testing::TempDir dir_;
  std::string path_;
};

TEST_F(SourceFileTest, TheRangeIsTheTargetsWindow) {
  auto s = OpenSource({.spec = path_, .offset = 1 << 20, .length = 4096});
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->start, 1u << 20);
  EXPECT_EQ(s->length, 4096u);
  EXPECT_EQ(s->target->window_offset(), 1u << 20);
  EXPECT_EQ(s->target->window_size(), 4096u);
  EXPECT_FALSE(s->block_device);
  EXPECT_FALSE(s->target->CheckRange(0, 8192).ok()) << "nothing past the range may be read";
  auto all = OpenSource({.spec = path_, .offset = 4096});
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(all->length, (8u << 20) - 4096) << "no --length: to the end";
}

TEST_F(SourceFileTest, ASourceShorterThanTheLengthIsRefusedSayingHowLong) {
  auto s = OpenSource({.spec = path_, .offset = 7 << 20, .length = 2 << 20});
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().message(),
            fmt::format("{} holds only 1048576 bytes from offset 7340032; --length asks for 2097152 (1048576 more)",
                        path_));
  auto beyond = OpenSource({.spec = path_, .offset = 9 << 20});
  ASSERT_FALSE(beyond.ok());
  EXPECT_NE(beyond.status().message().find("beyond the end"), std::string::npos);
  auto empty = OpenSource({.spec = path_, .offset = 8 << 20});
  ASSERT_FALSE(empty.ok());
  EXPECT_NE(empty.status().message().find("nothing to read"), std::string::npos);
}

TEST_F(SourceFileTest, AnUnalignedOffsetIsRefusedWithItsAlignment) {
  auto s = OpenSource({.spec = path_, .offset = 100});
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("--offset 100 is not a multiple of the"), std::string::npos)
      << s.status().ToString();
}

TEST_F(SourceFileTest, APartitionByNameOfADiskImage) {
  ASSERT_EQ(Shell("sgdisk -o -n 1:2048:+1M -c 1:boot -n 2:0:+2M -c 2:system " + path_ + " >/dev/null 2>&1; echo $?"),
            "0");
  auto s = OpenSource({.spec = path_ + ":system", .offset = 4096, .length = 8192});
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->partition, "system");
  EXPECT_EQ(s->start, (2048u + 2048) * 512 + 4096);
  EXPECT_EQ(s->length, 8192u);
  auto whole = OpenSource({.spec = path_ + ":boot"});
  ASSERT_TRUE(whole.ok());
  EXPECT_EQ(whole->length, 1u << 20);
  auto longer = OpenSource({.spec = path_ + ":boot", .length = (1 << 20) + 512});
  ASSERT_FALSE(longer.ok());
  EXPECT_NE(longer.status().message().find("partition 'boot' of"), std::string::npos) << longer.status().ToString();
  auto missing = OpenSource({.spec = path_ + ":vendor"});
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("no GPT partition named 'vendor' (there are: boot, system)"),
            std::string::npos)
      << missing.status().ToString();
}

TEST_F(SourceFileTest, APathWithAColonThatExistsIsAPath) {
  std::string odd = dir_.File("a:b");
  ASSERT_EQ(::rename(path_.c_str(), odd.c_str()), 0);
  auto s = OpenSource({.spec = odd});
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_TRUE(s->partition.empty());
  auto none = OpenSource({.spec = dir_.File("nothing:here")});
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.status().code(), Code::kNotFound);
}

// On a loop device (root): another program's exclusive open refuses the
// read; the claim we hold keeps writers out while we read.
class SourceDeviceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "loop devices need root";
    std::string backing = dir_.File("backing");
    Shell("truncate -s 16M " + backing);
    dev_ = Shell("losetup --direct-io=on -f --show " + backing + " 2>/dev/null");
    ASSERT_FALSE(dev_.empty());
  }
  void TearDown() override {
    if (!dev_.empty()) Shell("losetup -d " + dev_);
  }
  flashpipe::testing::TempDir dir_;
  std::string dev_;
};

TEST_F(SourceDeviceTest, ADeviceHeldByAWriterIsRefusedUnlessForced) {
  int writer = ::open(dev_.c_str(), O_RDWR | O_EXCL);  // as flashpipe write holds it
  ASSERT_GE(writer, 0);
  auto s = OpenSource({.spec = dev_});
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), Code::kBusy);
  EXPECT_NE(s.status().message().find("held exclusively by another program"), std::string::npos);
  auto forced = OpenSource({.spec = dev_, .force = true});
  ASSERT_TRUE(forced.ok()) << forced.status().ToString();
  ASSERT_EQ(forced->warnings.size(), 1u);
  ::close(writer);
}

TEST_F(SourceDeviceTest, WhileReadTheDeviceCannotBeOpenedExclusivelyForWriting) {
  auto s = OpenSource({.spec = dev_});
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_TRUE(s->block_device);
  EXPECT_TRUE(s->warnings.empty());
  int writer = ::open(dev_.c_str(), O_RDWR | O_EXCL);
  EXPECT_LT(writer, 0) << "a writer got the device while it was being read";
  EXPECT_EQ(errno, EBUSY);
  if (writer >= 0) ::close(writer);
}

TEST_F(SourceDeviceTest, AMountedDeviceIsReadWithAWarning) {
  ASSERT_EQ(Shell("mkfs.ext4 -q -F " + dev_ + " >/dev/null 2>&1; echo $?"), "0");
  std::string mnt = dir_.File("mnt");
  ::mkdir(mnt.c_str(), 0755);
  ASSERT_EQ(Shell("mount " + dev_ + " " + mnt + " 2>&1; echo $?"), "0");
  auto s = OpenSource({.spec = dev_});
  Shell("umount " + mnt);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  ASSERT_EQ(s->warnings.size(), 1u);
  EXPECT_EQ(s->warnings[0], dev_ + " is mounted at " + mnt + " (read-write): files may change while they are read, "
                            "so the image may be inconsistent (unmount it or remount it read-only first)");
}

TEST(MountWarningTest, TheWarningNamesAMountedPartitionAndSaysWhatReadWriteMeans) {
  io::BlockUse whole{.mounts = {{"/dev/sdb", "/mnt", false}}};
  EXPECT_EQ(MountWarning("/dev/sdb", whole), "/dev/sdb is mounted at /mnt (read-only)");
  io::BlockUse parts{.mounts = {{"/dev/sdb1", "/boot", false, true}, {"/dev/sdb2", "/", true, true}}};
  EXPECT_EQ(MountWarning("/dev/sdb", parts),
            "/dev/sdb has mounted partitions: /dev/sdb1 at /boot (read-only), /dev/sdb2 at / (read-write): files may "
            "change while they are read, so the image may be inconsistent (unmount it or remount it read-only first)");
}

}  // namespace
}  // namespace flashpipe::output
