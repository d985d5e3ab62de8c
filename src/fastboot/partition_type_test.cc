#include "fastboot/partition_type.h"

#include <gtest/gtest.h>

namespace flashpipe::fastboot {
namespace {

// The on-disk bytes of a GPT type GUID: the first three fields little-endian.
TypeGuid FromString(std::string_view s) {
  auto hex = [&](size_t at) { return static_cast<uint8_t>(std::stoi(std::string(s.substr(at, 2)), nullptr, 16)); };
  return {hex(6), hex(4), hex(2), hex(0), hex(11), hex(9), hex(16), hex(14),
          hex(19), hex(21), hex(24), hex(26), hex(28), hex(30), hex(32), hex(34)};
}

constexpr std::string_view kLinuxData = "0FC63DAF-8483-4772-8E79-3D69D8477DE4";
constexpr std::string_view kAndroidData = "DC76DDA9-5AC1-491C-AF42-A82591580C0D";
constexpr std::string_view kAndroidMisc = "EF32A33B-A409-486C-9141-9FFB711F6266";

TEST(PartitionTypeTest, GuidStringReadsTheMixedEndianLayout) {
  TypeGuid g = {0xAF, 0x3D, 0xC6, 0x0F, 0x83, 0x84, 0x72, 0x47, 0x8E, 0x79, 0x3D, 0x69, 0xD8, 0x47, 0x7D, 0xE4};
  EXPECT_EQ(GuidString(g), kLinuxData);
  EXPECT_EQ(GuidString(FromString(kAndroidData)), kAndroidData);
}

TEST(PartitionTypeTest, FilesystemGuids) {
  EXPECT_TRUE(IsFilesystemGuid(FromString(kLinuxData)));
  EXPECT_TRUE(IsFilesystemGuid(FromString(kAndroidData)));
  EXPECT_TRUE(IsFilesystemGuid(FromString("20AC26BE-20B7-11E3-84C5-6CFDB94711E9")));  // metadata
  EXPECT_TRUE(IsFilesystemGuid(FromString("A893EF21-E428-470A-9E55-0668FD91A2D9")));  // cache
  EXPECT_FALSE(IsFilesystemGuid(FromString(kAndroidMisc)));
  EXPECT_FALSE(IsFilesystemGuid(TypeGuid{}));
}

// The regression: an erased userdata (nothing for libblkid to find) must
// still say ext4, or `fastboot -w` does not format it.
TEST(PartitionTypeTest, AnErasedFilesystemPartitionIsStillExt4) {
  auto nothing = [] { return std::string("raw"); };
  EXPECT_EQ(ChoosePartitionType("userdata", FromString(kAndroidData), {}, nothing), "ext4");
  EXPECT_EQ(ChoosePartitionType("userdata", FromString(kLinuxData), {}, nothing), "ext4");
  EXPECT_EQ(ChoosePartitionType("userdata", FromString(kLinuxData), {}, [] { return std::string("f2fs"); }), "f2fs");
  EXPECT_EQ(ChoosePartitionType("misc", FromString(kAndroidMisc), {}, nothing), "raw");
  EXPECT_EQ(ChoosePartitionType("misc", FromString(kAndroidMisc), {}, [] { return std::string("vfat"); }), "vfat");
}

TEST(PartitionTypeTest, ConfigurationDecidesFirstAndCoversBothSlots) {
  std::vector<PartitionTypeSetting> settings = {{"userdata", "f2fs"}, {"vendor_b", "raw"}, {"vendor", "ext4"}};
  bool probed = false;
  auto probe = [&] {
    probed = true;
    return std::string("ext4");
  };
  EXPECT_EQ(ChoosePartitionType("userdata", FromString(kLinuxData), settings, probe), "f2fs");
  EXPECT_EQ(ChoosePartitionType("vendor_b", {}, settings, probe), "raw");  // its own name first
  EXPECT_EQ(ChoosePartitionType("vendor_a", {}, settings, probe), "ext4");  // then the base name
  EXPECT_FALSE(probed);
  EXPECT_EQ(ChoosePartitionType("system", {}, settings, probe), "ext4");
  EXPECT_TRUE(probed);
}

TEST(PartitionTypeTest, ParseSetting) {
  auto s = ParsePartitionTypeSetting("userdata=f2fs");
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->name, "userdata");
  EXPECT_EQ(s->type, "f2fs");
  for (const char* bad : {"userdata", "userdata=", "userdata=xfs", "=ext4", "a:b=ext4"}) {
    auto r = ParsePartitionTypeSetting(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.status().message(), fmt::format("--partition-type '{}': expected NAME=ext4|f2fs|raw", bad));
  }
}

}  // namespace
}  // namespace flashpipe::fastboot
