#include "partition/table_diff.h"

#include <gtest/gtest.h>

#include "partition/uboot_string.h"

namespace flashpipe::partition {
namespace {

constexpr uint64_t kMiB = 1 << 20;

Table Make(const char* uboot) {
  auto l = ParseUbootString(uboot);
  EXPECT_TRUE(l.ok()) << l.status().ToString();
  auto t = Resolve(*l, {.size = 256 * kMiB, .sector_size = 512});
  EXPECT_TRUE(t.ok()) << t.status().ToString();
  return *t;
}

using Lines = std::vector<std::string>;

TEST(TableDiffTest, AddedRemovedResizedMovedUnchanged) {
  Table old = Make("name=boot,size=4MiB;name=cache,size=8MiB;name=system,size=16MiB;name=misc,size=1MiB;");
  Table now = Make("name=boot,size=4MiB;name=system,size=32MiB;name=misc,size=1MiB;name=userdata,size=-;");
  EXPECT_EQ(DescribeChanges(old, now),
            (Lines{"resized system 16.0 MiB -> 32.0 MiB", "moved misc", "added userdata 218.0 MiB",
                   "removed cache", "1 unchanged"}));
}

TEST(TableDiffTest, NoOldTableAndNoChange) {
  Table t = Make("name=boot,size=4MiB;");
  EXPECT_EQ(DescribeChanges(std::nullopt, t), (Lines{"added boot 4.0 MiB"}));
  EXPECT_EQ(DescribeChanges(t, t), (Lines{"no change"}));
}

}  // namespace
}  // namespace flashpipe::partition
