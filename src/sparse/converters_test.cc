// Tests of resparse, simg2img (ExpandToPath), append2simg and DecodeFd.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <functional>
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

// Runs `body` in a child process whose files may not grow past `limit`
// bytes (a stand-in for a full disk that needs no filesystem of our own:
// writes past it fail with EFBIG) and returns its exit status.
int InChildWithFileSizeLimit(uint64_t limit, const std::function<bool()>& body) {
  pid_t pid = ::fork();
  if (pid == 0) {
    ::signal(SIGXFSZ, SIG_IGN);
    rlimit lim{limit, limit};
    ::setrlimit(RLIMIT_FSIZE, &lim);
    ::_exit(body() ? 0 : 1);
  }
  int status = -1;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// The writer thread fails part way while the decoder goes on: the error
// comes back, the old output stays, no temp is left.
TEST(ExpandTest, AWriteFailureWhileDecodingLeavesTheOldOutputAndNoTemp) {
  TempDir dir;
  SparseBuilder b(4096);
  b.RawBlocks(1024, 1).Fill(256, 0x12345678).RawBlocks(1024, 2);  // 9 MiB expanded
  WriteFile(dir / "in", b.Build());
  WriteFile(dir / "out", {'o', 'l', 'd'});
  std::string message;
  int rc = InChildWithFileSizeLimit(2 << 20, [&] {
    Status s = ExpandToPath(std::vector<std::string>{dir / "in"}, dir / "out", {});
    return s.message().find(" at byte 0x200000") != std::string::npos && s.ToString().ends_with("File too large");
  });
  EXPECT_EQ(rc, 0);
  EXPECT_EQ(ReadFile(dir / "out"), (std::vector<uint8_t>{'o', 'l', 'd'}));
  EXPECT_EQ(std::distance(fs::directory_iterator(dir.path()), fs::directory_iterator()), 2);
}

// The decoder fails (a stream cut short) while the writer has work queued.
TEST(ExpandTest, AStreamCutShortFailsWithTheDecodersErrorAndLeavesNoOutput) {
  TempDir dir;
  SparseBuilder b(4096);
  b.RawBlocks(3000, 3).DontCare(5).RawBlocks(10, 4);
  auto simg = b.Build();
  simg.resize(simg.size() - 4096 * 5);
  int p[2];
  ASSERT_EQ(::pipe(p), 0);
  pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    ::close(p[1]);
    ::dup2(p[0], STDIN_FILENO);
    Status s = ExpandToPath(std::vector<std::string>{"-"}, dir / "out", {});
    bool ok = s.message() == "stdin: chunk 2 at input byte 0xbb8034: truncated RAW payload (20480 of 40960 bytes) "
                             "at input byte 0xbbd040" && !fs::exists(dir / "out");
    ::_exit(ok ? 0 : 1);
  }
  ::close(p[0]);
  for (size_t off = 0; off < simg.size();) off += ::write(p[1], simg.data() + off, std::min<size_t>(1 << 16, simg.size() - off));
  ::close(p[1]);
  int status = -1;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  EXPECT_EQ(std::distance(fs::directory_iterator(dir.path()), fs::directory_iterator()), 0);
}

// Reading ahead and writing behind change nothing in what is written: an
// overlay of parts read in small pieces by several threads into a small
// write ring gives the image decoded directly.
TEST(ExpandTest, SmallPiecesAndBuffersGiveTheSameOverlay) {
  TempDir dir;
  std::mt19937 rng(21);
  SparseBuilder a(1024), c(1024);
  for (int i = 0; i < 60; ++i) {
    uint32_t n = rng() % 40 + 1;
    switch (rng() % 4) {
      case 0: a.Fill(n, rng() % 2 ? 0 : rng()); c.DontCare(n); break;
      case 1: a.DontCare(n); c.RawBlocks(n, rng()); break;
      case 2: a.RawBlocks(n, rng()); c.Fill(n, rng() % 2 ? 0 : rng()); break;
      default: a.RawBlocks(n, rng()); c.RawBlocks(n, rng());
    }
  }
  auto simg_a = a.Build(), simg_c = c.Build();
  WriteFile(dir / "a", simg_a);
  WriteFile(dir / "c", simg_c);
  ASSERT_TRUE(ExpandToPath(std::vector<std::string>{dir / "a", dir / "c"}, dir / "want", {}).ok());
  UniqueFd out(::open((dir / "got").c_str(), O_RDWR | O_CREAT | O_EXCL, 0644));
  FdImageSink sink(out.get(), "got", FdImageSink::Kind::kFile, 0, {.buffer_size = 8192, .buffers = 2});
  for (const char* name : {"a", "c"}) {
    UniqueFd in(::open((dir / name).c_str(), O_RDONLY));
    ReadAhead reader(in.get(), name, ReadAhead::OneRange(0, ReadAhead::kToEof),
                     {.buffer_size = 4096, .buffers = 4, .threads = 3});
    auto end = DecodeAhead(reader, sink, {});
    ASSERT_TRUE(end.ok()) << end.status().ToString();
    EXPECT_EQ(*end, ReadFile(dir / name).size());
  }
  ASSERT_TRUE(sink.Finish().ok());
  ASSERT_EQ(::ftruncate(out.get(), static_cast<off_t>(sink.image_size())), 0);
  EXPECT_EQ(ReadFile(dir / "got"), ReadFile(dir / "want"));
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

size_t Entries(const std::string& dir) { return static_cast<size_t>(std::distance(fs::directory_iterator(dir), {})); }

mode_t Mode(const std::string& path) {
  struct stat st;
  EXPECT_EQ(::stat(path.c_str(), &st), 0) << path;
  return st.st_mode & 07777;
}

// Every input is checked before the output is created: with an output that
// cannot even be created, the error is still the corrupt second input's.
TEST(ExpandTest, ChecksEveryInputBeforeCreatingTheOutput) {
  TempDir dir;
  WriteFile(dir / "good", SparseBuilder().RawBlocks(2, 1).Build());
  auto bad = SparseBuilder().RawBlocks(1, 2).DontCare(3).RawBlocks(2, 3).Build();
  bad.resize(bad.size() - 100);
  WriteFile(dir / "bad", bad);
  Status s = ExpandToPath(std::vector<std::string>{dir / "good", dir / "bad"}, dir / "missing_dir/out", {});
  EXPECT_EQ(s.message(), (dir / "bad") + ": chunk 2 at input byte 0x1034: truncated RAW payload (8092 of 8192 "
                                         "bytes) at input byte 0x2fdc");
}

TEST(ExpandTest, RefusesAnInputAsTheOutput) {
  TempDir dir;
  auto img = SparseBuilder().RawBlocks(2, 1).Build();
  WriteFile(dir / "a", img);
  WriteFile(dir / "b", SparseBuilder().Fill(2, 7).Build());
  ASSERT_EQ(::symlink("a", (dir / "link").c_str()), 0);
  for (const char* out : {"a", "link"}) {
    Status s = ExpandToPath(std::vector<std::string>{dir / "b", dir / "a"}, dir / out, {});
    EXPECT_EQ(s.message(),
              "output " + (dir / out) + " is the same file as input " + (dir / "a") + ": refusing to overwrite an input");
  }
  EXPECT_EQ(ReadFile(dir / "a"), img);
}

// One policy for every tool: a symlinked output is written through and
// stays a link; an existing output keeps its mode.
TEST(ExpandTest, SymlinkedOutputIsWrittenThroughAndKeepsItsMode) {
  TempDir dir;
  SparseBuilder b;
  b.RawBlocks(2, 1);
  WriteFile(dir / "in", b.Build());
  WriteFile(dir / "real", {'o', 'l', 'd'});
  ASSERT_EQ(::chmod((dir / "real").c_str(), 0640), 0);
  ASSERT_EQ(::symlink("real", (dir / "link").c_str()), 0);
  ASSERT_TRUE(ExpandToPath(std::vector<std::string>{dir / "in"}, dir / "link", {}).ok());
  EXPECT_TRUE(fs::is_symlink(dir / "link"));
  EXPECT_EQ(ReadFile(dir / "real"), b.expanded());
  EXPECT_EQ(Mode(dir / "real"), 0640u);
}

TEST(ExpandTest, StreamOutputTakesOneInput) {
  TempDir dir;
  WriteFile(dir / "a", SparseBuilder().RawBlocks(1, 1).Build());
  EXPECT_EQ(ExpandToPath(std::vector<std::string>{dir / "a", dir / "a"}, "/dev/null", {}).message(),
            "/dev/null is a stream: it takes exactly one input");
}

TEST(AppendTest, RefusesToAppendAnImageToItself) {
  TempDir dir;
  WriteFile(dir / "s", SparseBuilder(1024).RawBlocks(4, 1).Build());
  ASSERT_EQ(::link((dir / "s").c_str(), (dir / "hard").c_str()), 0);
  ASSERT_EQ(::symlink("s", (dir / "sym").c_str()), 0);
  auto before = ReadFile(dir / "s");
  for (const char* raw : {"s", "hard", "sym"}) {
    EXPECT_EQ(AppendToSparse(dir / "s", dir / raw).message(),
              (dir / raw) + " is the same file as the image " + (dir / "s") + ": refusing to append an image to itself");
  }
  EXPECT_EQ(ReadFile(dir / "s"), before);
}

TEST(AppendTest, SymlinkedImageIsWrittenThroughAndKeepsItsMode) {
  TempDir dir;
  SparseBuilder b(1024);
  b.RawBlocks(2, 1);
  WriteFile(dir / "real", b.Build());
  ASSERT_EQ(::chmod((dir / "real").c_str(), 0600), 0);
  ASSERT_EQ(::symlink("real", (dir / "link").c_str()), 0);
  auto tail = SparseBuilder::RandomBytes(1024, 4);
  WriteFile(dir / "t", tail);
  ASSERT_TRUE(AppendToSparse(dir / "link", dir / "t").ok());
  EXPECT_TRUE(fs::is_symlink(dir / "link"));
  EXPECT_EQ(Mode(dir / "real"), 0600u);
  ASSERT_TRUE(ExpandToPath(std::vector<std::string>{dir / "real"}, dir / "out", {}).ok());
  auto want = b.expanded();
  want.insert(want.end(), tail.begin(), tail.end());
  EXPECT_EQ(ReadFile(dir / "out"), want);
}

// An image of `blocks` RAW blocks of 4096, random.
std::vector<uint8_t> RawImage(uint32_t blocks, uint32_t seed) {
  return SparseBuilder(4096).RawBlocks(blocks, seed).Build();
}

TEST(ResparseFilesTest, FewerPartsRemoveTheStaleOnes) {
  TempDir dir;
  WriteFile(dir / "in", RawImage(40, 1));
  auto first = ResparseToFiles(dir / "in", dir / "p", 50000);
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  ASSERT_EQ(first->parts, 4u);
  auto second = ResparseToFiles(dir / "in", dir / "p", 200000);
  ASSERT_TRUE(second.ok()) << second.status().ToString();
  EXPECT_EQ(second->parts, 1u);
  EXPECT_EQ(second->removed, (std::vector<std::string>{dir / "p.1", dir / "p.2", dir / "p.3"}));
  EXPECT_EQ(Entries(dir.path()), 2u);  // in, p.0
}

TEST(ResparseFilesTest, APartOrStalePartThatIsTheInputIsRefusedAndNothingChanges) {
  TempDir dir;
  WriteFile(dir / "in", RawImage(40, 1));
  ASSERT_TRUE(ResparseToFiles(dir / "in", dir / "p", 50000).ok());
  auto p0 = ReadFile(dir / "p.0"), p3 = ReadFile(dir / "p.3");
  EXPECT_EQ(ResparseToFiles(dir / "p.0", dir / "p", 50000).status().message(),
            "output " + (dir / "p.0") + " is the same file as input " + (dir / "p.0") +
                ": refusing to overwrite an input");
  // p.3 as input makes one part, so p.3 would be stale and removed.
  EXPECT_EQ(ResparseToFiles(dir / "p.3", dir / "p", 1 << 20).status().message(),
            (dir / "p.3") + " would be a stale part (this run makes fewer parts) but is the input " + (dir / "p.3") +
                ": refusing to remove it");
  EXPECT_EQ(ReadFile(dir / "p.0"), p0);
  EXPECT_EQ(ReadFile(dir / "p.3"), p3);
  EXPECT_EQ(Entries(dir.path()), 5u);
}

// A part that cannot be created: the old parts stay as they were and no
// temp is left (before, parts were truncated in place one by one).
TEST(ResparseFilesTest, AFailureLeavesTheOldPartsAndNoTemp) {
  TempDir dir;
  WriteFile(dir / "in", RawImage(40, 1));
  WriteFile(dir / "p.0", {'o', 'l', 'd'});
  ASSERT_EQ(::mkdir((dir / "p.2").c_str(), 0700), 0);
  Status s = ResparseToFiles(dir / "in", dir / "p", 50000).status();
  EXPECT_EQ(s.code(), Code::kIoError) << s.ToString();
  EXPECT_EQ(ReadFile(dir / "p.0"), (std::vector<uint8_t>{'o', 'l', 'd'}));
  EXPECT_EQ(Entries(dir.path()), 3u);  // in, p.0, p.2
}

// Parts are names resparse makes in the prefix's folder: a symlink or a hard
// link planted at one is replaced by the part, never written through (issue
// 19: a link to ../victim must not become a way to overwrite it).
TEST(ResparseFilesTest, APlantedLinkAtAPartIsReplacedNotWrittenThrough) {
  TempDir dir;
  WriteFile(dir / "in", RawImage(40, 1));
  WriteFile(dir / "real", {'o', 'l', 'd'});
  ASSERT_EQ(::chmod((dir / "real").c_str(), 0640), 0);
  ASSERT_EQ(::symlink("real", (dir / "p.1").c_str()), 0);
  ASSERT_EQ(::link((dir / "real").c_str(), (dir / "p.2").c_str()), 0);
  auto r = ResparseToFiles(dir / "in", dir / "p", 50000);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_GE(r->parts, 3u);
  EXPECT_FALSE(fs::is_symlink(dir / "p.1"));
  EXPECT_EQ(ReadFile(dir / "real"), (std::vector<uint8_t>{'o', 'l', 'd'}));
  EXPECT_EQ(Mode(dir / "real"), 0640u);
  EXPECT_EQ(fs::hard_link_count(dir / "real"), 1u);
  std::vector<std::string> parts;
  for (size_t i = 0; i < r->parts; ++i) parts.push_back(PartPath(dir / "p", i));
  ASSERT_TRUE(ExpandToPath(parts, dir / "out", {}).ok());
  EXPECT_EQ(ReadFile(dir / "out"), SparseBuilder(4096).RawBlocks(40, 1).expanded());
}

// A killed run leaves temps (for parts this run will not make too); the
// next run removes them.
TEST(ResparseFilesTest, TempsOfADeadRunAreRemoved) {
  TempDir dir;
  WriteFile(dir / "in", RawImage(40, 1));
  pid_t child = ::fork();
  if (child == 0) ::_exit(0);
  ASSERT_EQ(::waitpid(child, nullptr, 0), child);
  for (int n : {0, 7}) WriteFile(dir / fmt::format(".p.{}.flashpipe-{}-0000abcd", n, child), {1});
  WriteFile(dir / ".other.flashpipe-1-00000000", {1});
  ASSERT_TRUE(ResparseToFiles(dir / "in", dir / "p", 200000).ok());
  EXPECT_EQ(Entries(dir.path()), 3u);  // in, p.0, the other tool's temp
}

TEST(ResparseFilesTest, PrefixMustNameAFile) {
  EXPECT_EQ(ResparseToFiles("in", "dir/", 1 << 20).status().message(), "output prefix 'dir/' must end in a file name");
}

TEST(CheckSparseFileTest, FindsWhatTheDecoderFindsWithoutReadingPayloads) {
  TempDir dir;
  SparseBuilder b(4096);
  b.RawBlocks(300, 1).Fill(2, 5).DontCare(3).RawBlocks(20, 2);
  auto img = b.Build();
  WriteFile(dir / "ok", img);
  UniqueFd ok(::open((dir / "ok").c_str(), O_RDONLY));
  auto h = CheckSparseFile(ok.get(), 0, img.size(), "ok");
  ASSERT_TRUE(h.ok()) << h.status().ToString();
  EXPECT_EQ(h->total_blks, 325u);
  for (size_t cut : {size_t{10}, size_t{5000}, img.size() - 1}) {
    std::vector<uint8_t> part(img.begin(), img.begin() + static_cast<long>(cut));
    WriteFile(dir / "cut", part);
    UniqueFd fd(::open((dir / "cut").c_str(), O_RDONLY));
    NullSink sink;
    Decoder d(&sink, {.check_crc = false});
    Status want = d.Feed(part);
    if (want.ok()) want = d.Finish();
    EXPECT_EQ(CheckSparseFile(fd.get(), 0, part.size(), "cut").status().message(), want.message()) << cut;
  }
  img.push_back(0);  // data after the last chunk
  WriteFile(dir / "long", img);
  UniqueFd fd(::open((dir / "long").c_str(), O_RDONLY));
  EXPECT_EQ(CheckSparseFile(fd.get(), 0, img.size(), "long").status().message(),
            fmt::format("input byte 0x{:x}: data after the last chunk (total_chunks 4)", img.size() - 1));
}

TEST(ReadHeaderTest, ChecksTheHeaderAndKeepsTheBytes) {
  int p[2];
  ASSERT_EQ(::pipe(p), 0);
  auto img = SparseBuilder().RawBlocks(1, 1).Build();
  ASSERT_EQ(::write(p[1], img.data(), img.size()), static_cast<ssize_t>(img.size()));
  ::close(p[1]);
  std::vector<uint8_t> head;
  auto h = ReadHeader(p[0], "pipe", &head);
  ASSERT_TRUE(h.ok()) << h.status().ToString();
  EXPECT_EQ(head.size(), 28u);
  struct Count : NullSink {
    Status OnRaw(uint64_t, std::span<const uint8_t> d) override {
      bytes += d.size();
      return Status::Ok();
    }
    uint64_t bytes = 0;
  } sink;
  ASSERT_TRUE(DecodeFd(p[0], sink, {}, "pipe", head).ok());
  EXPECT_EQ(sink.bytes, 4096u);
  ::close(p[0]);
  std::vector<uint8_t> bad = {'X', 'X', 'X', 'X'};
  bad.resize(40);
  ASSERT_EQ(::pipe(p), 0);
  ASSERT_EQ(::write(p[1], bad.data(), bad.size()), 40);
  ::close(p[1]);
  head.clear();
  EXPECT_EQ(ReadHeader(p[0], "pipe", &head).status().message(),
            "file header at input byte 0x0: bad magic 0x58585858 (expected 0xed26ff3a)");
  ::close(p[0]);
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
