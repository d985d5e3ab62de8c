#include "partition/sfdisk_script.h"

#include <gtest/gtest.h>

#include "partition/types.h"

namespace flashpipe::partition {
namespace {

constexpr uint64_t kMiB = 1 << 20;
constexpr Disk k200M{.size = 200 * kMiB, .sector_size = 512};

// Printed by sfdisk 2.38.1 (--dump of an image sgdisk made), verbatim.
constexpr const char* kSfdiskDump = R"(label: gpt
label-id: 2088CF5C-F3C2-48AE-9D21-9F6AA9264EFA
device: t.img
unit: sectors
first-lba: 34
last-lba: 409566
sector-size: 512

t.img1 : start=        2048, size=        2048, type=0FC63DAF-8483-4772-8E79-3D69D8477DE4, uuid=740803AD-1FBF-4589-9F81-2189C1F474FE, name="boot \x22x\x22", attrs="RequiredPartition LegacyBIOSBootable GUID:60"
t.img2 : start=        4096, size=        2048, type=C12A7328-F81F-11D2-BA4B-00A0C93EC93B, uuid=A0F80260-F09C-4474-AA83-B7614AF7ADB5
t.img4 : start=        8192, size=        2048, type=21686148-6449-6E6F-744E-656564454649, uuid=702E3774-E316-4B81-BB7A-077D383354AB
)";

TEST(SfdiskScript, ReadsWhatSfdiskDumps) {
  auto l = ParseSfdiskScript(kSfdiskDump);
  ASSERT_TRUE(l.ok()) << l.status().ToString();
  EXPECT_EQ(FormatGuid(*l->disk_guid), "2088CF5C-F3C2-48AE-9D21-9F6AA9264EFA");
  EXPECT_EQ(l->device, "t.img");
  EXPECT_EQ(*l->first_lba, 34u);
  EXPECT_EQ(*l->last_lba, 409566u);
  ASSERT_EQ(l->partitions.size(), 3u);
  EXPECT_EQ(l->partitions[0].name, "boot \"x\"");
  EXPECT_EQ(l->partitions[0].attributes, (1ull << 0) | (1ull << 2) | (1ull << 60));
  EXPECT_EQ(*l->partitions[2].number, 4u);
  EXPECT_EQ(l->partitions[2].start->value, 8192u);
  EXPECT_FALSE(l->partitions[2].start->bytes);
  auto t = Resolve(*l, k200M);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  // Printed back, it is what sfdisk printed.
  EXPECT_EQ(FormatSfdiskScript(*t, "t.img"), kSfdiskDump);
}

TEST(SfdiskScript, HandWrittenWithSuffixesNamesAndRest) {
  auto l = ParseSfdiskScript(
      "# a board\n"
      "label: gpt\n"
      "unit: sectors\n"
      "grain: 4MiB\n"
      "\n"
      "size=64MiB, type=uefi, name=esp, bootable\n"
      "start=  80M size=+128M type=android-system name=\"system_a\"\n"
      "type=L, name=userdata, size=+\n");
  ASSERT_TRUE(l.ok()) << l.status().ToString();
  auto t = Resolve(*l, {.size = 1024 * kMiB, .sector_size = 512});
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  ASSERT_EQ(t->partitions.size(), 3u);
  EXPECT_EQ(t->partitions[0].start, 8192u);  // 4 MiB grain
  EXPECT_EQ(t->partitions[0].size, 64 * 2048u);
  EXPECT_EQ(t->partitions[0].attributes, 1u << 2);
  EXPECT_EQ(TypeName(t->partitions[0].type), "esp");
  EXPECT_EQ(t->partitions[1].start, 80 * 2048u);
  EXPECT_EQ(TypeName(t->partitions[1].type), "android-system");
  EXPECT_EQ(t->partitions[2].start, (80 + 128) * 2048u);
  EXPECT_EQ(t->partitions[2].last(), t->last_usable);
}

TEST(SfdiskScript, RoundTripThroughText) {
  auto l = ParseSfdiskScript("label: gpt\ntable-length: 16\nfirst-lba: 2048\n"
                             "size=1M name=\"caf\xc3\xa9\\x5c\"\nsize=2M, attrs=\"GUID:48,49 NoBlockIOProtocol\"\n"
                             "/dev/mmcblk0p7 : size=3M\n");
  ASSERT_TRUE(l.ok()) << l.status().ToString();
  auto t = Resolve(*l, {.size = 64 * kMiB, .sector_size = 512});
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(t->num_entries, 16u);
  EXPECT_EQ(t->partitions[0].name, "caf\xc3\xa9\\");
  EXPECT_EQ(t->partitions[2].number, 7u);
  for (const char* device : {"/dev/mmcblk0", "disk.img", ""}) {
    std::string text = FormatSfdiskScript(*t, device);
    auto again = ParseSfdiskScript(text);
    ASSERT_TRUE(again.ok()) << again.status().ToString() << "\n" << text;
    auto t2 = Resolve(*again, {.size = 64 * kMiB, .sector_size = 512});
    ASSERT_TRUE(t2.ok()) << t2.status().ToString();
    EXPECT_EQ(*t2, *t) << text;
  }
  EXPECT_NE(FormatSfdiskScript(*t, "/dev/mmcblk0").find("/dev/mmcblk0p7 : start="), std::string::npos);
  EXPECT_NE(FormatSfdiskScript(*t, "disk.img").find("\ndisk.img7 : start="), std::string::npos);
}

std::string ErrorOf(const std::string& text) {
  auto l = ParseSfdiskScript(text);
  if (!l.ok()) return l.status().ToString();
  auto t = Resolve(*l, k200M);
  return t.ok() ? "ok" : t.status().ToString();
}

TEST(SfdiskScript, ErrorsNameLineAndField) {
  EXPECT_EQ(ErrorOf("label: dos\n"), "line 1: label: label: 'dos': only gpt tables are written");
  EXPECT_EQ(ErrorOf("label: gpt\nunit: cylinders\n"), "line 2: unit: unit: 'cylinders': only sectors");
  EXPECT_EQ(ErrorOf("label: gpt\n\nsize=10X\n"),
            "line 3: size: '10X' is not a size (unknown suffix 'X')");
  EXPECT_EQ(ErrorOf("size=1M, colour=red\n"),
            "line 1: colour: unknown field (start, size, type, uuid, name, attrs, bootable)");
  EXPECT_EQ(ErrorOf("2048,4096,L\n").substr(0, 46), "line 1: 2048: '2048' is not key=value (unnamed");
  EXPECT_EQ(ErrorOf("size=1M, type=fat\n").substr(0, 42), "line 1: type: unknown partition type 'fat'");
  EXPECT_EQ(ErrorOf("size=1M, uuid=1234\n"), "line 1: uuid: '1234' is not a GUID (8-4-4-4-12 hex digits)");
  EXPECT_EQ(ErrorOf("size=1M, name=\"open\n"), "line 1: a quoted value has no closing '\"'");
  EXPECT_EQ(ErrorOf("disk : size=1M\n"), "node 'disk' does not end in a partition number");
  EXPECT_EQ(ErrorOf("size=1M\nlabel: gpt\n"), "line 2: header line after the partitions");
  EXPECT_EQ(ErrorOf("frobs: 3\n").substr(0, 32), "line 1: frobs: unknown header (l");
  EXPECT_EQ(ErrorOf("size=1M name=a\n\nsize=1M name=a\n"), "line 3 (partition 2 'a'): name 'a' given twice");
  EXPECT_EQ(ErrorOf("size=300M\n").substr(0, 50), "line 1 (partition 1): LBAs 2048-616447 do not fit ");
  EXPECT_EQ(ErrorOf("start=4096 size=4096\nstart=6000 size=10\n"),
            "line 2 (partition 2) (LBAs 6000-6009) overlaps line 1 (partition 1) (LBAs 4096-8191)");
}

}  // namespace
}  // namespace flashpipe::partition
