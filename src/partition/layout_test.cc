#include "partition/layout.h"

#include <gtest/gtest.h>

#include "partition/guid.h"
#include "partition/text_fields.h"
#include "partition/types.h"

namespace flashpipe::partition {
namespace {

constexpr uint64_t kMiB = 1 << 20;

// Deterministic GUIDs: 01..., 02..., in the order Resolve asks.
std::function<Guid()> Counter() {
  auto n = std::make_shared<uint8_t>(0);
  return [n] {
    Guid g{};
    g[0] = ++*n;
    return g;
  };
}

PartitionSpec Spec(std::string name, std::optional<uint64_t> size_bytes, std::optional<uint64_t> start_bytes = {}) {
  PartitionSpec p;
  p.name = std::move(name);
  if (size_bytes) p.size = Amount{*size_bytes, true};
  if (start_bytes) p.start = Amount{*start_bytes, true};
  return p;
}

TEST(Guid, TextAndDiskBytes) {
  auto g = ParseGuid("0fc63daf-8483-4772-8E79-3D69D8477DE4");
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  const Guid disk = {0xAF, 0x3D, 0xC6, 0x0F, 0x83, 0x84, 0x72, 0x47, 0x8E, 0x79, 0x3D, 0x69, 0xD8, 0x47, 0x7D, 0xE4};
  EXPECT_EQ(*g, disk);
  EXPECT_EQ(FormatGuid(*g), "0FC63DAF-8483-4772-8E79-3D69D8477DE4");
  EXPECT_FALSE(ParseGuid("0FC63DAF-8483-4772-8E79-3D69D8477DE").ok());
  EXPECT_FALSE(ParseGuid("0FC63DAF+8483-4772-8E79-3D69D8477DE4").ok());
  EXPECT_FALSE(ParseGuid("0FC63DAF-8483-4772-8E79-3D69D8477DEG").ok());
}

TEST(Guid, RandomIsVersion4AndDiffers) {
  Guid a = RandomGuid(), b = RandomGuid();
  EXPECT_NE(a, b);
  EXPECT_EQ(FormatGuid(a)[14], '4');
  EXPECT_TRUE(std::string("89AB").find(FormatGuid(a)[19]) != std::string::npos);
}

TEST(Types, NamesAliasesAndUboot) {
  EXPECT_EQ(FormatGuid(*ParseType("linux")), kLinuxType);
  EXPECT_EQ(FormatGuid(*ParseType("L")), kLinuxType);
  EXPECT_EQ(FormatGuid(*ParseType("uefi")), "C12A7328-F81F-11D2-BA4B-00A0C93EC93B");
  EXPECT_EQ(FormatGuid(*ParseType("esp")), "C12A7328-F81F-11D2-BA4B-00A0C93EC93B");
  EXPECT_EQ(FormatGuid(*ParseType("android-system")), "38F428E6-D326-425D-9140-6E0EA133647C");
  EXPECT_EQ(FormatGuid(*ParseType("a03a")), "1B81E7E6-F50D-419B-A739-2AEEF8DA3335");
  // "system" is U-Boot's name for the EFI system partition, and nothing in sfdisk layouts.
  EXPECT_EQ(FormatGuid(*ParseType("system", TypeNames::kUboot)), "C12A7328-F81F-11D2-BA4B-00A0C93EC93B");
  auto bad = ParseType("system");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().ToString().find("unknown partition type 'system'"), std::string::npos);
  EXPECT_EQ(TypeName(*ParseType("swap")), "swap");
}

TEST(TextFields, Amounts) {
  EXPECT_EQ(ParseAmount("2048", PlainUnit::kSectors)->bytes, false);
  EXPECT_EQ(ParseAmount("2048", PlainUnit::kBytes)->bytes, true);
  EXPECT_EQ(ParseAmount("64MiB", PlainUnit::kSectors)->value, 64 * kMiB);
  EXPECT_EQ(ParseAmount("64M", PlainUnit::kSectors)->value, 64 * kMiB);
  EXPECT_EQ(ParseAmount("1G", PlainUnit::kBytes)->value, 1024 * kMiB);
  EXPECT_EQ(ParseAmount("512k", PlainUnit::kBytes)->value, 512 * 1024u);
  EXPECT_EQ(ParseAmount("1MB", PlainUnit::kBytes)->value, 1000000u);
  EXPECT_EQ(ParseAmount("0x1000", PlainUnit::kBytes)->value, 4096u);
  EXPECT_FALSE(ParseAmount("12Q", PlainUnit::kBytes).ok());
  EXPECT_FALSE(ParseAmount("", PlainUnit::kBytes).ok());
  EXPECT_FALSE(ParseAmount("99999999999999999999", PlainUnit::kBytes).ok());
  EXPECT_FALSE(ParseAmount("16777216T", PlainUnit::kBytes).ok());
  EXPECT_EQ(FormatExactBytes(64 * kMiB), "64MiB");
  EXPECT_EQ(FormatExactBytes(1536 * 1024), "1536KiB");
  EXPECT_EQ(FormatExactBytes(4097), "4097");
}

TEST(TextFields, Attributes) {
  EXPECT_EQ(*ParseAttributes("RequiredPartition LegacyBIOSBootable GUID:60"), (1ull << 0) | (1ull << 2) | (1ull << 60));
  EXPECT_EQ(*ParseAttributes("GUID:52,53"), (1ull << 52) | (1ull << 53));
  EXPECT_EQ(FormatAttributes((1ull << 0) | (1ull << 2) | (1ull << 60) | (1ull << 61)),
            "RequiredPartition LegacyBIOSBootable GUID:60,61");
  EXPECT_FALSE(ParseAttributes("Hidden").ok());
  EXPECT_FALSE(ParseAttributes("GUID:64").ok());
}

TEST(Resolve, DefaultsAlignAndRest) {
  Layout l;
  l.partitions = {Spec("boot", 64 * kMiB), Spec("rootfs", std::nullopt)};
  auto t = Resolve(l, {.size = 256 * kMiB, .sector_size = 512}, Counter());
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(t->first_usable, 34u);
  EXPECT_EQ(t->last_usable, 256 * 2048 - 34u);
  EXPECT_EQ(t->disk_guid[0], 1);  // asked first
  ASSERT_EQ(t->partitions.size(), 2u);
  EXPECT_EQ(t->partitions[0].start, 2048u);
  EXPECT_EQ(t->partitions[0].size, 64 * 2048u);
  EXPECT_EQ(t->partitions[0].number, 1u);
  EXPECT_EQ(FormatGuid(t->partitions[0].type), kLinuxType);
  EXPECT_EQ(t->partitions[1].start, 2048 + 64 * 2048u);
  EXPECT_EQ(t->partitions[1].last(), t->last_usable);
  EXPECT_NE(t->partitions[0].uuid, t->partitions[1].uuid);
}

TEST(Resolve, GivenValuesKeptAnd4KSectors) {
  Layout l;
  l.disk_guid = *ParseGuid("11111111-2222-3333-4444-555555555555");
  l.alignment = 4 * kMiB;
  PartitionSpec a = Spec("a", 1 * kMiB);
  a.uuid = *ParseGuid("AAAAAAAA-2222-3333-4444-555555555555");
  a.number = 3;
  l.partitions = {a, Spec("b", 1 * kMiB)};
  auto t = Resolve(l, {.size = 64 * kMiB, .sector_size = 4096}, Counter());
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(t->first_usable, 6u);  // 16 KiB of entries in 4 sectors
  EXPECT_EQ(FormatGuid(t->disk_guid), "11111111-2222-3333-4444-555555555555");
  ASSERT_EQ(t->partitions.size(), 2u);
  EXPECT_EQ(t->partitions[0].number, 1u);  // b took the first free entry; sorted by number
  EXPECT_EQ(t->partitions[0].name, "b");
  EXPECT_EQ(t->partitions[0].start, 2048u);  // 8 MiB / 4 KiB
  EXPECT_EQ(t->partitions[1].number, 3u);
  EXPECT_EQ(t->partitions[1].start, 1024u);
  EXPECT_EQ(FormatGuid(t->partitions[1].uuid), "AAAAAAAA-2222-3333-4444-555555555555");
}

Status ResolveError(Layout l, uint64_t size = 64 * kMiB) {
  return Resolve(l, {.size = size, .sector_size = 512}, Counter()).status();
}

TEST(Resolve, Refusals) {
  Layout l;
  l.partitions = {Spec("a", 32 * kMiB), Spec("b", 64 * kMiB)};
  l.partitions[1].where = "line 9";
  EXPECT_EQ(ResolveError(l).ToString().substr(0, 60),
            "line 9 (partition 2 'b'): LBAs 67584-198655 do not fit the u");
  EXPECT_EQ(ResolveError(l).code(), Code::kNoSpace);

  l.partitions = {Spec("a", 8 * kMiB, 1 * kMiB), Spec("b", 8 * kMiB, 4 * kMiB)};
  EXPECT_NE(ResolveError(l).ToString().find("partition 2 'b' (LBAs 8192-24575) overlaps partition 1 'a'"),
            std::string::npos) << ResolveError(l).ToString();

  l.partitions = {Spec("a", kMiB), Spec("a", kMiB)};
  EXPECT_NE(ResolveError(l).ToString().find("name 'a' given twice"), std::string::npos);

  l.partitions = {Spec(std::string(37, 'x'), kMiB)};
  EXPECT_NE(ResolveError(l).ToString().find("name is 37 UTF-16 code units, a GPT entry holds 36"), std::string::npos);
  l.partitions = {Spec(std::string(36, 'x'), kMiB)};
  EXPECT_TRUE(ResolveError(l).ok());
  // U+1F600 takes two UTF-16 units: 18 of them are 36.
  std::string emoji;
  for (int i = 0; i < 19; ++i) emoji += "\xF0\x9F\x98\x80";
  l.partitions = {Spec(emoji, kMiB)};
  EXPECT_NE(ResolveError(l).ToString().find("38 UTF-16"), std::string::npos);
  l.partitions = {Spec("bad\xff", kMiB)};
  EXPECT_NE(ResolveError(l).ToString().find("not UTF-8"), std::string::npos);

  l.partitions = {Spec("a", std::nullopt), Spec("b", kMiB)};
  EXPECT_NE(ResolveError(l).ToString().find("only the last partition can take the rest"), std::string::npos);

  l.partitions = {Spec("a", 1000)};
  EXPECT_NE(ResolveError(l).ToString().find("1000 bytes is not a multiple of the 512-byte sector"), std::string::npos);

  l.partitions = {Spec("a", kMiB)};
  l.sector_size = 4096;
  EXPECT_NE(ResolveError(l).ToString().find("sector-size: 4096 in the layout, but the target's sectors are 512"),
            std::string::npos);
  l.sector_size.reset();
  l.first_lba = 10;
  EXPECT_NE(ResolveError(l).ToString().find("first-lba: 10 is inside the primary table"), std::string::npos);
  l.first_lba.reset();
  l.last_lba = 1 << 30;
  EXPECT_EQ(ResolveError(l).code(), Code::kNoSpace);
  l.last_lba.reset();
  EXPECT_EQ(ResolveError(l, 16 * 1024).code(), Code::kNoSpace);  // no room for two tables

  PartitionSpec s = Spec("a", kMiB);
  s.number = 129;
  l.partitions = {s};
  EXPECT_NE(ResolveError(l).ToString().find("number 129 outside the table's 128 entries"), std::string::npos);
  PartitionSpec zero = Spec("z", kMiB);
  zero.type = Guid{};
  l.partitions = {zero};
  EXPECT_NE(ResolveError(l).ToString().find("type GUID is all zeros"), std::string::npos);
}

TEST(Resolve, SizeZeroAndNoRoomForTheRest) {
  Layout l;
  l.partitions = {Spec("a", 0)};
  EXPECT_NE(ResolveError(l).ToString().find("size is 0"), std::string::npos);
  l.partitions = {Spec("a", 63 * kMiB), Spec("b", std::nullopt)};
  EXPECT_NE(ResolveError(l).ToString().find("no space left"), std::string::npos);
}

}  // namespace
}  // namespace flashpipe::partition
