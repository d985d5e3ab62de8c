// oem partconf and oem bootbus against the fake eMMC (testing/fake_mmc_card.h):
// no eMMC model exists in the VM tests' QEMU.
#include <gtest/gtest.h>

#include <memory>

#include "fastboot/session.h"
#include "testing/fake_mmc_card.h"
#include "testing/fastboot_fakes.h"
#include "testing/session_runner.h"

namespace flashpipe::fastboot {
namespace {

constexpr uint64_t kMiB = 1 << 20;

// The session owns what open_mmc returns; the test keeps the card.
class CardHandle final : public mmc::MmcDevice {
 public:
  explicit CardHandle(testing::FakeMmcCard* card) : card_(card) {}
  Status Issue(mmc_ioc_cmd& cmd) override { return card_->Issue(cmd); }
  const std::string& name() const override { return card_->name(); }
  const std::string& card_type() const override { return card_->card_type(); }

 private:
  testing::FakeMmcCard* card_;
};

class SessionMmcTest : public ::testing::Test {
 protected:
  void Make(bool with_mmc) {
    DeviceConfig config;
    config.max_download_size = 2 * kMiB;
    if (with_mmc) {
      config.open_mmc = [this]() -> Result<std::unique_ptr<mmc::MmcDevice>> {
        return std::unique_ptr<mmc::MmcDevice>(std::make_unique<CardHandle>(&card_));
      };
    }
    std::vector<Partition> parts = {{"boot", 0, kMiB, kMiB}};
    mem_.Allow(kMiB, kMiB);
    io::Geometry g{.size = mem_.disk().size(), .logical_block = 512, .physical_block = 4096,
                   .mem_align = 512, .offset_align = 512, .max_request = kMiB, .direct = false};
    device_ = std::make_unique<FastbootDevice>(config, Storage::ForQueue(&mem_, g, parts), PersistentState::InMemory());
  }
  std::string One(const std::string& command) { return testing::RunOne(device_.get(), command, true); }

  testing::FakeMmcCard card_;
  testing::MemQueue mem_{4 * kMiB, 0xa5};
  std::unique_ptr<FastbootDevice> device_;
};

TEST_F(SessionMmcTest, PartconfWritesTheCardAndSaysWhat) {
  Make(true);
  testing::ScriptedConnection t;
  t.Command("oem partconf:1:1");
  auto finals = testing::RunSession(device_.get(), t);
  ASSERT_EQ(finals.size(), 1u);
  EXPECT_EQ(finals[0], "OKAYPARTITION_CONFIG [179] 0x00 -> 0x48");
  ASSERT_FALSE(t.Infos().empty());
  EXPECT_EQ(t.Infos()[0].substr(0, 12), "BOOT_ACK 1, ");
  EXPECT_EQ(card_.byte(mmc::field::kPartitionConfig), 0x48);
  EXPECT_EQ(One("oem partconf 1 1"), "OKAYPARTITION_CONFIG [179] 0x48 already");  // the spaced form too
  EXPECT_EQ(One("oem partconf:0:2:0"), "OKAYPARTITION_CONFIG [179] 0x48 -> 0x10");
}

TEST_F(SessionMmcTest, BootbusWritesTheCard) {
  Make(true);
  EXPECT_EQ(One("oem bootbus:2:0:2"), "OKAYBOOT_BUS_CONDITIONS [177] 0x00 -> 0x12");
  EXPECT_EQ(card_.byte(mmc::field::kBootBusConditions), 0x12);
}

TEST_F(SessionMmcTest, RefusedWhileLocked) {
  Make(true);
  ASSERT_EQ(One("flashing lock"), "OKAY");
  EXPECT_EQ(One("oem partconf:1:1"), "FAILoem partconf: locked (fastboot flashing unlock)");
  EXPECT_EQ(One("oem bootbus:2:0:0"), "FAILoem bootbus: locked (fastboot flashing unlock)");
  EXPECT_TRUE(card_.commands().empty());
}

TEST_F(SessionMmcTest, WhatTheCardCannotDoFailsWithoutASwitch) {
  Make(true);
  card_.set_boot_size_mult(0);
  EXPECT_EQ(One("oem partconf:1:1"), "FAIL/dev/mmcblk0: the card has no boot areas (BOOT_SIZE_MULT [226] is 0)");
  EXPECT_EQ(One("oem partconf:1:4"), "FAIL/dev/mmcblk0: BOOT_PARTITION_ENABLE 4 is reserved (PARTITION_CONFIG [179] bits "
                                     "5:3: 0 none, 1 boot area 1, 2 boot area 2, 7 user area)");
  EXPECT_EQ(card_.switches(), 0);
  EXPECT_EQ(One("oem partconf:1"), "FAILoem partconf:BOOT_ACK:BOOT_PARTITION[:PARTITION_ACCESS]");
  EXPECT_EQ(One("oem bootbus:3:0:0"), "FAILBOOT_BUS_WIDTH '3': give 0-2 or x1, x4, x8");
  EXPECT_EQ(card_.switches(), 0);
}

TEST_F(SessionMmcTest, WithoutAnEmmcSaysHowToGiveOne) {
  Make(false);
  EXPECT_EQ(One("oem partconf:1:1"), "FAILoem partconf: no eMMC (serve --mmc /dev/mmcblkN)");
}

TEST_F(SessionMmcTest, AnSdCardHasNoExtCsd) {
  Make(true);
  card_.set_type("SD");
  std::string r = One("oem partconf:1:1");
  EXPECT_EQ(r.substr(0, 72), "FAIL/dev/mmcblk0 is an SD card (sysfs device/type SD): it has no EXT_CSD") << r;
  EXPECT_EQ(card_.switches(), 0);
}

}  // namespace
}  // namespace flashpipe::fastboot
