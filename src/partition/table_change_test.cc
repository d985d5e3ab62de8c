#include "partition/table_change.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "base/unique_fd.h"
#include "testing/temp_dir.h"

namespace flashpipe::partition {
namespace {

constexpr uint64_t kMiB = 1 << 20;

std::span<const uint8_t> Text(std::string_view s) { return {reinterpret_cast<const uint8_t*>(s.data()), s.size()}; }

class HeldDiskTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = dir_ / "disk.img";
    testing::WriteFile(path_, {});
    std::filesystem::resize_file(path_, 64 * kMiB);
    fd_ = UniqueFd(::open(path_.c_str(), O_RDWR | O_CLOEXEC));  // the holder's, as serve's storage
    ASSERT_TRUE(fd_.valid());
  }
  Result<PartitionOutcome> Change(std::string_view source, bool dry_run = false) {
    return ChangeHeldDiskTable({.path = path_, .claim_fd = fd_.get(), .claimed = false}, Text(source), "flash gpt",
                               {.dry_run = dry_run});
  }
  testing::TempDir dir_;
  std::string path_;
  UniqueFd fd_;
};

TEST_F(HeldDiskTest, WritesAndReportsTheOldTable) {
  auto first = Change("name=boot,size=4MiB;name=system,size=-;");
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_FALSE(first->old.has_value());
  EXPECT_FALSE(first->kernel.has_value());  // a file
  auto second = Change("name=boot,size=8MiB;name=system,size=-;");
  ASSERT_TRUE(second.ok()) << second.status().ToString();
  ASSERT_TRUE(second->old.has_value());
  EXPECT_EQ(second->old->partitions, first->table.partitions);
  EXPECT_EQ(second->table.partitions[0].size * 512, 8 * kMiB);
}

TEST_F(HeldDiskTest, RefusalsAndDryRunWriteNothing) {
  ASSERT_TRUE(Change("name=boot,size=4MiB;name=system,size=-;").ok());
  const auto before = testing::ReadFile(path_);
  auto overlap = Change("label: gpt\nstart=2048, size=8MiB, name=a\nstart=4096, size=8MiB, name=b\n");
  ASSERT_FALSE(overlap.ok());
  EXPECT_NE(overlap.status().ToString().find("flash gpt: "), std::string::npos) << overlap.status().ToString();
  EXPECT_NE(overlap.status().ToString().find("overlaps"), std::string::npos) << overlap.status().ToString();
  EXPECT_FALSE(Change("name=big,size=1GiB;").ok());
  EXPECT_FALSE(Change(std::string_view("\x01\x02garbage", 9)).ok());
  auto dry = Change("name=other,size=-;", /*dry_run=*/true);
  ASSERT_TRUE(dry.ok()) << dry.status().ToString();
  EXPECT_EQ(dry->table.partitions[0].name, "other");
  EXPECT_EQ(testing::ReadFile(path_), before);
}

}  // namespace
}  // namespace flashpipe::partition
