// TargetSpec: the TARGET[:NAME] rule read and write share, the window placed
// inside a partition or a target, and write's alignment rule.
#include "io/target_spec.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>

#include "testing/temp_dir.h"

namespace flashpipe::io {
namespace {

class TargetSpecTest : public ::testing::Test {
 protected:
  void SetUp() override {
    disk_ = dir_.File("disk.img");
    int fd = ::open(disk_.c_str(), O_RDWR | O_CREAT, 0644);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(::ftruncate(fd, 8 << 20), 0);
    ::close(fd);
  }
  // boot: sectors 2048..4095 (1 MiB), system: 4096..8191 (2 MiB).
  void Partition() {
    if (std::system("command -v sgdisk >/dev/null 2>&1") != 0) GTEST_SKIP() << "sgdisk is not installed";
    std::string cmd = "sgdisk -o -n 1:2048:+1M -c 1:boot -n 2:0:+2M -c 2:system " + disk_ + " >/dev/null 2>&1";
    ASSERT_EQ(std::system(cmd.c_str()), 0);
  }
  std::unique_ptr<Target> Open() {
    auto t = Target::Open(disk_, {});
    EXPECT_TRUE(t.ok()) << t.status().ToString();
    return t.ok() ? std::move(*t) : nullptr;
  }
  flashpipe::testing::TempDir dir_;
  std::string disk_;
};

TEST_F(TargetSpecTest, APathThatExistsIsNeverSplit) {
  std::string odd = dir_.File("a:b");
  ASSERT_EQ(::rename(disk_.c_str(), odd.c_str()), 0);
  TargetSpec s = ParseTargetSpec(odd);
  EXPECT_TRUE(s.exists);
  EXPECT_EQ(s.path, odd);
  EXPECT_TRUE(s.partition.empty());
}

TEST_F(TargetSpecTest, PathColonNameSplitsAtTheLastColonWhenThePathExists) {
  TargetSpec s = ParseTargetSpec(disk_ + ":system");
  EXPECT_TRUE(s.exists);
  EXPECT_EQ(s.path, disk_);
  EXPECT_EQ(s.partition, "system");
  EXPECT_TRUE(S_ISREG(s.st.st_mode));
  TargetSpec none = ParseTargetSpec(dir_.File("new:img"));
  EXPECT_FALSE(none.exists) << "no 'new' there: a new path, not a partition";
  EXPECT_EQ(none.path, dir_.File("new:img"));
  EXPECT_TRUE(none.partition.empty());
  EXPECT_TRUE(ParseTargetSpec(disk_ + ":").partition.empty()) << "an empty name is no partition";
}

TEST(PlaceWindowTest, InsideTheRangeOrRefusedSayingHowMuchThereIs) {
  const ByteRange part{1 << 20, 2 << 20};
  auto whole = PlaceWindow(part, {}, {.what = "disk.img partition 'system'"});
  ASSERT_TRUE(whole.ok());
  EXPECT_EQ(*whole, part);
  auto inner = PlaceWindow(part, {.offset = 4096, .size = 8192}, {.what = "p"});
  ASSERT_TRUE(inner.ok());
  EXPECT_EQ(*inner, (ByteRange{(1 << 20) + 4096, 8192}));
  auto rest = PlaceWindow(part, {.offset = 1 << 20}, {.what = "p"});
  ASSERT_TRUE(rest.ok());
  EXPECT_EQ(rest->size, 1u << 20) << "no size: the rest of the range";
  auto longer = PlaceWindow(part, {.offset = 1 << 20, .size = 3 << 20}, {.what = "disk.img partition 'system'"});
  ASSERT_FALSE(longer.ok());
  EXPECT_EQ(longer.status().code(), Code::kNoSpace);
  EXPECT_EQ(longer.status().message(),
            "disk.img partition 'system' holds only 1048576 bytes from offset 1048576; --size asks for 3145728 "
            "(2097152 more)");
  auto beyond = PlaceWindow(part, {.offset = 3 << 20}, {.what = "p"});
  ASSERT_FALSE(beyond.ok());
  EXPECT_EQ(beyond.status().message(), "--offset 3145728 is beyond the end of p (2097152 bytes)");
  auto empty = PlaceWindow(part, {.offset = 2 << 20}, {.what = "p"});
  ASSERT_FALSE(empty.ok());
  EXPECT_EQ(empty.status().message(), "nothing to write: p has no bytes from offset 2097152");
}

TEST_F(TargetSpecTest, FindsAPartitionByNameAndListsTheNamesWhenItIsNotThere) {
  Partition();
  if (IsSkipped()) return;
  auto t = Open();
  ASSERT_TRUE(t);
  auto sys = FindGptPartition(disk_, "system", t->geometry());
  ASSERT_TRUE(sys.ok()) << sys.status().ToString();
  EXPECT_EQ(*sys, (ByteRange{4096u * 512, 4096u * 512}));
  auto missing = FindGptPartition(disk_, "vendor", t->geometry());
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), Code::kNotFound);
  EXPECT_EQ(missing.status().message(), disk_ + ": no GPT partition named 'vendor' (there are: boot, system)");
}

TEST_F(TargetSpecTest, NoGptIsRefusedNamingThePartition) {
  auto t = Open();
  ASSERT_TRUE(t);
  auto r = FindGptPartition(disk_, "system", t->geometry());
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().ToString().find(disk_ + ": partition 'system'"), std::string::npos) << r.status().ToString();
}

TEST_F(TargetSpecTest, SetWriteWindowMakesThePartitionTheTargetsWindow) {
  Partition();
  if (IsSkipped()) return;
  auto t = Open();
  ASSERT_TRUE(t);
  auto w = SetWriteWindow(ParseTargetSpec(disk_ + ":system"), {.offset = 1 << 20}, t.get());
  ASSERT_TRUE(w.ok()) << w.status().ToString();
  EXPECT_EQ(w->range, (ByteRange{(4096u * 512) + (1 << 20), 1 << 20}));
  EXPECT_EQ(w->what, disk_ + " partition 'system' from offset 1048576");
  EXPECT_EQ(t->window_offset(), w->range.offset);
  EXPECT_EQ(t->window_size(), w->range.size);
  EXPECT_TRUE(t->CheckRange(0, 1 << 20).ok());
  EXPECT_FALSE(t->CheckRange(0, (1 << 20) + 1).ok()) << "one byte past the partition";
}

TEST_F(TargetSpecTest, AnUnalignedWindowIsRefusedAndTheWindowStaysAsItWas) {
  auto t = Open();
  ASSERT_TRUE(t);
  const uint32_t lb = t->geometry().logical_block;
  auto off = SetWriteWindow(ParseTargetSpec(disk_), {.offset = lb / 2}, t.get());
  ASSERT_FALSE(off.ok());
  EXPECT_EQ(off.status().message(),
            fmt::format("{} from offset {}: the window starts at byte {} (--offset {}), not a multiple of the {}-byte "
                        "logical block of {}; nothing written",
                        disk_, lb / 2, lb / 2, lb / 2, lb, disk_));
  auto size = SetWriteWindow(ParseTargetSpec(disk_), {.offset = 0, .size = lb + 1}, t.get());
  ASSERT_FALSE(size.ok());
  EXPECT_NE(size.status().message().find("is not a multiple of the"), std::string::npos);
  EXPECT_EQ(t->window_offset(), 0u);
  EXPECT_EQ(t->window_size(), 8u << 20);
  auto to_end = SetWriteWindow(ParseTargetSpec(disk_), {.offset = lb}, t.get());
  EXPECT_TRUE(to_end.ok()) << "a window to the end of the file: " << to_end.status().ToString();
}

}  // namespace
}  // namespace flashpipe::io
