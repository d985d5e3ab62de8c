#include "mmc/card.h"

#include <gtest/gtest.h>

#include "testing/fake_mmc_card.h"

namespace flashpipe::mmc {
namespace {

using testing::FakeMmcCard;

bool Contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

TEST(ReadExtCsd, ReadsTheCardsRegister) {
  FakeMmcCard card;
  card.set_byte(field::kPartitionConfig, 0x48);
  auto e = ReadExtCsd(card);
  ASSERT_TRUE(e.ok()) << e.status().ToString();
  EXPECT_EQ(e->revision(), 8);
  EXPECT_EQ((*e)[field::kPartitionConfig], 0x48);
  ASSERT_EQ(card.commands().size(), 1u);
  EXPECT_EQ(card.commands()[0].opcode, kCmdSendExtCsd);
}

TEST(ReadExtCsd, AnSdCardHasNoExtCsd) {
  FakeMmcCard card;
  card.set_type("SD");
  auto e = ReadExtCsd(card);
  ASSERT_FALSE(e.ok());
  EXPECT_EQ(e.status().code(), Code::kUnsupported);
  EXPECT_TRUE(Contains(e.status().message(), "/dev/mmcblk0 is an SD card (sysfs device/type SD): it has no EXT_CSD"))
      << e.status().message();
  EXPECT_TRUE(Contains(e.status().message(), "CMD8 SEND_EXT_CSD through MMC_IOC_CMD: no response to CMD8"));
  EXPECT_EQ(card.commands().size(), 1u);  // the command went to the card
}

TEST(ReadExtCsd, ACardThatAnswersCmd8WithAnErrorHasNoExtCsd) {
  FakeMmcCard card;
  card.no_ext_csd();
  auto e = ReadExtCsd(card);
  ASSERT_FALSE(e.ok());
  EXPECT_TRUE(Contains(e.status().message(), "answered CMD8 SEND_EXT_CSD with an error, so it has no EXT_CSD"))
      << e.status().message();
}

TEST(SetPartitionConfig, WritesAndReadsBack) {
  FakeMmcCard card;
  auto c = SetPartitionConfig(card, {.boot_ack = true, .boot_partition = 1});
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(card.byte(field::kPartitionConfig), 0x48);
  EXPECT_EQ(c->before[field::kPartitionConfig], 0x00);
  EXPECT_EQ(c->after[field::kPartitionConfig], 0x48);
  EXPECT_TRUE(c->changed());
  // read, switch, read back
  ASSERT_EQ(card.commands().size(), 3u);
  EXPECT_EQ(card.commands()[1].opcode, kCmdSwitch);
  EXPECT_EQ(card.commands()[1].arg, 0x03b34801u);  // write byte, index 179, value 0x48, normal command set
  EXPECT_EQ(card.commands()[2].opcode, kCmdSendExtCsd);
}

TEST(SetPartitionConfig, KeepsPartitionAccessUnlessGiven) {
  FakeMmcCard card;
  card.set_byte(field::kPartitionConfig, 0x02);  // access boot area 2
  ASSERT_TRUE(SetPartitionConfig(card, {.boot_ack = false, .boot_partition = 2}).ok());
  EXPECT_EQ(card.byte(field::kPartitionConfig), 0x12);
  ASSERT_TRUE(SetPartitionConfig(card, {.boot_ack = false, .boot_partition = 2, .partition_access = 0}).ok());
  EXPECT_EQ(card.byte(field::kPartitionConfig), 0x10);
}

TEST(SetPartitionConfig, SameValueSendsNoSwitch) {
  FakeMmcCard card;
  card.set_byte(field::kPartitionConfig, 0x48);
  auto c = SetPartitionConfig(card, {.boot_ack = true, .boot_partition = 1});
  ASSERT_TRUE(c.ok());
  EXPECT_FALSE(c->changed());
  EXPECT_EQ(card.switches(), 0);
}

TEST(SetPartitionConfig, ReservedValueNeverReachesTheCard) {
  FakeMmcCard card;
  auto c = SetPartitionConfig(card, {.boot_partition = 5});
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), Code::kInvalidArgument);
  EXPECT_TRUE(Contains(c.status().message(), "/dev/mmcblk0: BOOT_PARTITION_ENABLE 5 is reserved")) << c.status().message();
  EXPECT_EQ(card.switches(), 0);
  EXPECT_EQ(card.byte(field::kPartitionConfig), 0x00);
}

TEST(SetPartitionConfig, CardWithoutBootAreasIsRefused) {
  FakeMmcCard card;
  card.set_boot_size_mult(0);
  auto c = SetPartitionConfig(card, {.boot_ack = true, .boot_partition = 1});
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().message(), "/dev/mmcblk0: the card has no boot areas (BOOT_SIZE_MULT [226] is 0)");
  EXPECT_EQ(card.switches(), 0);
}

TEST(SetPartitionConfig, SdCardGetsNoSwitch) {
  FakeMmcCard card;
  card.set_type("SD");
  EXPECT_FALSE(SetPartitionConfig(card, {.boot_partition = 1}).ok());
  EXPECT_EQ(card.switches(), 0);
  EXPECT_FALSE(SwitchByte(card, field::kPartitionConfig, 0x08).ok());
  EXPECT_EQ(card.switches(), 0);
}

TEST(WriteField, AValueTheCardRefusesIsAnErrorAfterTheReadBack) {
  // What the checks would refuse, sent anyway: the card keeps the field, and
  // only the read-back shows it (the ioctl path reports no SWITCH_ERROR).
  FakeMmcCard card;
  auto before = ReadExtCsd(card);
  ASSERT_TRUE(before.ok());
  auto c = WriteField(card, *before, field::kPartitionConfig, 0x20);  // BOOT_PARTITION_ENABLE 4: reserved
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(card.refused_switches(), 1);
  EXPECT_TRUE(Contains(c.status().message(), "EXT_CSD[179] reads 0x00 after SWITCH to 0x20 (was 0x00): the card did not take"))
      << c.status().message();
}

TEST(WriteField, ReadOnlyFieldsStayAsTheyWere) {
  FakeMmcCard card;
  auto before = ReadExtCsd(card);
  ASSERT_TRUE(before.ok());
  EXPECT_FALSE(WriteField(card, *before, field::kBootSizeMult, 64).ok());    // Properties Segment
  EXPECT_FALSE(WriteField(card, *before, field::kBootWpStatus, 0x01).ok());  // R in the Modes Segment
  EXPECT_EQ(card.byte(field::kBootSizeMult), 32);
  EXPECT_EQ(card.refused_switches(), 2);
}

TEST(WriteField, ACardThatAcknowledgesButIgnoresIsCaught) {
  FakeMmcCard card;
  card.IgnoreSwitches();
  auto c = SetBootBus(card, {.width = 2, .retain = false, .mode = 0});
  ASSERT_FALSE(c.ok());
  EXPECT_TRUE(Contains(c.status().message(), "EXT_CSD[177] reads 0x00 after SWITCH to 0x02")) << c.status().message();
}

TEST(WriteField, AnIoctlFailureIsReportedWithTheField) {
  FakeMmcCard card;
  auto before = ReadExtCsd(card);
  ASSERT_TRUE(before.ok());
  card.FailNext(EIO);
  auto c = WriteField(card, *before, field::kBootBusConditions, 0x01);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().sys_errno(), EIO);
  EXPECT_TRUE(Contains(c.status().message(), "SWITCH EXT_CSD[177] to 0x01")) << c.status().message();
}

TEST(SetBootBus, WritesAndReadsBack) {
  FakeMmcCard card;
  auto c = SetBootBus(card, {.width = 2, .retain = true, .mode = 1});
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(card.byte(field::kBootBusConditions), 0x0e);
  EXPECT_EQ(card.commands()[1].arg, 0x03b10e01u);
}

TEST(SetBootBus, DdrOnACardWithoutDdrBootIsRefusedBeforeTheCard) {
  FakeMmcCard card;
  card.set_byte(field::kBootInfo, 0x01);
  auto c = SetBootBus(card, {.width = 1, .mode = 2});
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), Code::kUnsupported);
  EXPECT_EQ(card.switches(), 0);
  EXPECT_EQ(SetBootBus(card, {.width = 3}).status().code(), Code::kInvalidArgument);
  EXPECT_EQ(card.switches(), 0);
}

}  // namespace
}  // namespace flashpipe::mmc
