// Verify must fail, naming the byte, whenever the output does not decode to
// the source: a flipped byte in a raw file, in a sparse RAW payload, in a
// compressed stream's content, and data where the output says "don't care".
#include "output/verify.h"

#include <sys/stat.h>

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include "output/output_test_util.h"
#include "output/read_job.h"
#include "output/read_source.h"
#include "sparse/decoder.h"
#include "testing/temp_dir.h"

namespace flashpipe::output {
namespace {

using flashpipe::testing::TempDir;

class VerifyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    content_ = test::SampleImage(600, 23);
    src_ = dir_.File("src.img");
    flashpipe::testing::WriteFile(src_, content_);
  }
  // Reads the source into `name` (no verify), then verifies it against the
  // source as it is now.
  Status MakeThenVerify(const std::string& name, ReadRequest r, const std::function<void(const std::string&)>& change) {
    r.source.spec = src_;
    r.output = dir_.File(name);
    ReadReport made = RunRead(r, nullptr, nullptr);
    if (!made.status.ok()) return made.status;
    change(r.output);
    FP_ASSIGN_OR_RETURN(ReadSource s, OpenSource({.spec = src_}));
    FP_ASSIGN_OR_RETURN(auto q, s.target->MakeQueue(io::Backend::kAuto, 4));
    FP_ASSIGN_OR_RETURN(auto reader, io::ImageReader::Create(*s.target, q.get(), 0, s.length, {}));
    UniqueFd fd(::open(r.output.c_str(), O_RDONLY));
    VerifyTarget t{.format = FormatOf(r), .fds = {fd.get()}, .names = {r.output}, .length = s.length};
    return VerifyOutput(*reader, src_, t);
  }
  static Format FormatOf(const ReadRequest& r) { return r.format.value_or(FormatForPath(r.output)); }
  static void Flip(const std::string& path, uint64_t at) {
    int fd = ::open(path.c_str(), O_RDWR);
    uint8_t b = 0;
    ASSERT_EQ(::pread(fd, &b, 1, at), 1);
    b ^= 0x40;
    ASSERT_EQ(::pwrite(fd, &b, 1, at), 1);
    ::close(fd);
  }
  // The offset of a byte that is inside a data (random) block.
  uint64_t DataByte() const {
    for (uint64_t b = 0; b < content_.size(); b += 4096) {
      if (content_[b + 100] != content_[b + 104] && content_[b + 100] != 0) return b + 100;
    }
    return 0;
  }
  TempDir dir_;
  std::string src_;
  std::vector<uint8_t> content_;
};

TEST_F(VerifyTest, AnUntouchedOutputPasses) {
  for (const char* name : {"a.img", "a.simg", "a.zst"}) {
    Status s = MakeThenVerify(name, {}, [](const std::string&) {});
    EXPECT_TRUE(s.ok()) << name << ": " << s.ToString();
  }
}

TEST_F(VerifyTest, AFlippedByteInARawOutputIsNamed) {
  uint64_t at = DataByte();
  Status s = MakeThenVerify("a.img", {}, [&](const std::string& out) { Flip(out, at); });
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), Code::kMismatch);
  EXPECT_NE(s.message().find(fmt::format("at byte 0x{:x} of the range read", at)), std::string::npos) << s.ToString();
}

// The input offset of the first RAW chunk's payload, and its image offset.
std::pair<uint64_t, uint64_t> FirstRawPayload(const std::string& path) {
  struct Finder : sparse::NullSink {
    Status OnChunk(const sparse::ChunkInfo& c) override {
      if (c.type == sparse::kChunkRaw && !found) {
        found = true;
        at = {c.payload_offset, c.output_offset};
      }
      return Status::Ok();
    }
    bool found = false;
    std::pair<uint64_t, uint64_t> at;
  } f;
  sparse::Decoder d(&f);
  EXPECT_TRUE(d.Feed(flashpipe::testing::ReadFile(path)).ok());
  return f.at;
}

TEST_F(VerifyTest, AFlippedByteInASparsePayloadIsNamed) {
  uint64_t image_at = 0;
  Status s = MakeThenVerify("a.simg", {}, [&](const std::string& out) {
    auto [payload, image] = FirstRawPayload(out);
    image_at = image + 100;
    Flip(out, payload + 100);
  });
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), Code::kMismatch);
  EXPECT_NE(s.message().find(fmt::format("differs from {} at byte 0x{:x}", src_, image_at)), std::string::npos)
      << s.ToString();
}

TEST_F(VerifyTest, ASourceThatChangedAfterACompressedReadIsFound) {
  uint64_t at = DataByte();
  Status s = MakeThenVerify("a.zst", {}, [&](const std::string&) { Flip(src_, at); });
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find(fmt::format("at byte 0x{:x}", at)), std::string::npos) << s.ToString();
}

TEST_F(VerifyTest, DataWhereTheOutputSaysDontCareIsFound) {
  uint64_t zero = 0;
  for (uint64_t b = 0; b < content_.size(); b += 4096) {
    if (std::all_of(content_.begin() + b, content_.begin() + b + 4096, [](uint8_t x) { return x == 0; })) {
      zero = b;
      break;
    }
  }
  ReadRequest r;
  r.sparse.dont_care_zeros = true;
  Status s = MakeThenVerify("a.simg", r, [&](const std::string&) { Flip(src_, zero + 7); });
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("the output leaves it out, the source holds data"), std::string::npos) << s.ToString();
  EXPECT_NE(s.message().find(fmt::format("0x{:x}", zero + 7)), std::string::npos) << s.ToString();
}

}  // namespace
}  // namespace flashpipe::output
