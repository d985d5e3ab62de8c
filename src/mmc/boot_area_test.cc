#include "mmc/boot_area.h"

#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "testing/temp_dir.h"

namespace flashpipe::mmc {
namespace {

// A stand-in for /sys with boot areas of mmcblk0.
class FakeSysfs {
 public:
  FakeSysfs() {
    for (const char* name : {"mmcblk0boot0", "mmcblk0boot1", "mmcblk0"}) {
      std::filesystem::create_directories(root() + "/block/" + name);
    }
    Set("mmcblk0boot0", "1\n");
    Set("mmcblk0boot1", "0\n");
  }
  std::string root() const { return dir_.path(); }
  std::string file(const std::string& name) const { return root() + "/block/" + name + "/force_ro"; }
  void Set(const std::string& name, const std::string& v) { std::ofstream(file(name)) << v; }
  std::string Get(const std::string& name) const {
    std::ifstream in(file(name));
    std::string s;
    std::getline(in, s);
    return s;
  }

 private:
  testing::TempDir dir_;
};

TEST(ParseBootAreaName, KnowsTheKernelsNames) {
  auto b = ParseBootAreaName("mmcblk12boot1");
  ASSERT_TRUE(b);
  EXPECT_EQ(b->card, "mmcblk12");
  EXPECT_EQ(b->index, 1);
  EXPECT_FALSE(ParseBootAreaName("mmcblk0"));
  EXPECT_FALSE(ParseBootAreaName("mmcblk0p1"));
  EXPECT_FALSE(ParseBootAreaName("mmcblk0boot2"));
  EXPECT_FALSE(ParseBootAreaName("mmcblkboot0"));
  EXPECT_FALSE(ParseBootAreaName("sda"));
  EXPECT_FALSE(ParseBootAreaName("mmcblk0rpmb"));
}

TEST(ForceRoGuard, SwitchesOffAndRestores) {
  FakeSysfs sys;
  {
    auto g = ForceRoGuard::Release("mmcblk0boot0", sys.root());
    ASSERT_TRUE(g.ok()) << g.status().ToString();
    EXPECT_TRUE(g->active());
    EXPECT_EQ(sys.Get("mmcblk0boot0"), "0");
  }
  EXPECT_EQ(sys.Get("mmcblk0boot0"), "1");
}

TEST(ForceRoGuard, RestoreReportsAndRunsOnce) {
  FakeSysfs sys;
  auto g = ForceRoGuard::Release("mmcblk0boot0", sys.root());
  ASSERT_TRUE(g.ok());
  ASSERT_TRUE(g->Restore().ok());
  EXPECT_FALSE(g->active());
  EXPECT_EQ(sys.Get("mmcblk0boot0"), "1");
  sys.Set("mmcblk0boot0", "0\n");  // someone else changes it afterwards
  ASSERT_TRUE(g->Restore().ok());
  EXPECT_EQ(sys.Get("mmcblk0boot0"), "0");
}

TEST(ForceRoGuard, AlreadyWritableIsLeftAlone) {
  FakeSysfs sys;
  auto g = ForceRoGuard::Release("mmcblk0boot1", sys.root());
  ASSERT_TRUE(g.ok());
  EXPECT_FALSE(g->active());
  EXPECT_EQ(sys.Get("mmcblk0boot1"), "0");
}

TEST(ForceRoGuard, NotABootAreaIsLeftAlone) {
  FakeSysfs sys;
  auto g = ForceRoGuard::Release("mmcblk0", sys.root());
  ASSERT_TRUE(g.ok());
  EXPECT_FALSE(g->active());
}

TEST(ForceRoGuard, MissingForceRoIsAnError) {
  FakeSysfs sys;
  auto g = ForceRoGuard::Release("mmcblk3boot0", sys.root());
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.status().message().find("mmcblk3boot0/force_ro"), std::string::npos) << g.status().message();
}

TEST(ForceRoGuard, MovedGuardRestoresOnce) {
  FakeSysfs sys;
  std::optional<ForceRoGuard> held;
  {
    auto g = ForceRoGuard::Release("mmcblk0boot0", sys.root());
    ASSERT_TRUE(g.ok());
    held.emplace(std::move(*g));
  }
  EXPECT_EQ(sys.Get("mmcblk0boot0"), "0");  // the moved-from guard did nothing
  held.reset();
  EXPECT_EQ(sys.Get("mmcblk0boot0"), "1");
}

TEST(ForceRoGuard, SignalPathRestoresLiveGuards) {
  FakeSysfs sys;
  auto g = ForceRoGuard::Release("mmcblk0boot0", sys.root());
  ASSERT_TRUE(g.ok());
  RestoreForceRoFromSignal();
  EXPECT_EQ(sys.Get("mmcblk0boot0"), "1");
}

TEST(ForceRoGuard, ReleaseDeviceFindsTheNameBySysfsNumber) {
  FakeSysfs sys;
  std::filesystem::create_directories(sys.root() + "/dev/block");
  std::filesystem::create_symlink("../../block/mmcblk0boot0", sys.root() + "/dev/block/179:8");
  {
    auto g = ForceRoGuard::ReleaseDevice(makedev(179, 8), sys.root());
    ASSERT_TRUE(g.ok()) << g.status().ToString();
    EXPECT_TRUE(g->active());
    EXPECT_EQ(sys.Get("mmcblk0boot0"), "0");
  }
  EXPECT_EQ(sys.Get("mmcblk0boot0"), "1");
  auto other = ForceRoGuard::ReleaseDevice(makedev(8, 0), sys.root());  // not in the stand-in
  ASSERT_TRUE(other.ok());
  EXPECT_FALSE(other->active());
}

TEST(ListBootAreas, ReadsForceRo) {
  FakeSysfs sys;
  auto areas = ListBootAreas("mmcblk0", sys.root());
  ASSERT_EQ(areas.size(), 2u);
  EXPECT_EQ(areas[0].name, "mmcblk0boot0");
  EXPECT_TRUE(areas[0].force_ro);
  EXPECT_FALSE(areas[1].force_ro);
  EXPECT_TRUE(ListBootAreas("mmcblk1", sys.root()).empty());
}

TEST(FastbootBootAreas, UBootNamesForTheCardsBootAreas) {
  FakeSysfs sys;
  testing::TempDir dev;  // BlockNameOf follows the path: a stand-in node named like the card
  std::ofstream(dev.File("mmcblk0")) << "";
  auto areas = FastbootBootAreas(dev.File("mmcblk0"), sys.root());
  ASSERT_EQ(areas.size(), 2u);
  EXPECT_EQ(areas[0].name, "mmc0boot0");
  EXPECT_EQ(areas[0].device, "/dev/mmcblk0boot0");
  EXPECT_EQ(areas[1].name, "mmc0boot1");
  std::ofstream(dev.File("mmcblk0boot1")) << "";
  EXPECT_EQ(FastbootBootAreas(dev.File("mmcblk0boot1"), sys.root()).size(), 2u);
  std::ofstream(dev.File("sda")) << "";
  EXPECT_TRUE(FastbootBootAreas(dev.File("sda"), sys.root()).empty());
  EXPECT_TRUE(FastbootBootAreas(dev.File("missing"), sys.root()).empty());
}

}  // namespace
}  // namespace flashpipe::mmc
