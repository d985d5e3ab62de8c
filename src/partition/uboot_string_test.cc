#include "partition/uboot_string.h"

#include <gtest/gtest.h>

#include "partition/types.h"

namespace flashpipe::partition {
namespace {

constexpr uint64_t kMiB = 1 << 20;
constexpr Disk k1G{.size = 1024 * kMiB, .sector_size = 512};

// As U-Boot board configs write it (e.g. include/configs/*: PARTS_DEFAULT).
constexpr const char* kBoard =
    "uuid_disk=1D1BCBD5-1A0E-4B5C-8A4A-6B1F0C9D2E3F;"
    "name=boot,start=1MiB,size=64MiB,uuid=0E6F4B1A-7D2C-4E8B-9A3F-5C1D2E3F4A5B,type=system,bootable;"
    "name=rootfs,size=-,type=linux;";

TEST(UbootString, ParsesABoardString) {
  auto l = ParseUbootString(kBoard);
  ASSERT_TRUE(l.ok()) << l.status().ToString();
  ASSERT_EQ(l->partitions.size(), 2u);
  auto t = Resolve(*l, k1G);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(FormatGuid(t->disk_guid), "1D1BCBD5-1A0E-4B5C-8A4A-6B1F0C9D2E3F");
  EXPECT_EQ(t->partitions[0].start, 2048u);
  EXPECT_EQ(t->partitions[0].size, 64 * 2048u);
  EXPECT_EQ(TypeName(t->partitions[0].type), "esp");
  EXPECT_EQ(t->partitions[0].attributes, 1u << 2);
  EXPECT_EQ(FormatGuid(t->partitions[0].uuid), "0E6F4B1A-7D2C-4E8B-9A3F-5C1D2E3F4A5B");
  EXPECT_EQ(t->partitions[1].start, 65 * 2048u);
  EXPECT_EQ(t->partitions[1].last(), t->last_usable);
}

TEST(UbootString, RoundTripAndLineBreaks) {
  auto l = ParseUbootString("name=bootloader,start=0x100000,size=4096k;\n"
                            "  name=misc, size=1M, type=android-misc;\n"
                            "name=super,size=512MiB,type=a006;\nname=userdata,size=-\n");
  ASSERT_TRUE(l.ok()) << l.status().ToString();
  auto t = Resolve(*l, k1G);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  auto text = FormatUbootString(*t);
  ASSERT_TRUE(text.ok()) << text.status().ToString();
  EXPECT_NE(text->find("name=bootloader,start=1MiB,size=4MiB,uuid="), std::string::npos) << *text;
  auto again = ParseUbootString(*text);
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  auto t2 = Resolve(*again, k1G);
  ASSERT_TRUE(t2.ok()) << t2.status().ToString();
  EXPECT_EQ(*t2, *t);
  EXPECT_TRUE(UbootLost(*t).empty());
}

TEST(UbootString, WhatItCannotCarry) {
  Table t = *Resolve(*ParseUbootString("name=a,size=1M;name=b,size=1M"), k1G);
  t.partitions[1].number = 5;
  t.partitions[1].attributes = 1ull << 60;
  auto lost = UbootLost(t);
  ASSERT_EQ(lost.size(), 2u);
  EXPECT_EQ(lost[0], "partition 5's entry number (it becomes 2)");
  t.partitions[0].name = "a,b";
  EXPECT_EQ(FormatUbootString(t).status().ToString().substr(0, 58),
            "partition 1 'a,b': a U-Boot string cannot hold this name (");
}

std::string ErrorOf(const std::string& text) {
  auto l = ParseUbootString(text);
  if (!l.ok()) return l.status().ToString();
  auto t = Resolve(*l, k1G);
  return t.ok() ? "ok" : t.status().ToString();
}

TEST(UbootString, ErrorsNamePartitionAndField) {
  EXPECT_EQ(ErrorOf("uuid_disk=${uuid_gpt_disk};name=a,size=1M"),
            "U-Boot variable '${uuid_gpt_disk}' is not expanded here: give its value");
  EXPECT_EQ(ErrorOf("name=a,size=1M;size=2M"), "partition 2: name: missing (U-Boot needs name=)");
  EXPECT_EQ(ErrorOf("name=a"), "partition 1 'a': size: missing (U-Boot needs size=, or size=- for the rest)");
  EXPECT_EQ(ErrorOf("name=a,size=1Q"), "partition 1 'a': size: '1Q' is not a size (unknown suffix 'Q')");
  EXPECT_EQ(ErrorOf("name=a,size=1M,colour=red"),
            "partition 1 'a': colour: unknown field (name, start, size, uuid, type, bootable)");
  EXPECT_EQ(ErrorOf("name=a,size=1M;uuid_disk=1D1BCBD5-1A0E-4B5C-8A4A-6B1F0C9D2E3F"),
            "uuid_disk: must come before the partitions");
  EXPECT_EQ(ErrorOf("uuid_disk=nope;name=a,size=1M"), "uuid_disk: 'nope' is not a GUID (8-4-4-4-12 hex digits)");
  EXPECT_EQ(ErrorOf(""), "no partitions (name=...,size=...;)");
  EXPECT_EQ(ErrorOf("name=a,size=-;name=b,size=1M"),
            "partition 1: size: only the last partition can take the rest of the disk");
  EXPECT_EQ(ErrorOf("name=a,size=2G"), "partition 1 'a': LBAs 2048-4196351 do not fit the usable LBAs 34-2097118 "
                                       "of the target (2097152 LBAs of 512 bytes)");
  EXPECT_EQ(ErrorOf("name=a,size=1M,type=system2").substr(0, 48), "partition 1 'a': type: unknown partition type 's");
}

}  // namespace
}  // namespace flashpipe::partition
