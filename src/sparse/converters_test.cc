// Tests of resparse, simg2img (ExpandToPath), append2simg and DecodeFd.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "base/unique_fd.h"
#include "sparse/append.h"
#include "sparse/decode_fd.h"
#include "sparse/expand.h"
#include "sparse/resparse.h"
#include "sparse/part_files.h"
#include "testing/sparse_builder.h"
#include "testing/temp_dir.h"

namespace flashpipe::sparse {
namespace {

using testing::ReadFile;
using testing::SparseBuilder;
using testing::TempDir;
using testing::WriteFile;
namespace fs = std::filesystem;

TEST(ResparsePlanTest, SplitsRawToFillPartsAndKeepsLimits) {
  // 40 RAW blocks of 4096 at a 50,000-byte limit: libsparse makes 4 parts.
  std::vector<Extent> ext{{kChunkRaw, 0, 40, 0, 40}};
  auto plan = PlanResparse(4096, 40, ext, 50000);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_EQ(plan->size(), 4u);
  uint64_t blocks = 0;
  for (const PartPlan& p : *plan) {
    EXPECT_LE(p.bytes, 50000u);
    for (const Extent& e : p.extents) {
      EXPECT_EQ(e.block, blocks);
      EXPECT_EQ(e.input_offset, 40 + e.block * 4096);
      blocks += e.blocks;
    }
  }
  EXPECT_EQ(blocks, 40u);
  EXPECT_EQ((*plan)[0].extents[0].blocks, 12u);  // (50000 - 28 - 24) / 4096
}

TEST(ResparsePlanTest, MovesRawToNextPartWhenLittleRoomLeft) {
  // Part 0 holds 10 blocks and has < 1/8 left: the next RAW starts part 1 whole.
  std::vector<Extent> ext{{kChunkRaw, 0, 10, 0, 0}, {kChunkRaw, 20, 5, 0, 0}};
  uint64_t max = 28 + 12 + 10 * 4096 + 12 + 12 + 4096 + 100;  // room for 1 more block, < 1/8
  auto plan = PlanResparse(4096, 30, ext, max);
  ASSERT_TRUE(plan.ok());
  ASSERT_EQ(plan->size(), 2u);
  EXPECT_EQ((*plan)[0].extents.size(), 1u);
  EXPECT_EQ((*plan)[1].extents[0].blocks, 5u);
  EXPECT_EQ((*plan)[1].chunks, 3u);  // DONT_CARE 20, RAW 5, DONT_CARE 5
}

TEST(ResparsePlanTest, TooSmallLimitIsAnError) {
  std::vector<Extent> ext{{kChunkRaw, 0, 1, 0, 0}};
  EXPECT_EQ(PlanResparse(4096, 1, ext, 1000).status().message(),
            "max size 1000 cannot hold one 4096-byte block with its headers (needs 4148)");
}

TEST(ResparsePlanTest, EmptyImageGivesOnePart) {
  auto plan = PlanResparse(4096, 8, {}, 1000);
  ASSERT_TRUE(plan.ok());
  ASSERT_EQ(plan->size(), 1u);
  EXPECT_EQ((*plan)[0].chunks, 1u);
  EXPECT_EQ((*plan)[0].bytes, 40u);
}

TEST(ResparseTest, PartsOverlaidRebuildTheImage) {
  TempDir dir;
  std::mt19937 rng(3);
  for (int round = 0; round < 20; ++round) {
    SparseBuilder b(1024);
    for (int i = 0; i < 12; ++i) {
      switch (rng() % 3) {
        case 0: b.RawBlocks(1 + rng() % 30, rng()); break;
        case 1: b.Fill(1 + rng() % 30, rng()); break;
        case 2: b.DontCare(1 + rng() % 30); break;
      }
    }
    WriteFile(dir / "in.simg", b.Build());
    uint64_t max = 28 + 36 + 1024 + rng() % 20000;
    auto r = ResparseToFiles(dir / "in.simg", dir / "p", max);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    std::vector<std::string> parts;
    for (size_t i = 0; i < r->parts; ++i) parts.push_back(PartPath(dir / "p", i));
    for (const auto& p : parts) EXPECT_LE(fs::file_size(p), max) << "round " << round;
    Status s = ExpandToPath(parts, dir / "out.img", {});
    ASSERT_TRUE(s.ok()) << s.ToString();
    EXPECT_EQ(ReadFile(dir / "out.img"), b.expanded()) << "round " << round << ", " << parts.size() << " parts";
  }
}

TEST(ExpandTest, OverlayLaterPartsWinAndSkipsKeepEarlierData) {
  TempDir dir;
  SparseBuilder a(4096), b(4096);
  a.RawBlocks(4, 1);
  b.DontCare(1).Fill(1, 0).Fill(1, 0x01020304).DontCare(1);
  WriteFile(dir / "a", a.Build());
  WriteFile(dir / "b", b.Build());
  ASSERT_TRUE(ExpandToPath(std::vector<std::string>{dir / "a", dir / "b"}, dir / "out", {}).ok());
  std::vector<uint8_t> want = a.expanded();
  std::fill(want.begin() + 4096, want.begin() + 8192, 0);
  std::copy(b.expanded().begin() + 8192, b.expanded().begin() + 12288, want.begin() + 8192);
  EXPECT_EQ(ReadFile(dir / "out"), want);
}

TEST(ExpandTest, DontCareLeavesHoles) {
  TempDir dir;
  SparseBuilder b(4096);
  b.RawBlocks(1, 1).DontCare(2048).RawBlocks(1, 2);
  WriteFile(dir / "in", b.Build());
  ASSERT_TRUE(ExpandToPath(std::vector<std::string>{dir / "in"}, dir / "out", {}).ok());
  struct stat st;
  ASSERT_EQ(::stat((dir / "out").c_str(), &st), 0);
  EXPECT_EQ(static_cast<uint64_t>(st.st_size), 2050u * 4096);
  EXPECT_LT(static_cast<uint64_t>(st.st_blocks) * 512, 1u << 20);  // 8 MiB apparent, little allocated
  EXPECT_EQ(ReadFile(dir / "out"), b.expanded());
}

TEST(ExpandTest, FailureKeepsOldOutputAndLeavesNoTemp) {
  TempDir dir;
  auto bad = SparseBuilder().RawBlocks(2, 1).Build();
  bad.resize(bad.size() - 10);
  WriteFile(dir / "bad", bad);
  WriteFile(dir / "out", {'o', 'l', 'd'});
  Status s = ExpandToPath(std::vector<std::string>{dir / "bad"}, dir / "out", {});
  EXPECT_EQ(s.message(), (dir / "bad") + ": chunk 0 at input byte 0x1c: truncated RAW payload (8182 of 8192 "
                                         "bytes) at input byte 0x201e");
  EXPECT_EQ(ReadFile(dir / "out"), (std::vector<uint8_t>{'o', 'l', 'd'}));
  EXPECT_EQ(std::distance(fs::directory_iterator(dir.path()), fs::directory_iterator()), 2);
}

TEST(AppendTest, AppendsRawBlocksAndKeepsLargerHeaders) {
  TempDir dir;
  SparseBuilder b(1024);
  b.header().chunk_hdr_sz = 16;
  b.RawBlocks(2, 1).Fill(3, 9).Crc();
  WriteFile(dir / "s", b.Build());
  auto tail = SparseBuilder::RandomBytes(4 * 1024, 5);
  WriteFile(dir / "t", tail);
  Status s = AppendToSparse(dir / "s", dir / "t");
  ASSERT_TRUE(s.ok()) << s.ToString();
  ASSERT_TRUE(ExpandToPath(std::vector<std::string>{dir / "s"}, dir / "out", {}).ok());
  auto want = b.expanded();
  want.insert(want.end(), tail.begin(), tail.end());
  EXPECT_EQ(ReadFile(dir / "out"), want);
}

TEST(AppendTest, UnalignedRawRefusedAndImageUntouched) {
  TempDir dir;
  auto img = SparseBuilder(1024).RawBlocks(1, 1).Build();
  WriteFile(dir / "s", img);
  WriteFile(dir / "t", std::vector<uint8_t>(1000));
  EXPECT_EQ(AppendToSparse(dir / "s", dir / "t").message(),
            (dir / "t") + ": size 1000 is not a multiple of the image's block size 1024");
  EXPECT_EQ(ReadFile(dir / "s"), img);
}

// As AOSP append2simg: a raw existing image becomes sparse (4096-byte
// blocks) with the appended blocks after it.
TEST(AppendTest, RawExistingImageBecomesSparse) {
  TempDir dir;
  auto old = SparseBuilder::RandomBytes(3 * 4096, 7), tail = SparseBuilder::RandomBytes(2 * 4096, 8);
  WriteFile(dir / "s", old);
  WriteFile(dir / "t", tail);
  Status s = AppendToSparse(dir / "s", dir / "t");
  ASSERT_TRUE(s.ok()) << s.ToString();
  auto img = ReadFile(dir / "s");
  ASSERT_TRUE(HasSparseMagic(img));
  ASSERT_TRUE(ExpandToPath(std::vector<std::string>{dir / "s"}, dir / "out", {}).ok());
  auto want = old;
  want.insert(want.end(), tail.begin(), tail.end());
  EXPECT_EQ(ReadFile(dir / "out"), want);
}

TEST(AppendTest, RawExistingImageOfOddSizeRefusedAndUntouched) {
  TempDir dir;
  auto old = SparseBuilder::RandomBytes(5000, 7);
  WriteFile(dir / "s", old);
  WriteFile(dir / "t", std::vector<uint8_t>(4096));
  EXPECT_EQ(AppendToSparse(dir / "s", dir / "t").message(),
            (dir / "s") + " is not a sparse image, and as a raw image its size 5000 is not a multiple of the "
                          "block size 4096");
  EXPECT_EQ(ReadFile(dir / "s"), old);
}

TEST(DecodeFdTest, PipeAndFileGiveTheSameImage) {
  struct Collect : Sink {
    std::vector<uint8_t> img;
    Status OnHeader(const FileHeader& h) override { img.assign(h.image_size(), 0); return Status::Ok(); }
    Status OnRaw(uint64_t o, std::span<const uint8_t> d) override {
      std::copy(d.begin(), d.end(), img.begin() + o);
      return Status::Ok();
    }
    Status OnFill(uint64_t, uint64_t, uint32_t) override { return Status::Ok(); }
    Status OnSkip(uint64_t, uint64_t) override { return Status::Ok(); }
  };
  SparseBuilder b(4096);
  b.RawBlocks(1500, 4).DontCare(3).RawBlocks(7, 5).Crc();  // > 4 MiB: several reads
  auto simg = b.Build();
  int p[2];
  ASSERT_EQ(::pipe(p), 0);
  std::thread writer([&] {
    for (size_t off = 0; off < simg.size();) off += ::write(p[1], simg.data() + off, std::min<size_t>(65536, simg.size() - off));
    ::close(p[1]);
  });
  Collect from_pipe;
  Status s = DecodeFd(p[0], from_pipe, {}, "pipe");
  writer.join();
  ::close(p[0]);
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(from_pipe.img, b.expanded());
}

TEST(DecodeFdTest, ReadErrorNamesTheInput) {
  struct Nop : Sink {
    Status OnRaw(uint64_t, std::span<const uint8_t>) override { return Status::Ok(); }
    Status OnFill(uint64_t, uint64_t, uint32_t) override { return Status::Ok(); }
    Status OnSkip(uint64_t, uint64_t) override { return Status::Ok(); }
  } sink;
  UniqueFd dir(::open("/tmp", O_RDONLY | O_DIRECTORY));
  Status s = DecodeFd(dir.get(), sink, {}, "/tmp");
  EXPECT_EQ(s.code(), Code::kIoError);
  EXPECT_EQ(s.ToString(), "read /tmp at byte 0x0: Is a directory");
}

}  // namespace
}  // namespace flashpipe::sparse
