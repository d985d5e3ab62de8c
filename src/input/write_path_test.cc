// The input layer driving the real engine (ImageWriter on a temp file through
// a FaultQueue): corruption after the write caught by --verify, device errors
// and source failures stopping the write with an offset.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <random>

#include "input/image_source.h"
#include "input/write_job.h"
#include "testing/compress.h"
#include "testing/fault_queue.h"
#include "testing/sparse_builder.h"
#include "testing/temp_dir.h"

namespace flashpipe::input {
namespace {

using testing::Gzip;
using testing::ReadFile;

class WritePathTest : public ::testing::Test {
 protected:
  std::string Write(const std::string& name, std::span<const uint8_t> bytes) {
    std::string path = dir_ / name;
    testing::WriteFile(path, {bytes.begin(), bytes.end()});
    return path;
  }
  // Runs `image` through the engine onto target.img via a FaultQueue that
  // `setup` may arm.
  Status WriteThroughFaults(const std::string& image, uint64_t size, io::WriterOptions wo,
                            const std::function<void(testing::FaultQueue&, int fd)>& setup) {
    target_ = dir_.path() + "/target.img";
    FP_ASSIGN_OR_RETURN(auto source, OpenImage(image, {}));
    FP_ASSIGN_OR_RETURN(auto target, io::Target::Open(target_, {.create = true, .truncate_to = size}));
    FP_ASSIGN_OR_RETURN(auto inner, target->MakeQueue(io::Backend::kSync, 4));
    testing::FaultQueue fq(inner.get());
    setup(fq, target->fd());
    FP_ASSIGN_OR_RETURN(auto writer, io::ImageWriter::Create({io::DeviceFor(*target, &fq)}, wo));
    WriterSink sink(writer.get(), 0);
    Status s = source->Run(&sink);
    if (s.ok()) s = writer->Finish();
    max_end_ = fq.max_end_written();
    return s;
  }
  testing::TempDir dir_;
  std::string target_;
  uint64_t max_end_ = 0;
};

testing::SparseBuilder Image() {
  testing::SparseBuilder b(4096);
  b.RawBlocks(300, 1).Fill(100, 0).RawBlocks(200, 2).DontCare(10).Fill(30, 0x01020304).RawBlocks(5, 3);
  return b;
}

TEST_F(WritePathTest, VerifyCatchesACorruptionMadeAfterTheWrite) {
  auto b = Image();
  std::string img = Write("a.simg", b.Build());
  io::WriterOptions wo;
  wo.verify = true;
  const uint64_t bad = 400 * 4096 + 77;  // inside the second RAW chunk
  // The writer's fd may be O_DIRECT: corrupt through a second, buffered one,
  // after all writes and before the writer's own sync and read-back.
  std::string path = dir_.path() + "/target.img";
  Status s2 = WriteThroughFaults(img, b.expanded().size(), wo, [&](testing::FaultQueue& q, int) {
    q.BeforeSync([path, bad] {
      int fd = open(path.c_str(), O_WRONLY);
      uint8_t x = 0x5A;
      ASSERT_EQ(pwrite(fd, &x, 1, bad), 1);
      fsync(fd);
      close(fd);
    });
  });
  ASSERT_FALSE(s2.ok()) << "verify missed a corrupted byte";
  EXPECT_EQ(s2.code(), Code::kMismatch) << s2.ToString();
  EXPECT_NE(s2.message().find(fmt::format("image offset {:#x}", bad / 4096 * 4096)), std::string::npos) << s2.ToString();
  EXPECT_EQ(ReadFile(target_)[bad], 0x5A);
}

TEST_F(WritePathTest, VerifyPassesOnAGoodWrite) {
  auto b = Image();
  std::string img = Write("a.simg", b.Build());
  io::WriterOptions wo;
  wo.verify = true;
  Status s = WriteThroughFaults(img, b.expanded().size(), wo, [](testing::FaultQueue&, int) {});
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(ReadFile(target_), b.expanded());
}

TEST_F(WritePathTest, NoSpaceMidWayStopsWithTheOffset) {
  auto b = Image();
  std::string img = Write("a.simg", b.Build());
  Status s = WriteThroughFaults(img, b.expanded().size(), {}, [](testing::FaultQueue& q, int) {
    q.FailWrites(1 << 20, ENOSPC);
  });
  ASSERT_EQ(s.code(), Code::kNoSpace) << s.ToString();
  EXPECT_NE(s.ToString().find("0x"), std::string::npos) << s.ToString();
}

TEST_F(WritePathTest, TruncatedCompressedSourceWithFirstBlockLastNeverWritesBlockZero) {
  auto b = Image();
  auto gz = Gzip(b.Build());
  gz.resize(gz.size() * 3 / 4);
  std::string img = Write("a.simg.gz", gz);
  io::WriterOptions wo;
  wo.first_block_last = true;
  uint64_t min_offset = UINT64_MAX;
  Status s = WriteThroughFaults(img, b.expanded().size(), wo, [&](testing::FaultQueue& q, int) {
    q.OnSubmit([&](const io::IoOp& op) {
      if (op.kind == io::OpKind::kWrite) min_offset = std::min(min_offset, op.offset);
    });
  });
  ASSERT_EQ(s.code(), Code::kCorrupt) << s.ToString();
  EXPECT_NE(s.message().find("truncated"), std::string::npos) << s.ToString();
  EXPECT_GE(min_offset, uint64_t{1} << 20) << "the first MiB was written although the write failed";
  EXPECT_LE(max_end_, b.expanded().size());
}

}  // namespace
}  // namespace flashpipe::input
