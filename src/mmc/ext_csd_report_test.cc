#include "mmc/ext_csd_report.h"

#include <gtest/gtest.h>

#include "testing/fake_mmc_card.h"

namespace flashpipe::mmc {
namespace {

TEST(ParsePartConf, UBootNumbersAndNames) {
  auto r = ParsePartConf("1", "1", "0");
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->boot_ack);
  EXPECT_EQ(r->boot_partition, 1);
  EXPECT_EQ(r->partition_access, 0);
  r = ParsePartConf("0", "user", "");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->boot_partition, 7);
  EXPECT_FALSE(r->partition_access.has_value());
  EXPECT_EQ(ParsePartConf("2", "1", "").status().message(), "BOOT_ACK '2': give 0-1");
  EXPECT_EQ(ParsePartConf("1", "8", "").status().message(), "BOOT_PARTITION '8': give 0-7 or none, boot0, boot1, user");
  EXPECT_FALSE(ParsePartConf("1", "1", "x").ok());
}

TEST(ParseBootBus, UBootNumbersAndMmcUtilsNames) {
  auto b = ParseBootBus("2", "0", "2");
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->Encode(), 0x12);
  b = ParseBootBus("x4", "retain", "single_hs");
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->Encode(), 0x0d);
  EXPECT_FALSE(ParseBootBus("3", "0", "0").ok());
  EXPECT_FALSE(ParseBootBus("x2", "0", "0").ok());
  EXPECT_FALSE(ParseBootBus("0", "2", "0").ok());
}

TEST(DescribeCard, NamesEveryFieldWithItsIndex) {
  testing::FakeMmcCard card;
  card.set_byte(field::kPartitionConfig, 0x48);
  auto e = ReadExtCsd(card);
  ASSERT_TRUE(e.ok());
  CardReport r{.device = "/dev/mmcblk0", .ext_csd = *e, .boot_areas = {{"mmcblk0boot0", true}, {"mmcblk0boot1", false}}};
  std::string text = DescribeCard(r);
  EXPECT_NE(text.find("/dev/mmcblk0: eMMC 5.1 (EXT_CSD_REV [192] 8)"), std::string::npos) << text;
  EXPECT_NE(text.find("PARTITION_CONFIG [179] 0x48: BOOT_ACK 1, BOOT_PARTITION_ENABLE 1 (boot area 1), PARTITION_ACCESS 0 "
                      "(user area)"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("BOOT_SIZE_MULT [226] 32: 4 MiB per boot area"), std::string::npos) << text;
  EXPECT_NE(text.find("/dev/mmcblk0boot0: force_ro 1"), std::string::npos) << text;
  std::string json = CardJson(r);
  EXPECT_NE(json.find("\"schema\": \"flashpipe-mmc-extcsd\""), std::string::npos) << json;
  EXPECT_NE(json.find("\"partition_config\": {\"value\": 72, \"boot_ack\": true, \"boot_partition\": 1"), std::string::npos)
      << json;
  EXPECT_NE(json.find("{\"device\": \"/dev/mmcblk0boot0\", \"force_ro\": true}"), std::string::npos) << json;
}

TEST(DescribeChange, SaysWhatChangedOrThatNothingWasSent) {
  testing::FakeMmcCard card;
  auto c = SetPartitionConfig(card, {.boot_ack = true, .boot_partition = 2});
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(DescribeChange("/dev/mmcblk0", *c),
            "/dev/mmcblk0: PARTITION_CONFIG [179] 0x00 -> 0x50 (BOOT_ACK 1, BOOT_PARTITION_ENABLE 2 (boot area 2), "
            "PARTITION_ACCESS 0 (user area)), read back\n");
  c = SetPartitionConfig(card, {.boot_ack = true, .boot_partition = 2});
  ASSERT_TRUE(c.ok());
  EXPECT_NE(DescribeChange("/dev/mmcblk0", *c).find("is 0x50 already"), std::string::npos);
  EXPECT_NE(ChangeJson("/dev/mmcblk0", *c).find("\"changed\": false"), std::string::npos);
}

}  // namespace
}  // namespace flashpipe::mmc
