// The read path end to end on files: every format decoded back equals the
// source, parts, the bmap alongside, verify, and the failures that must leave
// no output (ENOSPC, a source shorter than --length, the source as output).
#include "output/read_job.h"

#include <dirent.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "input/bmap.h"
#include "input/byte_reader.h"
#include "input/decompress_reader.h"
#include "output/output_test_util.h"
#include "sparse/decoder.h"
#include "testing/image_recorder.h"
#include "testing/temp_dir.h"

namespace flashpipe::output {
namespace {

using flashpipe::testing::ReadFile;
using flashpipe::testing::TempDir;

std::vector<uint8_t> ExpandSparse(const std::vector<std::string>& parts) {
  flashpipe::testing::ImageRecorder rec;
  for (const auto& p : parts) {
    sparse::Decoder d(&rec);
    EXPECT_TRUE(d.Feed(ReadFile(p)).ok()) << p;
    EXPECT_TRUE(d.Finish().ok()) << p;
  }
  return rec.image;
}

std::vector<uint8_t> Decompress(input::ImageKind kind, const std::string& path) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY));
  auto r = input::DecompressReader::Start(kind, input::FdReader::Own(std::move(fd), path));
  std::vector<uint8_t> out(64 << 20);
  auto n = (*r)->ReadUpTo(out);
  out.resize(n.ok() ? *n : 0);
  return out;
}

std::vector<std::string> Names(const std::string& dir) {
  std::vector<std::string> out;
  DIR* d = ::opendir(dir.c_str());
  while (dirent* e = ::readdir(d)) {
    std::string n = e->d_name;
    if (n != "." && n != "..") out.push_back(n);
  }
  ::closedir(d);
  std::sort(out.begin(), out.end());
  return out;
}

class ReadJobTest : public ::testing::Test {
 protected:
  void SetUp() override {
    content_ = test::SampleImage(1500, 17, 3000);  // not a multiple of 4 KiB
    src_ = dir_.File("src.img");
    flashpipe::testing::WriteFile(src_, content_);
    int fd = ::open(src_.c_str(), O_RDWR);  // a hole over data that was zero anyway
    std::fill_n(content_.begin() + (1 << 20), 1 << 20, 0);
    ASSERT_EQ(fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 1 << 20, 1 << 20), 0);
    ::close(fd);
  }
  ReadReport Read(ReadRequest r) {
    if (r.source.spec.empty()) r.source.spec = src_;
    return RunRead(r, nullptr, nullptr);
  }
  TempDir dir_;
  std::string src_;
  std::vector<uint8_t> content_;
};

TEST_F(ReadJobTest, EveryFormatDecodesBackToTheSource) {
  for (const char* name : {"o.img", "o.simg", "o.zst", "o.xz", "o.gz"}) {
    bool compressed = IsCompressed(FormatForPath(name));
    ReadReport r = Read({.output = dir_.File(name), .compress = {.level = compressed ? 1 : -1}, .verify = true});
    ASSERT_TRUE(r.status.ok()) << name << ": " << r.status.ToString();
    EXPECT_EQ(r.verify, input::VerifyOutcome::kPassed);
    EXPECT_EQ(r.scan.data_bytes + r.scan.zero_bytes + r.scan.hole_bytes, content_.size());
    EXPECT_GE(r.scan.hole_bytes, 1u << 20);
    std::string path = dir_.File(name);
    std::vector<uint8_t> back;
    if (r.format == "raw") back = ReadFile(path);
    if (r.format == "sparse") {
      back = ExpandSparse({path});
      back.resize(content_.size());  // the last block is padded
    }
    if (r.format == "zstd") back = Decompress(input::ImageKind::kZstd, path);
    if (r.format == "xz") back = Decompress(input::ImageKind::kXz, path);
    if (r.format == "gzip") back = Decompress(input::ImageKind::kGzip, path);
    EXPECT_EQ(back, content_) << name;
  }
  struct stat st;
  ASSERT_EQ(::stat(dir_.File("o.img").c_str(), &st), 0);
  EXPECT_LT(uint64_t(st.st_blocks) * 512, content_.size() - (1 << 20)) << "zero runs were written, not left as holes";
}

TEST_F(ReadJobTest, AnInnerRangeAndPartsOfAtMostMaxSize) {
  ReadReport r = Read({.source = {.offset = 64 << 10, .length = 4 << 20}, .output = dir_.File("p.simg"),
                       .max_size = 256 << 10, .verify = true});
  ASSERT_TRUE(r.status.ok()) << r.status.ToString();
  ASSERT_GE(r.parts.size(), 3u) << r.output_bytes << " bytes, data " << r.scan.data_bytes;
  for (const auto& p : r.parts) EXPECT_LE(ReadFile(p).size(), 256u << 10) << p;
  std::vector<uint8_t> want(content_.begin() + (64 << 10), content_.begin() + (64 << 10) + (4 << 20));
  EXPECT_EQ(ExpandSparse(r.parts), want);
  std::vector<std::string> want_names{"src.img"};
  for (size_t i = 0; i < r.parts.size(); ++i) want_names.push_back(fmt::format("p.simg.{}", i));
  std::sort(want_names.begin(), want_names.end());
  EXPECT_EQ(Names(dir_.path()), want_names)
      << "nothing but the parts was left";
}

TEST_F(ReadJobTest, TheBmapAlongsideMapsAllocatedBlocksOfAFileAndParses) {
  ReadReport all = Read({.output = dir_.File("o.img"), .bmap = dir_.File("o.bmap")});
  ASSERT_TRUE(all.status.ok()) << all.status.ToString();
  auto bmap = input::LoadBmap(dir_.File("o.bmap"));
  ASSERT_TRUE(bmap.ok()) << bmap.status().ToString();
  EXPECT_EQ(bmap->image_size, content_.size());
  EXPECT_EQ(bmap->mapped_blocks, all.mapped_blocks);
  uint64_t hole_blocks = (1 << 20) / 4096;
  EXPECT_EQ(bmap->mapped_blocks, bmap->blocks_count - hole_blocks) << "allocated zero blocks are mapped";
  ReadReport data = Read({.output = dir_.File("o2.img"), .bmap = dir_.File("o2.bmap"), .zeros_unmapped = true});
  ASSERT_TRUE(data.status.ok());
  EXPECT_EQ(data.mapped_blocks * 4096, (data.scan.data_bytes + 4095) / 4096 * 4096);
}

TEST_F(ReadJobTest, ASourceShorterThanTheLengthCreatesNothing) {
  ReadReport r = Read({.source = {.length = content_.size() + 4096}, .output = dir_.File("o.img"),
                       .bmap = dir_.File("o.bmap")});
  ASSERT_FALSE(r.status.ok());
  EXPECT_NE(r.status.message().find("--length asks for"), std::string::npos) << r.status.ToString();
  EXPECT_EQ(Names(dir_.path()), std::vector<std::string>{"src.img"});
}

TEST_F(ReadJobTest, TheSourceIsNeverTheOutput) {
  std::string link = dir_.File("link.img");
  ASSERT_EQ(::link(src_.c_str(), link.c_str()), 0);
  ReadReport r = Read({.output = link});
  ASSERT_FALSE(r.status.ok());
  EXPECT_NE(r.status.message().find("is the source itself"), std::string::npos) << r.status.ToString();
  ReadReport b = Read({.output = dir_.File("o.img"), .bmap = src_});
  ASSERT_FALSE(b.status.ok());
  EXPECT_EQ(ReadFile(src_).size(), content_.size());
}

TEST_F(ReadJobTest, ENoSpaceLeavesNoOutputBehind) {
  if (geteuid() != 0) GTEST_SKIP() << "mounting a small tmpfs needs root";
  std::string small = dir_.File("small");
  ASSERT_EQ(::mkdir(small.c_str(), 0755), 0);
  ASSERT_EQ(::mount("tmpfs", small.c_str(), "tmpfs", 0, "size=1m"), 0);
  for (const char* name : {"o.img", "o.simg", "o.zst"}) {
    ReadReport r = Read({.output = small + "/" + name, .bmap = small + "/o.bmap"});
    EXPECT_FALSE(r.status.ok()) << name;
    EXPECT_EQ(r.status.sys_errno(), ENOSPC) << r.status.ToString();
    EXPECT_TRUE(Names(small).empty()) << name << ": something was left in the full filesystem";
  }
  ::umount(small.c_str());
}

TEST(ReadRequestTest, FlagCombinationsThatMakeNoSense) {
  EXPECT_FALSE(CheckReadRequest({.output = "x.img", .max_size = 1 << 20}).ok());
  EXPECT_TRUE(CheckReadRequest({.output = "x.img", .format = Format::kSparse, .max_size = 1 << 20}).ok());
  EXPECT_FALSE(CheckReadRequest({.output = "-", .format = Format::kSparse, .max_size = 1 << 20}).ok());
  EXPECT_FALSE(CheckReadRequest({.output = "x.zst", .sparse = {.dont_care_zeros = true}}).ok());
  EXPECT_FALSE(CheckReadRequest({.output = "x.simg", .compress = {.level = 3}}).ok());
  EXPECT_FALSE(CheckReadRequest({.output = "-", .verify = true}).ok());
  EXPECT_FALSE(CheckReadRequest({.output = "x.img", .zeros_unmapped = true}).ok());
}

}  // namespace
}  // namespace flashpipe::output
