#include "bench/bench_target.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>

#include <gtest/gtest.h>

#include "testing/temp_dir.h"

namespace flashpipe::bench {
namespace {

constexpr uint64_t MiB = 1 << 20;

TEST(ChooseAreaTest, StartsAtAQuarterRoundedTo32MiBLikeMmcTest) {
  // 8 GiB: quarter = 2 GiB, already aligned; 128 MiB wanted.
  Area a = ChooseArea(uint64_t{8} << 30, 128 * MiB, 4096, false);
  EXPECT_EQ(a.offset, uint64_t{2} << 30);
  EXPECT_EQ(a.size, 128 * MiB);
  // 1000 MiB: quarter = 250 MiB -> 224 MiB (7 x 32 MiB); at most half the device.
  a = ChooseArea(1000 * MiB, 4096 * MiB, 4096, false);
  EXPECT_EQ(a.offset, 224 * MiB);
  EXPECT_EQ(a.size, 500 * MiB);
  // Under 128 MiB the quarter is rounded to 1 MiB instead of falling to 0.
  a = ChooseArea(64 * MiB, 8 * MiB, 4096, false);
  EXPECT_EQ(a.offset, 16 * MiB);
  EXPECT_EQ(a.size, 8 * MiB);
  // Created files are measured from the start; sizes are multiples of align.
  a = ChooseArea(10 * MiB + 5, 20 * MiB, 4 * MiB, true);
  EXPECT_EQ(a.offset, 0u);
  EXPECT_EQ(a.size, 8 * MiB);
}

// A device too small for the largest request at capacity/4 (at most half of
// it) is measured from offset 0, over as much of it as is wanted.
TEST(ChooseAreaTest, TinyDeviceStartsAtZeroWhenTheRequestDoesNotFit) {
  Area a = ChooseArea(64 << 10, 1 * MiB, 4096, false, 64 << 10);
  EXPECT_EQ(a.offset, 0u);
  EXPECT_EQ(a.size, 64u << 10);
  a = ChooseArea(4096, 4096, 4096, false, 4096);
  EXPECT_EQ(a.offset, 0u);
  EXPECT_EQ(a.size, 4096u);
  // When the request fits, mmc_test's choice stands.
  a = ChooseArea(64 * MiB, 8 * MiB, 4096, false, 1 * MiB);
  EXPECT_EQ(a.offset, 16 * MiB);
  EXPECT_EQ(a.size, 8 * MiB);
}

TEST(ProbeSignatureTest, FindsExt4AndNothingOnZeros) {
  testing::TempDir dir;
  const std::string blank = dir.path() + "/blank", fs = dir.path() + "/fs";
  std::ofstream(blank).close();
  ASSERT_EQ(truncate(blank.c_str(), 8 * MiB), 0);
  auto none = ProbeSignature(blank);
  ASSERT_TRUE(none.ok()) << none.status().ToString();
  EXPECT_EQ(*none, "");
  std::ofstream(fs).close();
  ASSERT_EQ(truncate(fs.c_str(), 8 * MiB), 0);
  ASSERT_EQ(std::system(("mkfs.ext4 -q -F " + fs + " >/dev/null 2>&1").c_str()), 0);
  auto found = ProbeSignature(fs);
  ASSERT_TRUE(found.ok()) << found.status().ToString();
  EXPECT_EQ(*found, "ext4 filesystem");
}

TEST(BenchTargetTest, NewPathIsCreatedAndRemoved) {
  testing::TempDir dir;
  const std::string path = dir.path() + "/new.bin";
  {
    auto t = BenchTarget::Open(path, {.new_file_size = 4 * MiB});
    ASSERT_TRUE(t.ok()) << t.status().ToString();
    EXPECT_TRUE((*t)->created_file());
    EXPECT_EQ((*t)->geometry().size, 4 * MiB);
    struct stat st;
    EXPECT_EQ(stat(path.c_str(), &st), 0);
  }
  EXPECT_NE(access(path.c_str(), F_OK), 0);
}

TEST(BenchTargetTest, ExistingFileRefusedWithoutForceAndKept) {
  testing::TempDir dir;
  const std::string path = dir.path() + "/data.bin";
  std::ofstream(path) << "someone's data";
  auto t = BenchTarget::Open(path, {.new_file_size = 4 * MiB});
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("is an existing file"), std::string::npos) << t.status().ToString();
  auto ro = BenchTarget::Open(path, {.destructive = false});
  ASSERT_TRUE(ro.ok()) << ro.status().ToString();
  ro->reset();
  auto forced = BenchTarget::Open(path, {.force = true, .new_file_size = 4 * MiB});
  ASSERT_TRUE(forced.ok()) << forced.status().ToString();
  EXPECT_FALSE((*forced)->created_file());
  forced->reset();
  EXPECT_EQ(access(path.c_str(), F_OK), 0);  // not removed
}

TEST(BenchTargetTest, SimTargetsNeedNoFile) {
  auto t = BenchTarget::Open("sim:size=8G,bw=45M,cmd_us=300", {});
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_TRUE((*t)->is_sim());
  EXPECT_EQ((*t)->geometry().size, uint64_t{8} << 30);
  EXPECT_EQ((*t)->geometry().logical_block, 512u);
  auto q = (*t)->MakeQueue(2);
  ASSERT_TRUE(q.ok());
  EXPECT_EQ((*q)->name(), "sim");
  EXPECT_EQ((*q)->depth(), 2u);
  EXPECT_FALSE(BenchTarget::Open("sim:size=8G,bogus=1", {}).ok());
}

}  // namespace
}  // namespace flashpipe::bench
