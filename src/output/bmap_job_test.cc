#include "output/bmap_job.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <random>

#include "input/bmap.h"
#include "output/bmap_segments.h"
#include "testing/temp_dir.h"

namespace flashpipe::output {
namespace {

constexpr uint64_t kMiB = 1 << 20;

// A sparse file: `layout` is (offset, bytes) of the stored stretches, each
// random data with some all-zero 4 KiB blocks in it; the rest are holes.
std::string MakeSparse(const flashpipe::testing::TempDir& dir, const std::string& name, uint64_t size,
                       const std::vector<std::pair<uint64_t, uint64_t>>& layout, uint32_t seed = 7) {
  std::string path = dir.File(name);
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC, 0644);
  EXPECT_GE(fd, 0);
  std::mt19937_64 rng(seed);
  for (auto [at, n] : layout) {
    std::vector<uint8_t> bytes(n);
    for (auto& b : bytes) b = static_cast<uint8_t>(rng());
    for (uint64_t z = 4096; z + 4096 <= n; z += 13 * 4096) std::fill_n(bytes.begin() + z, 4096, 0);
    EXPECT_EQ(::pwrite(fd, bytes.data(), n, static_cast<off_t>(at)), static_cast<ssize_t>(n));
  }
  EXPECT_EQ(::ftruncate(fd, static_cast<off_t>(size)), 0);
  ::close(fd);
  return path;
}

bool HasHoles(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY);
  off_t h = ::lseek(fd, 0, SEEK_HOLE);
  off_t size = ::lseek(fd, 0, SEEK_END);
  ::close(fd);
  return h >= 0 && h < size;
}

struct Created {
  BmapReport report;
  std::string text;
};

Created Create(const std::string& image, const std::string& out, unsigned threads, bool zeros_unmapped = false) {
  BmapRequest r{.image = image, .output = out, .zeros_unmapped = zeros_unmapped, .threads = threads};
  Created c{RunBmapCreate(r, nullptr, nullptr), {}};
  auto bytes = flashpipe::testing::ReadFile(out);
  c.text.assign(bytes.begin(), bytes.end());
  return c;
}

const std::vector<std::pair<uint64_t, uint64_t>> kLayout = {
    {0, 3 * kMiB}, {4 * kMiB, 1 * kMiB}, {6 * kMiB, 2 * kMiB + 4096}, {9 * kMiB, 64 * 1024},
    {10 * kMiB, 5 * kMiB}, {16 * kMiB, 12288}, {17 * kMiB, 2 * kMiB - 1000}};

TEST(BmapJobTest, SegmentsOnSeveralThreadsMakeTheSameBmapAsOneThread) {
  flashpipe::testing::TempDir dir;
  std::string img = MakeSparse(dir, "a.img", 20 * kMiB + 512, kLayout);
  if (!HasHoles(img)) GTEST_SKIP() << "the temp directory's filesystem stores no holes";
  for (bool zeros_unmapped : {false, true}) {
    Created one = Create(img, dir.File("one.bmap"), 1, zeros_unmapped);
    ASSERT_TRUE(one.report.status.ok()) << one.report.status.ToString();
    EXPECT_EQ(one.report.segments, 1u);
    auto parsed = input::ParseBmap(one.text, "one.bmap");
    ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
    EXPECT_GE(parsed->ranges.size(), 7u);
    for (unsigned threads : {2u, 3u, 4u}) {
      Created many = Create(img, dir.File("many.bmap"), threads, zeros_unmapped);
      ASSERT_TRUE(many.report.status.ok()) << many.report.status.ToString();
      EXPECT_GT(many.report.segments, 1u);
      EXPECT_LE(many.report.segments, 4 * threads);
      EXPECT_EQ(many.text, one.text) << threads << " threads, zeros_unmapped " << zeros_unmapped;
      EXPECT_EQ(many.report.scan.data_bytes, one.report.scan.data_bytes);
      EXPECT_EQ(many.report.scan.zero_bytes, one.report.scan.zero_bytes);
      EXPECT_EQ(many.report.scan.hole_bytes, one.report.scan.hole_bytes);
      EXPECT_EQ(many.report.ranges, one.report.ranges);
    }
  }
}

TEST(BmapJobTest, AFileWithoutHolesIsOneSegment) {
  flashpipe::testing::TempDir dir;
  std::string img = MakeSparse(dir, "full.img", 3 * kMiB, {{0, 3 * kMiB}});
  Created c = Create(img, dir.File("full.bmap"), 4);
  ASSERT_TRUE(c.report.status.ok()) << c.report.status.ToString();
  EXPECT_EQ(c.report.segments, 1u);
  EXPECT_TRUE(input::ParseBmap(c.text, "full.bmap").ok());
}

TEST(BmapJobTest, AMissingImageFailsAndLeavesNoBmap) {
  flashpipe::testing::TempDir dir;
  BmapRequest r{.image = dir.File("nope.img"), .output = dir.File("x.bmap"), .threads = 2};
  BmapReport rep = RunBmapCreate(r, nullptr, nullptr);
  EXPECT_FALSE(rep.status.ok());
  EXPECT_NE(rep.status.ToString().find("nope.img"), std::string::npos) << rep.status.ToString();
  EXPECT_NE(::access(dir.File("x.bmap").c_str(), F_OK), 0);
}

// The cuts: in order, covering the file, each at a multiple of 4 KiB that
// starts a hole block, the stored bytes shared out.
TEST(BmapSegmentsTest, CutsAreAtWholeHoleBlocksAndShareTheStoredBytes) {
  flashpipe::testing::TempDir dir;
  std::string img = MakeSparse(dir, "s.img", 20 * kMiB, kLayout);
  if (!HasHoles(img)) GTEST_SKIP() << "the temp directory's filesystem stores no holes";
  int fd = ::open(img.c_str(), O_RDONLY);
  uint64_t stored_total = 0;
  for (auto [at, n] : kLayout) stored_total += (n + 4095) / 4096 * 4096;
  for (unsigned n : {1u, 2u, 3u, 4u, 16u}) {
    auto segs = SplitAtHoles(fd, 0, 20 * kMiB, n, img);
    ASSERT_TRUE(segs.ok()) << segs.status().ToString();
    ASSERT_FALSE(segs->empty());
    EXPECT_LE(segs->size(), std::min<size_t>(n, kLayout.size()));
    EXPECT_EQ(segs->front().start, 0u);
    EXPECT_EQ(segs->back().end, 20 * kMiB);
    uint64_t stored = 0;
    for (size_t i = 0; i < segs->size(); ++i) {
      const Segment& s = (*segs)[i];
      stored += s.stored;
      EXPECT_GT(s.stored, 0u);
      if (i == 0) continue;
      EXPECT_EQ(s.start, (*segs)[i - 1].end);
      EXPECT_EQ(s.start % 4096, 0u);
      off_t d = ::lseek(fd, static_cast<off_t>(s.start), SEEK_DATA);
      EXPECT_GE(d, static_cast<off_t>(s.start + 4096)) << "segment " << i << " starts at a stored block";
    }
    EXPECT_EQ(stored, stored_total) << n;
  }
  auto two = SplitAtHoles(fd, 0, 20 * kMiB, 2, img);
  ASSERT_EQ(two->size(), 2u);
  // 13 MiB + 80 KiB stored: the hole cut nearest half of it is after the
  // 64 KiB at 9 MiB (6 MiB + 68 KiB before it).
  EXPECT_EQ((*two)[0].end, 9 * kMiB + 64 * 1024);
  ::close(fd);
}

TEST(BmapSegmentsTest, AWindowIsCutInItsOwnOffsets) {
  flashpipe::testing::TempDir dir;
  std::string img = MakeSparse(dir, "w.img", 20 * kMiB, kLayout);
  if (!HasHoles(img)) GTEST_SKIP() << "the temp directory's filesystem stores no holes";
  int fd = ::open(img.c_str(), O_RDONLY);
  auto segs = SplitAtHoles(fd, 4 * kMiB, 12 * kMiB, 2, img);  // [4, 16) MiB of the file
  ASSERT_TRUE(segs.ok()) << segs.status().ToString();
  ASSERT_EQ(segs->size(), 2u);
  EXPECT_EQ(segs->back().end, 12 * kMiB);
  EXPECT_EQ((*segs)[0].stored + (*segs)[1].stored, 1 * kMiB + 2 * kMiB + 4096 + 64 * 1024 + 5 * kMiB);
  off_t d = ::lseek(fd, static_cast<off_t>(4 * kMiB + (*segs)[1].start), SEEK_DATA);
  EXPECT_GE(d, static_cast<off_t>(4 * kMiB + (*segs)[1].start + 4096));
  ::close(fd);
}

}  // namespace
}  // namespace flashpipe::output
