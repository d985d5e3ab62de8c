#include "partition/partition_job.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "testing/temp_dir.h"

namespace flashpipe::partition {
namespace {

constexpr uint64_t kMiB = 1 << 20;

class PartitionJobTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = dir_ / "disk.img";
    FILE* f = std::fopen(path_.c_str(), "w");
    ASSERT_NE(f, nullptr);
    std::fclose(f);
    std::filesystem::resize_file(path_, 64 * kMiB);
  }
  Result<PartitionOutcome> Write(std::string layout, bool dry_run = false) {
    return WritePartitions({.target = path_, .layout = std::move(layout), .layout_name = "layout", .dry_run = dry_run});
  }
  testing::TempDir dir_;
  std::string path_;
};

TEST_F(PartitionJobTest, WritesAFileAndDumpsItBackInBothFormats) {
  auto o = Write("name=boot,size=8M,type=esp;name=rootfs,size=-;");
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  EXPECT_FALSE(o->old.has_value());
  EXPECT_FALSE(o->kernel.has_value());  // a file: no kernel to tell
  for (LayoutFormat f : {LayoutFormat::kSfdisk, LayoutFormat::kUboot}) {
    std::vector<std::string> notes;
    auto text = DumpPartitions(path_, f, &notes);
    ASSERT_TRUE(text.ok()) << text.status().ToString();
    EXPECT_TRUE(notes.empty());
    auto again = Write(*text);
    ASSERT_TRUE(again.ok()) << again.status().ToString();
    ASSERT_TRUE(again->old.has_value());
    EXPECT_EQ(again->table, *again->old) << *text;
  }
}

TEST_F(PartitionJobTest, RefusalsAndDryRunLeaveTheFileAsItWas) {
  ASSERT_TRUE(Write("size=4M name=a\nname=b\n").ok());
  const auto before = testing::ReadFile(path_);
  for (const char* bad : {"size=100M\n", "size=1M name=a\nsize=1M name=a\n", "start=2048 size=4096\nstart=4000 size=8\n",
                          "label: dos\n", "name=a,size=1M;name=b,size=-;name=c,size=1M;"}) {
    auto o = Write(bad);
    EXPECT_FALSE(o.ok()) << bad;
    EXPECT_EQ(o.status().ToString().substr(0, 6), "layout") << o.status().ToString();
    EXPECT_TRUE(testing::ReadFile(path_) == before) << bad;
  }
  auto dry = Write("size=1M name=z\n", /*dry_run=*/true);
  ASSERT_TRUE(dry.ok()) << dry.status().ToString();
  EXPECT_EQ(dry->table.partitions[0].name, "z");
  EXPECT_EQ(dry->old->partitions.size(), 2u);
  EXPECT_TRUE(testing::ReadFile(path_) == before);
}

TEST_F(PartitionJobTest, AMissingTargetIsNotCreated) {
  std::string missing = dir_ / "nothing.img";
  auto o = WritePartitions({.target = missing, .layout = "size=1M\n", .layout_name = "layout"});
  ASSERT_FALSE(o.ok());
  EXPECT_EQ(o.status().code(), Code::kNotFound);
  EXPECT_FALSE(std::filesystem::exists(missing));
}

TEST(LayoutFormat, AutoDetection) {
  EXPECT_EQ(ParseLayout("name=a,size=1M;", LayoutFormat::kAuto)->partitions[0].size->bytes, true);
  // An sfdisk line may start with name= too: without ';' it is sfdisk's, where plain numbers are sectors.
  auto sf = ParseLayout("name=a, size=2048\n", LayoutFormat::kAuto);
  ASSERT_TRUE(sf.ok()) << sf.status().ToString();
  EXPECT_FALSE(sf->partitions[0].size->bytes);
  EXPECT_TRUE(ParseLayout("  uuid_disk=1D1BCBD5-1A0E-4B5C-8A4A-6B1F0C9D2E3F;name=a,size=1M", LayoutFormat::kAuto).ok());
  EXPECT_FALSE(ParseLayoutFormat("gpt").ok());
}

}  // namespace
}  // namespace flashpipe::partition
