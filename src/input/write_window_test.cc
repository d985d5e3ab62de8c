// RunWriteJob into windows: TARGET:PARTNAME of a disk image file (sgdisk)
// and --offset/--size. Only the window's bytes change; refusals leave the
// disk byte-identical; a stream of unknown size stops at the window's end.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <random>

#include "input/write_job.h"
#include "testing/compress.h"
#include "testing/sparse_builder.h"
#include "testing/stdin_pipe.h"
#include "testing/temp_dir.h"

namespace flashpipe::input {
namespace {

using testing::ReadFile;
using testing::WriteFile;

constexpr uint64_t kMiB = 1 << 20;
// sgdisk -n 1:2048:+1M boot, 2:0:+2M system, 3:0:+1M vendor.
constexpr uint64_t kSystemStart = 4096 * 512, kSystemSize = 2 * kMiB;

std::vector<uint8_t> Random(size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> v(n);
  for (auto& b : v) b = static_cast<uint8_t>(rng());
  return v;
}

class WriteWindowTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::system("command -v sgdisk >/dev/null 2>&1") != 0) GTEST_SKIP() << "sgdisk is not installed";
    disk_ = dir_ / "disk.img";
    WriteFile(disk_, std::vector<uint8_t>(8 * kMiB, 0xAA));  // every byte known, none zero
    std::string cmd = "sgdisk -o -n 1:2048:+1M -c 1:boot -n 2:0:+2M -c 2:system -n 3:0:+1M -c 3:vendor " + disk_ +
                      " >/dev/null 2>&1";
    ASSERT_EQ(std::system(cmd.c_str()), 0);
    before_ = ReadFile(disk_);
  }
  WriteReport Write(const std::string& image, const std::string& target, io::WindowRequest window = {}) {
    WriteRequest r;
    r.image = image;
    r.targets = {target};
    r.window = window;
    r.digest = false;
    Progress p(nullptr, ProgressMode::kOff);
    return RunWriteJob(r, &p);
  }
  // The disk as dd would leave it: `bytes` at `offset`, all else as before.
  std::vector<uint8_t> Expected(uint64_t offset, const std::vector<uint8_t>& bytes) const {
    std::vector<uint8_t> d = before_;
    std::copy(bytes.begin(), bytes.end(), d.begin() + static_cast<std::ptrdiff_t>(offset));
    return d;
  }
  std::string Image(const std::string& name, const std::vector<uint8_t>& bytes) {
    WriteFile(dir_ / name, bytes);
    return dir_ / name;
  }
  testing::TempDir dir_;
  std::string disk_;
  std::vector<uint8_t> before_;
};

TEST_F(WriteWindowTest, ARawImageLandsInThePartitionAndNowhereElse) {
  std::vector<uint8_t> img = Random(kMiB + 1000, 1);  // not a whole number of blocks
  WriteReport r = Write(Image("raw.img", img), disk_ + ":system");
  ASSERT_TRUE(r.status.ok()) << r.status.ToString();
  EXPECT_EQ(ReadFile(disk_), Expected(kSystemStart, img));
  ASSERT_EQ(r.results.size(), 1u);
  EXPECT_EQ(r.results[0].partition, "system");
  ASSERT_TRUE(r.results[0].window.has_value());
  EXPECT_EQ(*r.results[0].window, (io::ByteRange{kSystemStart, kSystemSize}));
  EXPECT_TRUE(r.results[0].in_place);
  std::string json = ReportJson(r);
  EXPECT_NE(json.find(fmt::format("\"partition\": \"system\", \"window\": {{\"offset\": {}, \"size\": {}}}",
                                  kSystemStart, kSystemSize)),
            std::string::npos)
      << json;
}

TEST_F(WriteWindowTest, ASparseImageWithZerosAndTheOffsetInsideThePartition) {
  testing::SparseBuilder b(4096);
  b.RawBlocks(16, 7).Fill(32, 0).RawBlocks(8, 9);
  std::vector<uint8_t> img = b.expanded();
  WriteReport r = Write(Image("a.simg", b.Build()), disk_ + ":system", {.offset = 256 * 1024});
  ASSERT_TRUE(r.status.ok()) << r.status.ToString();
  EXPECT_EQ(ReadFile(disk_), Expected(kSystemStart + 256 * 1024, img)) << "FILL 0 written as zeros, nothing else";
}

TEST_F(WriteWindowTest, OffsetAndSizeOnAPlainTarget) {
  std::vector<uint8_t> img = Random(64 * 1024, 2);
  WriteReport r = Write(Image("raw.img", img), disk_, {.offset = 5 * kMiB, .size = 128 * 1024});
  ASSERT_TRUE(r.status.ok()) << r.status.ToString();
  EXPECT_EQ(ReadFile(disk_), Expected(5 * kMiB, img)) << "a file with a window is written in place, not replaced";
  EXPECT_TRUE(r.results[0].partition.empty());
  EXPECT_EQ(*r.results[0].window, (io::ByteRange{5 * kMiB, 128 * 1024}));
}

TEST_F(WriteWindowTest, RefusalsLeaveTheDiskByteIdentical) {
  struct Case {
    std::string target;
    io::WindowRequest window;
    size_t image_size;
    Code code;
    std::string says;
  };
  const std::vector<Case> cases = {
      {disk_ + ":system", {}, kSystemSize + 4096, Code::kNoSpace,
       fmt::format("image of 2101248 bytes (2.0 MiB) does not fit {} partition 'system' of 2097152 bytes", disk_)},
      {disk_ + ":system", {.offset = kMiB}, kMiB + 512, Code::kNoSpace,
       fmt::format("does not fit {} partition 'system' from offset 1048576 of 1048576 bytes", disk_)},
      {disk_ + ":nope", {}, 4096, Code::kNotFound, "no GPT partition named 'nope' (there are: boot, system, vendor)"},
      {disk_ + ":system", {.offset = 3 * kMiB}, 4096, Code::kInvalidArgument,
       fmt::format("--offset 3145728 is beyond the end of {} partition 'system' (2097152 bytes)", disk_)},
      {disk_ + ":system", {.offset = 100}, 4096, Code::kInvalidArgument, "not a multiple of the"},
      {disk_ + ":system", {.offset = 0, .size = 3 * kMiB}, 4096, Code::kNoSpace,
       "holds only 2097152 bytes from offset 0; --size asks for 3145728"},
      {disk_, {.offset = 9 * kMiB}, 4096, Code::kInvalidArgument, "is beyond the end of"},
      {dir_ / "absent", {.offset = 4096}, 4096, Code::kNotFound, "no such file or device"},
  };
  for (const Case& c : cases) {
    WriteReport r = Write(Image("raw.img", Random(c.image_size, 3)), c.target, c.window);
    EXPECT_EQ(r.status.code(), c.code) << c.target << ": " << r.status.ToString();
    EXPECT_NE(r.status.message().find(c.says), std::string::npos) << r.status.ToString();
    EXPECT_EQ(r.results.at(0).state, TargetState::kNotStarted) << r.status.ToString();
    EXPECT_TRUE(ReadFile(disk_) == before_) << c.target << " changed";
  }
}

TEST_F(WriteWindowTest, TwoWindowsOfOneFileAreTheSameTargetGivenTwice) {
  WriteRequest r;
  r.image = Image("raw.img", Random(4096, 8));
  r.targets = {disk_ + ":system", disk_ + ":boot"};
  Progress p(nullptr, ProgressMode::kOff);
  WriteReport rep = RunWriteJob(r, &p);
  EXPECT_EQ(rep.status.code(), Code::kInvalidArgument) << rep.status.ToString();
  EXPECT_EQ(rep.status.message(),
            fmt::format("target {}:boot is given twice (it is the same file as {}:system)", disk_, disk_))
      << "found before the second open, which would say another writer holds it";
  EXPECT_TRUE(ReadFile(disk_) == before_);
}

TEST_F(WriteWindowTest, TheJsonReportIsNeverTheDiskBehindAPartition) {
  WriteRequest r;
  r.image = Image("raw.img", Random(4096, 9));
  r.targets = {disk_ + ":system"};
  r.other_outputs = {{disk_, "the --json report"}};
  Progress p(nullptr, ProgressMode::kOff);
  WriteReport rep = RunWriteJob(r, &p);
  EXPECT_EQ(rep.status.code(), Code::kInvalidArgument) << rep.status.ToString();
  EXPECT_FALSE(rep.other_outputs_checked);
  EXPECT_TRUE(ReadFile(disk_) == before_);
}

TEST_F(WriteWindowTest, NoGptIsRefusedByteIdentical) {
  std::string plain = Image("plain.img", std::vector<uint8_t>(4 * kMiB, 0x55));
  WriteReport r = Write(Image("raw.img", Random(4096, 4)), plain + ":system");
  ASSERT_FALSE(r.status.ok());
  EXPECT_NE(r.status.message().find("partition 'system'"), std::string::npos) << r.status.ToString();
  EXPECT_EQ(ReadFile(plain), std::vector<uint8_t>(4 * kMiB, 0x55));
}

TEST_F(WriteWindowTest, AStreamOfUnknownSizeStopsAtThePartitionsEnd) {
  std::vector<uint8_t> img = Random(kSystemSize + 300 * 1024, 5);
  testing::StdinPipe in(testing::Gzip(img));
  WriteReport r = Write("-", disk_ + ":system");
  ASSERT_EQ(r.status.code(), Code::kNoSpace) << r.status.ToString();
  EXPECT_NE(r.status.message().find(fmt::format("goes beyond the end of {} partition 'system'", disk_)),
            std::string::npos)
      << r.status.ToString();
  EXPECT_EQ(r.results.at(0).state, TargetState::kPartial);
  std::vector<uint8_t> after = ReadFile(disk_);
  ASSERT_EQ(after.size(), before_.size());
  EXPECT_TRUE(std::equal(after.begin(), after.begin() + kSystemStart, before_.begin())) << "before the partition";
  EXPECT_TRUE(std::equal(after.begin() + kSystemStart + kSystemSize, after.end(),
                         before_.begin() + kSystemStart + kSystemSize))
      << "nothing past the partition's end";
}

TEST_F(WriteWindowTest, VerifyOnlyComparesTheWindow) {
  std::vector<uint8_t> img = Random(64 * 1024, 6);
  std::string raw = Image("raw.img", img);
  ASSERT_TRUE(Write(raw, disk_ + ":system").status.ok());
  WriteRequest r;
  r.image = raw;
  r.targets = {disk_ + ":system"};
  Progress p(nullptr, ProgressMode::kOff);
  WriteReport same = VerifyOnly(r, &p);
  EXPECT_TRUE(same.status.ok()) << same.status.ToString();
  EXPECT_EQ(same.results.at(0).partition, "system");
  r.targets = {disk_ + ":vendor"};
  EXPECT_EQ(VerifyOnly(r, &p).status.code(), Code::kMismatch);
}

}  // namespace
}  // namespace flashpipe::input
