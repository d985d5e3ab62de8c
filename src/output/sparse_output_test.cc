#include "output/sparse_output.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include "output/output_test_util.h"
#include "sparse/decode_fd.h"
#include "sparse/decoder.h"
#include "testing/image_recorder.h"
#include "testing/temp_dir.h"

namespace flashpipe::output {
namespace {

// A decoded sparse image, with its chunks counted by type and fill value.
class ChunkCounter : public flashpipe::testing::ImageRecorder {
 public:
  using ImageRecorder::ImageRecorder;
  std::map<uint16_t, int> types;
  std::map<uint32_t, int> fill_values;
  uint32_t raw_blocks_max = 0;
  sparse::FileHeader header;
  Status OnHeader(const sparse::FileHeader& h) override {
    header = h;
    return ImageRecorder::OnHeader(h);
  }
  Status OnChunk(const sparse::ChunkInfo& c) override {
    ++types[c.type];
    if (c.type == sparse::kChunkFill) ++fill_values[c.value];
    if (c.type == sparse::kChunkRaw) raw_blocks_max = std::max(raw_blocks_max, c.blocks);
    return Status::Ok();
  }
};

Status Decode(const std::vector<uint8_t>& bytes, ChunkCounter* out) {
  sparse::Decoder d(out);
  FP_RETURN_IF_ERROR(d.Feed(bytes));
  return d.Finish();
}

// Runs an image through a ZeroScan into a SparseOutput writing to `out`.
Status Encode(const std::vector<uint8_t>& image, sparse::Output* out, SparseOutput::Mode mode,
              const SparseOptions& options, SparsePlan* plan, uint32_t seed = 1) {
  FP_ASSIGN_OR_RETURN(auto s, SparseOutput::Create(out, image.size(), mode, options, plan));
  ZeroScan scan(s.get(), image.size());
  return test::FeedPieces(scan, image, {}, seed);
}

std::vector<uint8_t> Padded(std::vector<uint8_t> v) {
  v.resize((v.size() + 4095) / 4096 * 4096, 0);
  return v;
}

TEST(SparseOutputTest, ASeekableOutputHoldsTheImageWithFillsForUniformBlocks) {
  flashpipe::testing::TempDir dir;
  auto image = test::SampleImage(500, 4, 100);
  int fd = ::open(dir.File("o.simg").c_str(), O_RDWR | O_CREAT | O_TRUNC, 0644);
  ASSERT_GE(fd, 0);
  sparse::FdOutput out(fd, "o.simg");
  ASSERT_TRUE(Encode(image, &out, SparseOutput::Mode::kPatch, {}, nullptr).ok());
  ::close(fd);
  ChunkCounter c;
  Status s = Decode(flashpipe::testing::ReadFile(dir.File("o.simg")), &c);
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(c.image, Padded(image));
  EXPECT_EQ(c.header.total_blks, 500u);
  EXPECT_GT(c.fill_values[0], 0) << "zero runs are FILL 0 by default";
  EXPECT_GT(c.types[sparse::kChunkFill], c.fill_values[0]) << "uniform non-zero blocks become FILL";
  EXPECT_EQ(c.types[sparse::kChunkDontCare], 0);
}

TEST(SparseOutputTest, DontCareZerosLeavesNoZeroFill) {
  auto image = test::SampleImage(200, 8);
  std::vector<uint8_t> bytes;
  SparsePlan plan;  // the pipe's way: a counting pass, then the writing pass
  SparseOptions o{.dont_care_zeros = true};
  ASSERT_TRUE(Encode(image, nullptr, SparseOutput::Mode::kPlan, o, &plan).ok());
  sparse::CallbackOutput out([&](std::span<const uint8_t> b) {
    bytes.insert(bytes.end(), b.begin(), b.end());
    return Status::Ok();
  });
  ASSERT_TRUE(Encode(image, &out, SparseOutput::Mode::kFromPlan, o, &plan, 2).ok());
  ChunkCounter c(/*mark_skips=*/true);
  ASSERT_TRUE(Decode(bytes, &c).ok());
  EXPECT_EQ(c.fill_values[0], 0);
  EXPECT_GT(c.types[sparse::kChunkDontCare], 0);
  auto expect = image;
  for (size_t b = 0; b < expect.size(); b += 4096) {
    bool zero = std::all_of(expect.begin() + b, expect.begin() + b + 4096, [](uint8_t x) { return x == 0; });
    if (zero) std::fill_n(expect.begin() + b, 4096, 0xDC);  // DONT_CARE as the recorder marks it
  }
  EXPECT_EQ(c.image, expect);
}

TEST(SparseOutputTest, TwoPassOutputIsByteIdenticalToThePatchedOne) {
  flashpipe::testing::TempDir dir;
  auto image = test::SampleImage(700, 12, 4000);
  int fd = ::open(dir.File("p.simg").c_str(), O_RDWR | O_CREAT | O_TRUNC, 0644);
  sparse::FdOutput patched(fd, "p.simg");
  SparseOptions o{.max_raw_chunk = 16 * 4096};  // several RAW chunks per run
  ASSERT_TRUE(Encode(image, &patched, SparseOutput::Mode::kPatch, o, nullptr).ok());
  ::close(fd);
  SparsePlan plan;
  ASSERT_TRUE(Encode(image, nullptr, SparseOutput::Mode::kPlan, o, &plan, 7).ok());
  std::vector<uint8_t> piped;
  sparse::CallbackOutput out([&](std::span<const uint8_t> b) {
    piped.insert(piped.end(), b.begin(), b.end());
    return Status::Ok();
  });
  ASSERT_TRUE(Encode(image, &out, SparseOutput::Mode::kFromPlan, o, &plan, 9).ok());
  EXPECT_EQ(piped, flashpipe::testing::ReadFile(dir.File("p.simg")));
  ChunkCounter c;
  ASSERT_TRUE(Decode(piped, &c).ok());
  EXPECT_LE(c.raw_blocks_max, 16u);
}

TEST(SparseOutputTest, ASourceThatReadsDifferentlyTheSecondTimeIsAnError) {
  auto image = test::SampleImage(100, 3);
  SparsePlan plan;
  ASSERT_TRUE(Encode(image, nullptr, SparseOutput::Mode::kPlan, {}, &plan).ok());
  auto changed = image;
  std::fill(changed.begin(), changed.begin() + 40960, 0x5A);  // a data run turned uniform
  changed[40960 * 2] ^= 0xFF;
  sparse::CallbackOutput out([](std::span<const uint8_t>) { return Status::Ok(); });
  Status s = Encode(changed, &out, SparseOutput::Mode::kFromPlan, {}, &plan);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("read differently the second time"), std::string::npos) << s.ToString();
}

TEST(SparseOutputTest, MoreThanTwoTo32BlocksIsRefused) {
  auto s = SparseOutput::Create(nullptr, (uint64_t{1} << 32) * 4096, SparseOutput::Mode::kPlan, {}, nullptr);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("more than a sparse image holds"), std::string::npos);
}

}  // namespace
}  // namespace flashpipe::output
