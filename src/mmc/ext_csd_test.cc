#include "mmc/ext_csd.h"

#include <gtest/gtest.h>

namespace flashpipe::mmc {
namespace {

ExtCsd Card51() {
  ExtCsd c;
  auto& b = c.mutable_bytes();
  b[field::kExtCsdRev] = 8;
  b[field::kBootSizeMult] = 32;
  b[field::kRpmbSizeMult] = 16;
  b[field::kBootInfo] = 0x07;
  return c;
}

TEST(PartitionConfig, FieldsAtTheirJedecBits) {
  EXPECT_EQ((PartitionConfig{.boot_ack = true, .boot_partition = 1, .partition_access = 0}.Encode()), 0x48);
  EXPECT_EQ((PartitionConfig{.boot_ack = false, .boot_partition = 7, .partition_access = 2}.Encode()), 0x3a);
  auto d = PartitionConfig::Decode(0x51);  // ack, boot area 2, access boot1
  EXPECT_TRUE(d.boot_ack);
  EXPECT_EQ(d.boot_partition, 2);
  EXPECT_EQ(d.partition_access, 1);
  for (int v = 0; v < 128; ++v) EXPECT_EQ(PartitionConfig::Decode(v).Encode(), v);
}

TEST(BootBus, FieldsAtTheirJedecBits) {
  EXPECT_EQ((BootBus{.width = 2, .retain = true, .mode = 2}.Encode()), 0x16);
  EXPECT_EQ((BootBus{.width = 1, .retain = false, .mode = 1}.Encode()), 0x09);
  for (int v = 0; v < 32; ++v) EXPECT_EQ(BootBus::Decode(v).Encode(), v);
}

TEST(ExtCsd, DecodesSizesAndRevision) {
  ExtCsd c = Card51();
  auto& b = c.mutable_bytes();
  b[field::kSecCount] = 0x00;
  b[field::kSecCount + 1] = 0x00;
  b[field::kSecCount + 2] = 0xe9;
  b[field::kSecCount + 3] = 0x01;
  EXPECT_EQ(c.sector_count(), 0x01e90000u);
  EXPECT_EQ(c.boot_area_size(), 4u << 20);
  EXPECT_EQ(c.rpmb_size(), 2u << 20);
  EXPECT_EQ(c.revision_name(), "5.1");
  b[field::kExtCsdRev] = 4;
  EXPECT_EQ(c.revision_name(), "revision 4");
  b[field::kExtCsdRev] = 5;
  EXPECT_EQ(c.revision_name(), "4.41");
  b[field::kBootWpStatus] = 0x09;  // area 0 power-on, area 1 permanent
  EXPECT_EQ(c.boot_wp_status(0), 1);
  EXPECT_EQ(c.boot_wp_status(1), 2);
  b[field::kGpSizeMult + 3] = 0x10;  // GP2, low byte
  EXPECT_EQ(c.gp_size_mult(1), 0u);
  EXPECT_EQ(c.gp_size_mult(2), 0x10u);
}

TEST(CheckPartitionConfig, AcceptsWhatU_BootAccepts) {
  ExtCsd c = Card51();
  EXPECT_TRUE(CheckPartitionConfig(c, {.boot_ack = true, .boot_partition = 1}).ok());
  EXPECT_TRUE(CheckPartitionConfig(c, {.boot_ack = false, .boot_partition = 2, .partition_access = 0}).ok());
  EXPECT_TRUE(CheckPartitionConfig(c, {.boot_ack = false, .boot_partition = 7}).ok());
  EXPECT_TRUE(CheckPartitionConfig(c, {.boot_partition = 0, .partition_access = 3}).ok());
}

TEST(CheckPartitionConfig, RefusesReservedBootPartitionValues) {
  for (uint8_t v : {3, 4, 5, 6, 8, 200}) {
    Status s = CheckPartitionConfig(Card51(), {.boot_partition = v});
    EXPECT_EQ(s.code(), Code::kInvalidArgument) << int(v);
    EXPECT_NE(s.message().find("is reserved"), std::string::npos) << s.message();
  }
}

TEST(CheckPartitionConfig, RefusesBootAreasTheCardLacks) {
  ExtCsd c = Card51();
  c.mutable_bytes()[field::kBootSizeMult] = 0;
  Status s = CheckPartitionConfig(c, {.boot_partition = 1});
  EXPECT_EQ(s.code(), Code::kUnsupported);
  EXPECT_EQ(s.message(), "the card has no boot areas (BOOT_SIZE_MULT [226] is 0)");
  EXPECT_EQ(CheckPartitionConfig(c, {.boot_partition = 0, .partition_access = 2}).code(), Code::kUnsupported);
  EXPECT_TRUE(CheckPartitionConfig(c, {.boot_partition = 7}).ok());  // the user area boots
}

TEST(CheckPartitionConfig, RefusesRpmbAndGpPartitionsTheCardLacks) {
  ExtCsd c = Card51();
  c.mutable_bytes()[field::kRpmbSizeMult] = 0;
  EXPECT_EQ(CheckPartitionConfig(c, {.partition_access = 3}).message(),
            "the card has no RPMB partition (RPMB_SIZE_MULT [168] is 0)");
  EXPECT_EQ(CheckPartitionConfig(c, {.partition_access = 5}).message(),
            "the card has no general purpose partition 2 (GP_SIZE_MULT_2 [146] is 0)");
  c.mutable_bytes()[field::kGpSizeMult + 3] = 1;
  EXPECT_TRUE(CheckPartitionConfig(c, {.partition_access = 5}).ok());
}

TEST(CheckPartitionConfig, RefusesCardsOlderThan43) {
  ExtCsd c = Card51();
  c.mutable_bytes()[field::kExtCsdRev] = 2;
  EXPECT_EQ(CheckPartitionConfig(c, {.boot_partition = 1}).message(),
            "EXT_CSD_REV [192] is 2 (eMMC 4.2): PARTITION_CONFIG [179] came with 4.3");
}

TEST(CheckPartitionConfig, BootConfigProtLocksOnlyTheBootBits) {
  ExtCsd c = Card51();
  c.mutable_bytes()[field::kPartitionConfig] = 0x48;
  c.mutable_bytes()[field::kBootConfigProt] = 0x10;
  Status s = CheckPartitionConfig(c, {.boot_ack = false, .boot_partition = 1});
  EXPECT_EQ(s.message(), "BOOT_ACK and BOOT_PARTITION_ENABLE are locked permanently (BOOT_CONFIG_PROT [178] is 0x10)");
  EXPECT_TRUE(CheckPartitionConfig(c, {.boot_ack = true, .boot_partition = 1, .partition_access = 0}).ok());
  c.mutable_bytes()[field::kBootConfigProt] = 0x01;
  EXPECT_NE(CheckPartitionConfig(c, {.boot_partition = 2}).message().find("until the next power cycle"), std::string::npos);
}

TEST(CheckBootBus, RefusesReservedAndUnsupported) {
  ExtCsd c = Card51();
  EXPECT_TRUE(CheckBootBus(c, {.width = 2, .retain = true, .mode = 2}).ok());
  EXPECT_EQ(CheckBootBus(c, {.width = 3}).code(), Code::kInvalidArgument);
  EXPECT_EQ(CheckBootBus(c, {.width = 0, .mode = 3}).code(), Code::kInvalidArgument);
  c.mutable_bytes()[field::kBootInfo] = 0x01;  // neither DDR nor HS boot
  EXPECT_EQ(CheckBootBus(c, {.width = 1, .mode = 2}).message(),
            "the card does not boot in DDR mode (BOOT_INFO [228] is 0x01, DDR_BOOT_MODE bit 1 clear)");
  EXPECT_EQ(CheckBootBus(c, {.width = 1, .mode = 1}).code(), Code::kUnsupported);
  EXPECT_TRUE(CheckBootBus(c, {.width = 1, .mode = 0}).ok());
  c.mutable_bytes()[field::kBootSizeMult] = 0;
  EXPECT_EQ(CheckBootBus(c, {.width = 0}).code(), Code::kUnsupported);
}

TEST(Names, SayWhatTheValuesMean) {
  EXPECT_EQ(BootPartitionName(7), "user area");
  EXPECT_EQ(BootPartitionName(4), "reserved (4)");
  EXPECT_EQ(PartitionAccessName(3), "RPMB");
  EXPECT_EQ(PartitionAccessName(7), "GP4");
  EXPECT_EQ(BootBusWidthName(2), "x8");
  EXPECT_EQ(BootModeName(1), "sdr-hs");
  EXPECT_EQ(BootWpName(2), "permanent");
}

}  // namespace
}  // namespace flashpipe::mmc
