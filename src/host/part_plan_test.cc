// Images of every form cut into parts for many max-download-sizes: each part
// within the limit, exactly as long as planned, strictly valid as a sparse
// image, and the parts laid over a disk in order give the image (DONT_CARE
// left alone, a raw image's padding only where the AOSP client pads too).
#include "host/part_plan.h"

#include <gtest/gtest.h>

#include <random>

#include "host/image_pass.h"
#include "host/part_writer.h"
#include "testing/compress.h"
#include "testing/host_images.h"
#include "testing/sparse_builder.h"
#include "testing/temp_dir.h"

namespace flashpipe::host {
namespace {

using testing::MemoryImage;

constexpr uint8_t kUntouched = 0xDC;

// A raw image of `size` bytes: random blocks, zero runs, a fill run, in
// 4 KiB steps (the last one short when size is odd).
std::vector<uint8_t> MixedImage(size_t size, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> img(size);
  for (size_t at = 0; at < size; at += 4096) {
    size_t n = std::min<size_t>(4096, size - at);
    switch ((at / 4096 / 3 + seed) % 4) {
      case 0:
      case 1: for (size_t i = 0; i < n; ++i) img[at + i] = static_cast<uint8_t>(rng()); break;
      case 2: break;  // zeros
      case 3: for (size_t i = 0; i < n; ++i) img[at + i] = "ABCD"[i % 4]; break;
    }
  }
  return img;
}

struct Flashed {
  std::vector<uint8_t> disk;
  std::vector<Part> parts;
};

// Plans and writes every part for `limit`, laying each over a disk of
// kUntouched bytes.
Flashed FlashAll(MemoryImage& img, uint64_t limit, size_t disk_size) {
  Flashed f;
  f.disk.assign(disk_size, kUntouched);
  Position from;
  for (bool first = true;; first = false) {
    auto part = PlanPart(img, img.shape(), from, first, {.max_bytes = limit});
    EXPECT_TRUE(part.ok()) << part.status().ToString();
    if (!part.ok() || !*part) break;
    EXPECT_LE((*part)->bytes, limit);
    testing::BytesOut out;
    Status st = WritePart(**part, img.shape(), img, img, out);
    EXPECT_TRUE(st.ok()) << st.ToString();
    EXPECT_EQ(out.bytes.size(), (*part)->bytes);
    Status o = testing::Overlay(&f.disk, out.bytes);
    EXPECT_TRUE(o.ok()) << "part " << f.parts.size() << ": " << o.ToString();
    f.parts.push_back(**part);
    from = (*part)->end;
    if (f.parts.size() > 100000) break;
  }
  return f;
}

MemoryImage Pass(const ImageSpec& spec) {
  MemoryImage img;
  Status st = RunImagePass(spec, true, &img);
  EXPECT_TRUE(st.ok()) << st.ToString();
  return img;
}

const uint64_t kLimits[] = {3 * 4096 + 100, 64 << 10, 1 << 20, (1 << 20) + 7, 3 << 20, 256 << 20};

TEST(PartPlanTest, RawImagesOfAnySizeForManyLimits) {
  testing::TempDir dir;
  for (size_t size : {size_t{300} * 4096, size_t{300} * 4096 + 1234, size_t{5} * 1048576 + 1234, size_t{1000}}) {
    SCOPED_TRACE(size);
    auto bytes = MixedImage(size, static_cast<uint32_t>(size));
    testing::WriteFile(dir / "raw.img", bytes);
    auto plan = PlanImage({dir / "raw.img"});
    ASSERT_TRUE(plan.ok() && *plan) << plan.status().ToString();
    MemoryImage img = Pass({dir / "raw.img"});
    EXPECT_EQ((*plan)->records, img.records()) << "planning and sending passes differ";
    EXPECT_EQ((*plan)->payload_bytes, img.payload().size());
    size_t padded = (size + 4095) / 4096 * 4096;
    for (uint64_t limit : kLimits) {
      SCOPED_TRACE(limit);
      Flashed f = FlashAll(img, limit, padded + 4096);
      ASSERT_FALSE(f.parts.empty());
      EXPECT_TRUE(std::equal(bytes.begin(), bytes.end(), f.disk.begin())) << "content differs";
      bool one_raw = size % 4096 != 0 && size <= limit;
      EXPECT_EQ(f.parts.front().raw, one_raw);
      // Sent raw: nothing past the image; sent sparse: its last block padded with zeros.
      for (size_t i = size; i < padded; ++i) ASSERT_EQ(f.disk[i], one_raw ? kUntouched : 0) << i;
      EXPECT_EQ(f.disk[padded], kUntouched);
    }
  }
}

// The `fastboot` verb, as the AOSP client: a raw image that fits one
// download goes as it is, zero and fill blocks spelled out; one that does
// not fit is cut into sparse parts as before.
TEST(PartPlanTest, RawWhenFitsSendsTheImageAsItIs) {
  testing::TempDir dir;
  auto bytes = MixedImage(size_t{64} * 4096, 3);  // zero and fill runs
  testing::WriteFile(dir / "raw.img", bytes);
  MemoryImage img = Pass({dir / "raw.img"});
  PartLimits fits{.max_bytes = 1 << 20, .raw_when_fits = true};
  auto part = PlanPart(img, img.shape(), {}, true, fits);
  ASSERT_TRUE(part.ok() && *part) << part.status().ToString();
  EXPECT_TRUE((*part)->raw);
  EXPECT_EQ((*part)->bytes, bytes.size());
  testing::BytesOut out;
  ASSERT_TRUE(WritePart(**part, img.shape(), img, img, out).ok());
  EXPECT_EQ(out.bytes, bytes);
  // Without it, or when it does not fit: sparse, zero blocks not sent.
  auto sparse = PlanPart(img, img.shape(), {}, true, {.max_bytes = 1 << 20});
  ASSERT_TRUE(sparse.ok() && *sparse);
  EXPECT_FALSE((*sparse)->raw);
  EXPECT_LT((*sparse)->bytes, bytes.size());
  auto cut = PlanPart(img, img.shape(), {}, true, {.max_bytes = 64 << 10, .raw_when_fits = true});
  ASSERT_TRUE(cut.ok() && *cut);
  EXPECT_FALSE((*cut)->raw);
}

TEST(PartPlanTest, PartsAreFilledToTheLimit) {
  testing::TempDir dir;
  std::vector<uint8_t> bytes(16 << 20);
  std::mt19937 rng(7);
  for (auto& b : bytes) b = static_cast<uint8_t>(rng());
  testing::WriteFile(dir / "r.img", bytes);
  MemoryImage img = Pass({dir / "r.img"});
  for (uint64_t limit : {uint64_t{1} << 20, uint64_t{3} << 20}) {
    Flashed f = FlashAll(img, limit, bytes.size());
    // All but the last part leave less than a block unused.
    for (size_t i = 0; i + 1 < f.parts.size(); ++i) EXPECT_GT(f.parts[i].bytes + 4096, limit) << i;
    EXPECT_LE(f.parts.size(), (bytes.size() + limit - 8192 - 1) / (limit - 8192)) << limit;
    EXPECT_EQ(f.disk, bytes);
  }
}

TEST(PartPlanTest, ZeroAndUniformBlocksAreNotPayload) {
  testing::TempDir dir;
  std::vector<uint8_t> bytes(64 * 4096, 0);
  for (size_t i = 0; i < 4096; ++i) bytes[10 * 4096 + i] = static_cast<uint8_t>(i * 7 + 1);
  for (size_t i = 0; i < 4096 * 3; ++i) bytes[20 * 4096 + i] = "wxyz"[i % 4];
  testing::WriteFile(dir / "z.img", bytes);
  MemoryImage img = Pass({dir / "z.img"});
  EXPECT_EQ(img.payload().size(), 4096u);
  ASSERT_EQ(img.records().size(), 5u);
  EXPECT_EQ(img.records()[0], (Record{sparse::kChunkFill, 0, 10, 0, 0}));
  EXPECT_EQ(img.records()[1], (Record{sparse::kChunkRaw, 10, 1, 0, 0}));
  EXPECT_EQ(img.records()[3].pattern, 0x7a797877u);
}

TEST(PartPlanTest, SparseImagesKeepTheirChunksAndDontCare) {
  testing::TempDir dir;
  testing::SparseBuilder b(4096);
  b.RawBlocks(300, 1).Fill(5, 0x11223344).DontCare(40).RawBlocks(3, 2).Fill(2, 0).DontCare(9).RawBlocks(1, 3).Crc()
      .DontCare(3);
  testing::WriteFile(dir / "s.simg", b.Build());
  auto plan = PlanImage({dir / "s.simg"});
  ASSERT_TRUE(plan.ok() && *plan);
  MemoryImage img = Pass({dir / "s.simg"});
  EXPECT_EQ((*plan)->records, img.records());
  EXPECT_EQ(img.shape().blocks, 363u);
  std::vector<bool> dont_care(363, false);
  for (int i = 305; i < 345; ++i) dont_care[i] = true;
  for (int i = 350; i < 359; ++i) dont_care[i] = true;
  for (int i = 360; i < 363; ++i) dont_care[i] = true;
  for (uint64_t limit : kLimits) {
    SCOPED_TRACE(limit);
    Flashed f = FlashAll(img, limit, 363 * 4096);
    for (size_t blk = 0; blk < 363; ++blk) {
      for (size_t i = blk * 4096; i < (blk + 1) * 4096; i += 512) {
        ASSERT_EQ(f.disk[i], dont_care[blk] ? kUntouched : b.expanded()[i]) << "byte " << i;
      }
    }
  }
}

TEST(PartPlanTest, BmapUnmappedRangesAreDontCare) {
  testing::TempDir dir;
  auto bytes = MixedImage(40 * 4096, 3);
  for (size_t i = 30 * 4096; i < 35 * 4096; ++i) bytes[i] = 0x5A;  // unmapped: never sent
  testing::WriteFile(dir / "b.img", bytes);
  std::string bmap = "<bmap version=\"1.2\"><ImageSize>163840</ImageSize><BlockSize>4096</BlockSize>"
                     "<BlocksCount>40</BlocksCount><MappedBlocksCount>33</MappedBlocksCount><BlockMap>"
                     "<Range>0-29</Range><Range>37-39</Range></BlockMap></bmap>";
  testing::WriteFile(dir / "b.bmap", {bmap.begin(), bmap.end()});
  auto plan = PlanImage({dir / "b.img", dir / "b.bmap"});
  ASSERT_TRUE(plan.ok() && *plan) << plan.status().ToString();
  EXPECT_TRUE((*plan)->shape.bmap);
  MemoryImage img = Pass({dir / "b.img", dir / "b.bmap"});
  EXPECT_EQ((*plan)->records, img.records());
  for (uint64_t limit : kLimits) {
    Flashed f = FlashAll(img, limit, 40 * 4096);
    for (size_t i = 0; i < bytes.size(); ++i) {
      bool mapped = i < 30 * 4096 || i >= 37 * 4096;
      ASSERT_EQ(f.disk[i], mapped ? bytes[i] : kUntouched) << i;
    }
  }
}

TEST(PartPlanTest, CompressedFilesArePlannedAheadAndStreamsAsTheyCome) {
  testing::TempDir dir;
  auto bytes = MixedImage(100 * 4096 + 17, 5);
  testing::WriteFile(dir / "c.img.xz", testing::Xz(bytes));
  // A file is planned from its decompressed bytes (so a truncated one fails
  // before any device is touched); its payload is never read from the file.
  auto plan = PlanImage({dir / "c.img.xz"});
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_NE(*plan, nullptr);
  EXPECT_EQ((*plan)->shape.bytes, bytes.size());
  EXPECT_TRUE((*plan)->payload_in_file.empty());
  auto cut = testing::Xz(bytes);
  cut.resize(cut.size() / 2);
  testing::WriteFile(dir / "cut.img.xz", cut);
  EXPECT_FALSE(PlanImage({dir / "cut.img.xz"}).ok());
  // The same bytes as a stream (planned as they are read):
  MemoryImage img = Pass({dir / "c.img.xz"});
  EXPECT_EQ(img.shape().bytes, bytes.size());  // from the xz index
  Flashed f = FlashAll(img, 64 << 10, 101 * 4096);
  EXPECT_TRUE(std::equal(bytes.begin(), bytes.end(), f.disk.begin()));
  // gzip records no size: parts end where their records end.
  testing::WriteFile(dir / "c.img.gz", testing::Gzip(bytes));
  MemoryImage gz = Pass({dir / "c.img.gz"});
  EXPECT_EQ(gz.shape().blocks, 0u);
  Flashed g = FlashAll(gz, 64 << 10, 101 * 4096);
  EXPECT_TRUE(std::equal(bytes.begin(), bytes.end(), g.disk.begin()));
  EXPECT_EQ(g.parts.back().total_blks, 101u);
}

TEST(PartPlanTest, ALimitTooSmallForOneBlockIsAnError) {
  testing::TempDir dir;
  testing::WriteFile(dir / "r.img", MixedImage(8 * 4096, 1));
  MemoryImage img = Pass({dir / "r.img"});
  auto part = PlanPart(img, img.shape(), {}, true, {.max_bytes = 4096});
  EXPECT_EQ(part.status().message(), "max-download-size 4096 (4.0 KiB) cannot hold one 4096-byte block with its headers");
}

}  // namespace
}  // namespace flashpipe::host
