// A write to an eMMC boot area switches its force_ro off for the write and
// back after, whatever happens. No eMMC here: a loop device stands for the
// boot area and a stand-in sysfs names it mmcblk0boot0 (needs root for the
// loop device, which the test machines have).
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "testing/fake_mmc_card.h"

#include "input/write_targets.h"
#include "testing/temp_dir.h"

namespace flashpipe::input {
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

class BootAreaTargetTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "loop devices need root";
    std::string backing = dir_.File("backing");
    testing::WriteFile(backing, std::vector<uint8_t>(1 << 20, 0));
    loop_ = Shell("losetup -f --show " + backing + " 2>/dev/null");
    ASSERT_FALSE(loop_.empty()) << "losetup failed";
    struct stat st;
    ASSERT_EQ(::stat(loop_.c_str(), &st), 0);
    sys_ = dir_.File("sys");
    std::filesystem::create_directories(sys_ + "/block/mmcblk0boot0");
    std::filesystem::create_directories(sys_ + "/dev/block");
    std::filesystem::create_symlink("../../block/mmcblk0boot0",
                                    fmt::format("{}/dev/block/{}:{}", sys_, major(st.st_rdev), minor(st.st_rdev)));
    SetForceRo("1\n");
  }
  void TearDown() override {
    if (!loop_.empty()) Shell("losetup -d " + loop_);
  }
  void SetForceRo(const std::string& v) { std::ofstream(sys_ + "/block/mmcblk0boot0/force_ro") << v; }
  std::string ForceRo() {
    std::ifstream in(sys_ + "/block/mmcblk0boot0/force_ro");
    std::string s;
    std::getline(in, s);
    return s;
  }
  // The card behind the stand-in boot area: a fake that answers EXT_CSD.
  TargetPolicy Policy() {
    TargetPolicy p{.force = false, .in_place = false, .sysfs_root = sys_};
    p.open_card = [this](const std::string& node) -> Result<std::unique_ptr<mmc::MmcDevice>> {
      opened_ = node;
      auto card = std::make_unique<testing::FakeMmcCard>();
      card->set_byte(mmc::field::kBootWpStatus, boot_wp_status_);
      return std::unique_ptr<mmc::MmcDevice>(std::move(card));
    };
    return p;
  }
  uint8_t boot_wp_status_ = 0;
  std::string opened_;

  testing::TempDir dir_;
  std::string loop_, sys_;
};

TEST_F(BootAreaTargetTest, ForceRoIsOffFromPrepareUntilTheTargetsGo) {
  {
    WriteTargets t = WriteTargets::Check({loop_}, Policy());
    ASSERT_TRUE(t.status().ok()) << t.status().ToString();
    EXPECT_EQ(ForceRo(), "1");  // checking changes nothing
    ASSERT_TRUE(t.Prepare(4096).ok());
    EXPECT_EQ(ForceRo(), "0");
    ASSERT_TRUE(t.Commit(4096).ok());
    EXPECT_EQ(ForceRo(), "0");  // still held: verify reads may follow
  }
  EXPECT_EQ(ForceRo(), "1");
}

TEST_F(BootAreaTargetTest, AFailedWriteRestoresForceRo) {
  {
    WriteTargets t = WriteTargets::Check({loop_}, Policy());
    ASSERT_TRUE(t.Prepare(4096).ok());
    t.Blame(0, IoError("write", EIO));  // the job fails; no Commit
    EXPECT_FALSE(t.status().ok());
  }
  EXPECT_EQ(ForceRo(), "1");
}

// BOOT_WP_STATUS [174]: 2 bits per area. A protected area is refused before
// force_ro or anything else changes; the other area's protection is not its.
TEST_F(BootAreaTargetTest, AWriteProtectedBootAreaIsRefusedBeforeAnythingChanges) {
  boot_wp_status_ = 0x01;  // area 0 (mmcblk0boot0): power-on protected
  {
    WriteTargets t = WriteTargets::Check({loop_}, Policy());
    ASSERT_TRUE(t.status().ok()) << t.status().ToString();
    Status s = t.Prepare(4096);
    ASSERT_FALSE(s.ok());
    EXPECT_NE(s.message().find("mmcblk0boot0 is write-protected (power-on: BOOT_WP_STATUS [174] = 0x01)"),
              std::string::npos) << s.message();
    EXPECT_EQ(ForceRo(), "1");
  }
  EXPECT_EQ(opened_, "/dev/mmcblk0");
  EXPECT_EQ(ForceRo(), "1");
  boot_wp_status_ = 0x08;  // area 1 permanently protected: area 0 is writable
  WriteTargets t = WriteTargets::Check({loop_}, Policy());
  ASSERT_TRUE(t.Prepare(4096).ok());
  EXPECT_EQ(ForceRo(), "0");
}

TEST_F(BootAreaTargetTest, ARefusedWriteNeverTouchesForceRo) {
  WriteTargets t = WriteTargets::Check({loop_}, Policy());
  EXPECT_FALSE(t.CheckFits(4u << 20, 0).ok());  // 4 MiB image, 1 MiB target
  EXPECT_EQ(ForceRo(), "1");
}

TEST_F(BootAreaTargetTest, AnUnreadableForceRoFailsPrepare) {
  std::filesystem::remove(sys_ + "/block/mmcblk0boot0/force_ro");
  WriteTargets t = WriteTargets::Check({loop_}, Policy());
  Status s = t.Prepare(4096);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find(loop_ + ": cannot open"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("mmcblk0boot0/force_ro"), std::string::npos) << s.message();
}

}  // namespace
}  // namespace flashpipe::input
