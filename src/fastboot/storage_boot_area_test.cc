// serve's flash and erase of an eMMC boot area lift its force_ro for the
// write only. No eMMC here: a loop device stands for mmcblk0boot0 in a
// stand-in sysfs (needs root for the loop device).
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "fastboot/storage.h"
#include "testing/temp_dir.h"

namespace flashpipe::fastboot {
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

class StorageBootAreaTest : public ::testing::Test {
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
    std::ofstream(sys_ + "/block/mmcblk0boot0/force_ro") << "1\n";
  }
  void TearDown() override {
    storage_.reset();
    if (!loop_.empty()) Shell("losetup -d " + loop_);
  }
  std::string ForceRo() {
    std::ifstream in(sys_ + "/block/mmcblk0boot0/force_ro");
    std::string s;
    std::getline(in, s);
    return s;
  }

  testing::TempDir dir_;
  std::string loop_, sys_;
  std::unique_ptr<Storage> storage_;
};

TEST_F(StorageBootAreaTest, FlashAndEraseLiftForceRoForTheWriteOnly) {
  auto s = Storage::OpenSpecs({{.name = "mmc0boot0", .path = loop_}}, {.sysfs_root = sys_});
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  storage_ = std::move(*s);
  const Partition* p = storage_->Find("mmc0boot0");
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(ForceRo(), "1");  // opening changes nothing
  std::vector<uint8_t> image(256 << 10, 0x5a);
  std::span<const uint8_t> piece(image);
  std::string during;
  Status st = storage_->Write(*p, std::span(&piece, 1), false, [&](uint64_t, uint64_t) { during += ForceRo(); }, true);
  ASSERT_TRUE(st.ok()) << st.ToString();
  ASSERT_FALSE(during.empty());
  EXPECT_EQ(during.find('1'), std::string::npos) << during;
  EXPECT_EQ(ForceRo(), "1");
  ASSERT_TRUE(storage_->Erase(*p).ok());
  EXPECT_EQ(ForceRo(), "1");
  std::vector<uint8_t> big(2 << 20, 1);  // larger than the area: refused, restored
  std::span<const uint8_t> big_piece(big);
  EXPECT_FALSE(storage_->Write(*p, std::span(&big_piece, 1), false, nullptr, true).ok());
  EXPECT_EQ(ForceRo(), "1");
}

TEST_F(StorageBootAreaTest, AddWholeDeviceServesABootAreaBesideTheDisk) {
  std::string disk = dir_.File("disk");
  testing::WriteFile(disk, std::vector<uint8_t>(1 << 20, 0));
  auto s = Storage::OpenSpecs({{.name = "system", .path = disk}}, {.sysfs_root = sys_});
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  storage_ = std::move(*s);
  ASSERT_TRUE(storage_->AddWholeDevice("mmc0boot0", loop_).ok());
  EXPECT_FALSE(storage_->AddWholeDevice("mmc0boot0", loop_).ok());  // defined twice
  const Partition* p = storage_->Find("mmc0boot0");
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->size, 1u << 20);
  std::vector<uint8_t> image(4096, 0x33);
  std::span<const uint8_t> piece(image);
  ASSERT_TRUE(storage_->Write(*p, std::span(&piece, 1), false, nullptr, true).ok());
  EXPECT_EQ(ForceRo(), "1");
  storage_.reset();
  auto back = testing::ReadFile(loop_);
  EXPECT_EQ(std::vector<uint8_t>(back.begin(), back.begin() + 4096), image);
}

// serve --storage DISK --mmc: the boot areas live beside the disk's table, so
// a table change (flash gpt, oem format) keeps serving them.
TEST_F(StorageBootAreaTest, BootAreasOutliveATableChange) {
  std::string disk = dir_.File("disk");
  testing::WriteFile(disk, std::vector<uint8_t>(32 << 20, 0));
  std::vector<std::string> warnings;
  auto s = Storage::OpenGpt(disk, {.sysfs_root = sys_}, &warnings);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  storage_ = std::move(*s);
  ASSERT_TRUE(storage_->AddWholeDevice("mmc0boot0", loop_).ok());
  std::string layout = "name=boot,size=1MiB;name=system,size=-;";
  auto out = storage_->ChangeTable({reinterpret_cast<const uint8_t*>(layout.data()), layout.size()}, "flash gpt",
                                   'a', &warnings);
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_NE(storage_->Find("system"), nullptr);
  const Partition* p = storage_->Find("mmc0boot0");
  ASSERT_NE(p, nullptr) << "the boot area was dropped with the old table";
  EXPECT_EQ(p->size, 1u << 20);
  EXPECT_NE(p->backing, storage_->Find("system")->backing);
}

}  // namespace
}  // namespace flashpipe::fastboot
