#include "partition/table_source.h"

#include <gtest/gtest.h>

#include "partition/gpt_image.h"
#include "partition/uboot_string.h"

namespace flashpipe::partition {
namespace {

constexpr uint64_t kMiB = 1 << 20;

Table Make(const char* uboot, uint64_t disk_bytes, uint32_t sector = 512) {
  auto l = ParseUbootString(uboot);
  EXPECT_TRUE(l.ok()) << l.status().ToString();
  auto t = Resolve(*l, {.size = disk_bytes, .sector_size = sector});
  EXPECT_TRUE(t.ok()) << t.status().ToString();
  return *t;
}

// What U-Boot's `gpt` pseudo-partition takes: MBR, primary header, entries.
std::vector<uint8_t> ImageOf(const Table& t) {
  GptImage g = EncodeGpt(t);
  std::vector<uint8_t> out = g.mbr;
  out.insert(out.end(), g.primary_header.begin(), g.primary_header.end());
  out.insert(out.end(), g.entries.begin(), g.entries.end());
  return out;
}

std::span<const uint8_t> Text(std::string_view s) { return {reinterpret_cast<const uint8_t*>(s.data()), s.size()}; }

TEST(TableSourceTest, LayoutTextInBothFormats) {
  auto u = TableFromSource(Text("name=boot,size=4MiB;name=system,size=-;"), {.size = 64 * kMiB, .sector_size = 512});
  ASSERT_TRUE(u.ok()) << u.status().ToString();
  ASSERT_EQ(u->partitions.size(), 2u);
  EXPECT_EQ(u->partitions[1].name, "system");
  auto s = TableFromSource(Text("label: gpt\nsize=4MiB, name=boot\nname=system\n"), {.size = 64 * kMiB});
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->sector_size, 512u);  // a file: the layout's or 512
  EXPECT_EQ(s->partitions[0].size * 512, 4 * kMiB);
}

TEST(TableSourceTest, GptImageIsKeptAndFittedToTheDisk) {
  // Made for a 32 MiB disk, written on a 64 MiB one: the usable range is
  // the target's (U-Boot puts the backup at the disk's end).
  Table small = Make("name=boot,size=4MiB;name=system,size=8MiB;", 32 * kMiB);
  auto t = TableFromSource(ImageOf(small), {.size = 64 * kMiB, .sector_size = 512});
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(t->partitions, small.partitions);
  EXPECT_EQ(t->disk_guid, small.disk_guid);
  EXPECT_EQ(t->disk_lbas, 64 * kMiB / 512);
  EXPECT_EQ(t->last_usable, 64 * kMiB / 512 - 34);
  EXPECT_TRUE(CheckTable(*t).ok());
}

TEST(TableSourceTest, GptImageRefusals) {
  Table big = Make("name=boot,size=4MiB;name=system,size=40MiB;", 64 * kMiB);
  auto too_big = TableFromSource(ImageOf(big), {.size = 32 * kMiB, .sector_size = 512});
  ASSERT_FALSE(too_big.ok());

  std::vector<uint8_t> bad = ImageOf(Make("name=boot,size=4MiB;", 32 * kMiB));
  bad[1024 + 60] ^= 1;  // an entry: the primary's entry CRC fails
  auto crc = TableFromSource(bad, {.size = 32 * kMiB, .sector_size = 512});
  ASSERT_FALSE(crc.ok());
  EXPECT_NE(crc.status().ToString().find("GPT image"), std::string::npos) << crc.status().ToString();

  Table k4 = Make("name=boot,size=4MiB;", 32 * kMiB, 4096);
  auto sector = TableFromSource(ImageOf(k4), {.size = 32 * kMiB, .sector_size = 512});
  ASSERT_FALSE(sector.ok());
  EXPECT_NE(sector.status().ToString().find("4096-byte sectors for a disk of 512-byte"), std::string::npos)
      << sector.status().ToString();
}

TEST(TableSourceTest, GarbageIsNeitherImageNorText) {
  std::vector<uint8_t> garbage(4096, 0);
  garbage[10] = 0x7f;
  auto t = TableFromSource(garbage, {.size = 32 * kMiB, .sector_size = 512});
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().ToString().find("neither a GPT image nor a layout text"), std::string::npos);
  EXPECT_FALSE(TableFromSource({}, {.size = 32 * kMiB}).ok());
}

}  // namespace
}  // namespace flashpipe::partition
