#include "output/bmap_writer.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include "input/bmap.h"
#include "output/output_test_util.h"
#include "testing/temp_dir.h"

namespace flashpipe::output {
namespace {

std::string Sha256(std::span<const uint8_t> bytes) {
  auto d = input::Digest::Create("sha256");
  d->Update(bytes);
  return d->HexFinal();
}

struct Made {
  std::string text;
  Result<input::Bmap> bmap = InvalidArgument("not made");
};

// A bmap of `image` fed with `holes` as hole pieces.
Made MakeBmap(const std::vector<uint8_t>& image, const std::vector<std::pair<uint64_t, uint64_t>>& holes,
              BmapOptions o) {
  flashpipe::testing::TempDir dir;
  std::string path = dir.File("x.bmap");
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC, 0644);
  auto w = BmapWriter::Create(fd, path, image.size(), o);
  EXPECT_TRUE(w.ok());
  ZeroScan scan(w->get(), image.size());
  Status s = test::FeedPieces(scan, image, holes, 4);
  EXPECT_TRUE(s.ok()) << s.ToString();
  ::close(fd);
  Made m;
  auto bytes = flashpipe::testing::ReadFile(path);
  m.text.assign(bytes.begin(), bytes.end());
  m.bmap = input::ParseBmap(m.text, "x.bmap");  // checks the file checksum and the counts
  return m;
}

TEST(BmapWriterTest, TheParserAcceptsItAndEveryRangeChecksumIsRight) {
  auto image = test::SampleImage(400, 31, 1234);  // a short last block
  Made m = MakeBmap(image, {}, {.map_read_zeros = false});
  ASSERT_TRUE(m.bmap.ok()) << m.bmap.status().ToString() << "\n" << m.text;
  const input::Bmap& b = *m.bmap;
  EXPECT_EQ(b.version, "2.0");
  EXPECT_EQ(b.checksum_type, "sha256");
  EXPECT_EQ(b.image_size, image.size());
  EXPECT_EQ(b.blocks_count, 400u);
  ASSERT_GT(b.ranges.size(), 3u);
  uint64_t mapped = 0;
  for (size_t i = 0; i < b.ranges.size(); ++i) {
    std::span<const uint8_t> bytes(image.data() + b.RangeBegin(b.ranges[i]), b.RangeEnd(b.ranges[i]) - b.RangeBegin(b.ranges[i]));
    EXPECT_EQ(b.ranges[i].checksum, Sha256(bytes)) << b.RangeLabel(i);
    mapped += b.ranges[i].last - b.ranges[i].first + 1;
  }
  // Mapped = the blocks that are not all zero.
  uint64_t nonzero = 0;
  for (size_t at = 0; at < image.size(); at += 4096) {
    size_t n = std::min<size_t>(4096, image.size() - at);
    nonzero += !std::all_of(image.begin() + at, image.begin() + at + n, [](uint8_t x) { return x == 0; });
  }
  EXPECT_EQ(mapped, nonzero);
}

TEST(BmapWriterTest, ReadZerosAreMappedAsAllocatedBlocksAndHolesNever) {
  std::vector<uint8_t> image(16 * 4096, 0);
  image[0] = 1;
  image[15 * 4096] = 2;
  Made all = MakeBmap(image, {{4 * 4096, 4 * 4096}}, {.map_read_zeros = true});
  ASSERT_TRUE(all.bmap.ok()) << all.bmap.status().ToString();
  ASSERT_EQ(all.bmap->ranges.size(), 2u);
  EXPECT_EQ(all.bmap->ranges[0].first, 0u);
  EXPECT_EQ(all.bmap->ranges[0].last, 3u);
  EXPECT_EQ(all.bmap->ranges[1].first, 8u);
  EXPECT_EQ(all.bmap->ranges[1].last, 15u);
  Made data = MakeBmap(image, {{4 * 4096, 4 * 4096}}, {.map_read_zeros = false});
  ASSERT_TRUE(data.bmap.ok());
  ASSERT_EQ(data.bmap->ranges.size(), 2u);
  EXPECT_EQ(data.bmap->ranges[0].last, 0u);
  EXPECT_EQ(data.bmap->ranges[1].first, 15u);
  EXPECT_EQ(data.bmap->mapped_blocks, 2u);
}

TEST(BmapWriterTest, AnAllZeroImageHasAnEmptyMap) {
  std::vector<uint8_t> image(8 * 4096, 0);
  Made m = MakeBmap(image, {}, {.map_read_zeros = false});
  ASSERT_TRUE(m.bmap.ok()) << m.bmap.status().ToString();
  EXPECT_TRUE(m.bmap->ranges.empty());
  EXPECT_EQ(m.bmap->mapped_blocks, 0u);
}

}  // namespace
}  // namespace flashpipe::output
