#include "sparse/encoder.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "base/endian.h"
#include "base/unique_fd.h"
#include "sparse/decoder.h"
#include "testing/sparse_builder.h"
#include "testing/temp_dir.h"

namespace flashpipe::sparse {
namespace {

using testing::SparseBuilder;

UniqueFd MemFile(const std::vector<uint8_t>& bytes) {
  UniqueFd fd(::memfd_create("in", 0));
  EXPECT_EQ(::write(fd.get(), bytes.data(), bytes.size()), static_cast<ssize_t>(bytes.size()));
  ::lseek(fd.get(), 0, SEEK_SET);
  return fd;
}

std::vector<uint8_t> ReadAll(int fd) {
  std::vector<uint8_t> out;
  ::lseek(fd, 0, SEEK_SET);
  uint8_t buf[65536];
  for (ssize_t n; (n = ::read(fd, buf, sizeof buf)) > 0;) out.insert(out.end(), buf, buf + n);
  return out;
}

struct Chunk {
  uint16_t type;
  uint32_t blocks;
  bool operator==(const Chunk&) const = default;
};

// Chunk list of a sparse image, walked by hand (no decoder).
std::vector<Chunk> Chunks(const std::vector<uint8_t>& simg) {
  std::vector<Chunk> out;
  FileHeader h = ParseFileHeader(simg);
  size_t off = h.file_hdr_sz;
  for (uint32_t i = 0; i < h.total_chunks; ++i) {
    ChunkHeader c = ParseChunkHeader({simg.data() + off, 12});
    out.push_back({c.chunk_type, c.chunk_sz});
    off += c.total_sz;
  }
  EXPECT_EQ(off, simg.size());
  return out;
}

// Decodes with CRC checking and returns the expanded image (skips as zeros).
std::vector<uint8_t> Expand(const std::vector<uint8_t>& simg) {
  struct S : Sink {
    std::vector<uint8_t> img;
    Status OnHeader(const FileHeader& h) override { img.assign(h.image_size(), 0); return Status::Ok(); }
    Status OnRaw(uint64_t o, std::span<const uint8_t> d) override {
      std::copy(d.begin(), d.end(), img.begin() + o);
      return Status::Ok();
    }
    Status OnFill(uint64_t o, uint64_t n, uint32_t p) override {
      for (uint64_t i = 0; i < n; i += 4) StoreLE<uint32_t>(img.data() + o + i, p);
      return Status::Ok();
    }
    Status OnSkip(uint64_t, uint64_t) override { return Status::Ok(); }
  } sink;
  Decoder d(&sink);
  Status s = d.Feed(simg);
  if (s.ok()) s = d.Finish();
  EXPECT_TRUE(s.ok()) << s.ToString();
  return sink.img;
}

std::vector<uint8_t> EncodeToMemfd(const std::vector<uint8_t>& raw, EncoderOptions o = {}) {
  UniqueFd in = MemFile(raw);
  UniqueFd out(::memfd_create("out", 0));
  FdOutput output(out.get(), "out");
  auto r = EncodeImage(in.get(), "in", output, o);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return ReadAll(out.get());
}

// A file with holes (a memfd may have none) under /tmp, removed at once.
struct TempDirFile {
  TempDirFile() {
    char path[] = "/tmp/fp_enc_XXXXXX";
    fd = UniqueFd(::mkstemp(path));
    ::unlink(path);
  }
  UniqueFd fd;
};

std::vector<uint8_t> Block(uint32_t word, size_t blk = 4096) {
  std::vector<uint8_t> b(blk);
  for (size_t i = 0; i < blk; i += 4) StoreLE<uint32_t>(b.data() + i, word);
  return b;
}

void Append(std::vector<uint8_t>& v, const std::vector<uint8_t>& b) { v.insert(v.end(), b.begin(), b.end()); }

TEST(UniformBlockTest, DetectsEqualWordsOnly) {
  uint32_t p = 0;
  auto b = Block(0xA1B2C3D4, 1028);
  EXPECT_TRUE(IsUniformBlock(b, &p));
  EXPECT_EQ(p, 0xA1B2C3D4u);
  for (size_t pos : {0ul, 5ul, 63ul, 64ul, 1000ul, 1027ul}) {
    auto c = b;
    c[pos] ^= 1;
    EXPECT_FALSE(IsUniformBlock(c, &p)) << pos;
  }
}

TEST(EncoderTest, ChunksLikeAospImg2simg) {
  std::vector<uint8_t> raw = SparseBuilder::RandomBytes(2 * 4096, 1);
  Append(raw, Block(0));
  Append(raw, Block(0));
  Append(raw, Block(0x11111111));
  Append(raw, Block(0x22222222));
  Append(raw, SparseBuilder::RandomBytes(1000, 2));  // partial last block
  auto simg = EncodeToMemfd(raw);
  EXPECT_EQ(Chunks(simg), (std::vector<Chunk>{{kChunkRaw, 2}, {kChunkFill, 2}, {kChunkFill, 1},
                                              {kChunkFill, 1}, {kChunkRaw, 1}}));
  FileHeader h = ParseFileHeader(simg);
  EXPECT_EQ(h.total_blks, 7u);
  EXPECT_EQ(h.total_chunks, 5u);
  raw.resize(7 * 4096, 0);
  EXPECT_EQ(Expand(simg), raw);
}

TEST(EncoderTest, PartialUniformLastBlockIsPaddedThenClassified) {
  std::vector<uint8_t> raw(4096 + 100, 0);
  auto simg = EncodeToMemfd(raw);
  EXPECT_EQ(Chunks(simg), (std::vector<Chunk>{{kChunkFill, 2}}));
}

TEST(EncoderTest, CrcChunkIsCorrect) {
  std::vector<uint8_t> raw = SparseBuilder::RandomBytes(3 * 1024, 5);
  Append(raw, Block(7, 1024));
  auto simg = EncodeToMemfd(raw, {.block_size = 1024, .crc = true});
  auto chunks = Chunks(simg);
  ASSERT_EQ(chunks.back().type, kChunkCrc32);
  EXPECT_EQ(LoadLE<uint32_t>(simg.data() + simg.size() - 4), Crc32Update(0, raw.data(), raw.size()));
  EXPECT_EQ(Expand(simg), raw);  // Expand checks the CRC
}

TEST(EncoderTest, RawChunksCappedAndMerged) {
  std::vector<uint8_t> raw = SparseBuilder::RandomBytes(10 * 4096, 3);
  auto simg = EncodeToMemfd(raw, {.max_raw_chunk = 4 * 4096});
  EXPECT_EQ(Chunks(simg), (std::vector<Chunk>{{kChunkRaw, 4}, {kChunkRaw, 4}, {kChunkRaw, 2}}));
  EXPECT_EQ(Expand(simg), raw);
}

TEST(EncoderTest, RunsAcrossReadBuffersMerge) {
  // 3 MiB of one fill then 3 MiB of random: one chunk each despite 1 MiB reads.
  std::vector<uint8_t> raw;
  for (int i = 0; i < 768; ++i) Append(raw, Block(0x5A5A5A5A));
  Append(raw, SparseBuilder::RandomBytes(3 << 20, 4));
  auto simg = EncodeToMemfd(raw);
  EXPECT_EQ(Chunks(simg), (std::vector<Chunk>{{kChunkFill, 768}, {kChunkRaw, 768}}));
  EXPECT_EQ(Expand(simg), raw);
}

TEST(EncoderTest, BlockSizeNotDividingTheReadBufferKeepsBlocksAligned) {
  // blk_sz 1000: 1 MiB reads must still end on block boundaries, or runs drift
  // and the image claims blocks past total_blks.
  std::vector<uint8_t> raw = SparseBuilder::RandomBytes(3000000, 9);
  raw.resize(3012345, 0);
  EncoderOptions o;
  o.block_size = 1000;
  auto simg = EncodeToMemfd(raw, o);
  EXPECT_EQ(Chunks(simg), (std::vector<Chunk>{{kChunkRaw, 3000}, {kChunkFill, 13}}));
  raw.resize(3013000, 0);
  EXPECT_EQ(Expand(simg), raw);
}

// The input comes in read-ahead pieces whose size no block size need divide
// (and for -s, in ranges between holes): whatever the pieces, the same image.
TEST(EncoderTest, BlocksSplitBetweenReadPiecesAreJoined) {
  std::mt19937 rng(12);
  std::vector<uint8_t> raw;
  for (int i = 0; i < 300; ++i) {
    size_t n = rng() % 9000 + 1;
    if (rng() % 2) Append(raw, SparseBuilder::RandomBytes(n, rng()));
    else Append(raw, std::vector<uint8_t>(n, static_cast<uint8_t>(rng() % 3 ? 0 : 0x5A)));
  }
  for (uint32_t blk : {1000u, 1028u, 4096u, 65536u}) {
    EncoderOptions o{.block_size = blk, .crc = true};
    auto whole = EncodeToMemfd(raw, o);
    o.read_ahead = {.buffer_size = 4096, .buffers = 4, .threads = 3};
    EXPECT_EQ(EncodeToMemfd(raw, o), whole) << "blk " << blk;
    auto expect = raw;
    expect.resize((raw.size() + blk - 1) / blk * blk, 0);
    EXPECT_EQ(Expand(whole), expect) << "blk " << blk;
  }
}

TEST(EncoderTest, HoleModeWithSmallPiecesGivesTheSameImage) {
  TempDirFile f;
  std::mt19937 rng(13);
  for (int i = 0; i < 40; ++i) {
    auto d = SparseBuilder::RandomBytes(rng() % 30000 + 1, rng());
    ASSERT_EQ(::pwrite(f.fd.get(), d.data(), d.size(), static_cast<off_t>(rng() % (8 << 20))),
              static_cast<ssize_t>(d.size()));
  }
  for (uint32_t blk : {1028u, 4096u}) {
    auto encode = [&](ReadAheadOptions r) {
      UniqueFd out(::memfd_create("out", 0));
      FdOutput output(out.get(), "out");
      auto res = EncodeImage(f.fd.get(), "in", output, {.block_size = blk, .holes = true, .read_ahead = r});
      EXPECT_TRUE(res.ok()) << res.status().ToString();
      return ReadAll(out.get());
    };
    auto whole = encode({});
    EXPECT_EQ(encode({.buffer_size = 4096, .buffers = 3, .threads = 2}), whole) << "blk " << blk;
    auto expect = ReadAll(f.fd.get());
    expect.resize((expect.size() + blk - 1) / blk * blk, 0);
    EXPECT_EQ(Expand(whole), expect) << "blk " << blk;
  }
}

TEST(EncoderTest, PipeOutputMatchesFileOutput) {
  std::mt19937 rng(9);
  std::vector<uint8_t> raw;
  for (int i = 0; i < 600; ++i) {
    if (rng() % 3 == 0) Append(raw, Block(rng() % 2 ? 0 : rng(), 1024));
    else Append(raw, SparseBuilder::RandomBytes(1024, rng()));
  }
  EncoderOptions o{.block_size = 1024, .crc = true, .max_raw_chunk = 20 * 1024};
  auto via_file = EncodeToMemfd(raw, o);
  UniqueFd in = MemFile(raw);
  std::vector<uint8_t> via_callback;
  CallbackOutput out([&](std::span<const uint8_t> d) {
    via_callback.insert(via_callback.end(), d.begin(), d.end());
    return Status::Ok();
  });
  auto r = EncodeImage(in.get(), "in", out, o);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(via_callback, via_file);
  EXPECT_EQ(r->output_bytes, via_file.size());
  EXPECT_EQ(Expand(via_file), raw);
}

TEST(EncoderTest, PipeInputToFileOutput) {
  std::vector<uint8_t> raw = SparseBuilder::RandomBytes(5 * 4096 + 7, 11);
  Append(raw, Block(0));
  int p[2];
  ASSERT_EQ(::pipe(p), 0);
  std::thread writer([&] {
    ::write(p[1], raw.data(), raw.size());
    ::close(p[1]);
  });
  UniqueFd rd(p[0]);
  UniqueFd out(::memfd_create("out", 0));
  FdOutput output(out.get(), "out");
  auto r = EncodeImage(rd.get(), "stdin", output, {});
  writer.join();
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  auto expanded = Expand(ReadAll(out.get()));
  raw.resize(expanded.size(), 0);
  EXPECT_EQ(expanded, raw);
}

TEST(EncoderTest, PipeToPipeRefused) {
  int p[2];
  ASSERT_EQ(::pipe(p), 0);
  UniqueFd rd(p[0]), wr(p[1]);
  CallbackOutput out([](std::span<const uint8_t>) { return Status::Ok(); });
  auto r = EncodeImage(rd.get(), "stdin", out, {});
  EXPECT_EQ(r.status().message(),
            "cannot write a sparse image to a pipe from a pipe: the chunk counts come first, so either the output "
            "or the input (stdin) must be a file");
}

TEST(EncoderTest, EmptyInputRefused) {
  UniqueFd in = MemFile({});
  UniqueFd out(::memfd_create("out", 0));
  FdOutput output(out.get(), "out");
  EXPECT_EQ(EncodeImage(in.get(), "in.img", output, {}).status().message(),
            "in.img is empty: a sparse image holds at least one block");
}

TEST(EncoderTest, BadBlockSizeRefused) {
  UniqueFd in = MemFile({1, 2, 3});
  CallbackOutput out([](std::span<const uint8_t>) { return Status::Ok(); });
  EXPECT_EQ(EncodeImage(in.get(), "in", out, {.block_size = 1022}).status().message(),
            "block size 1022 is not a non-zero multiple of 4");
}

TEST(EncoderTest, BlockSizeTooLargeForARawChunkRefused) {
  // Used to loop forever emitting empty RAW chunks (no block fits total_sz).
  UniqueFd in = MemFile({1, 2, 3});
  CallbackOutput out([](std::span<const uint8_t>) { return Status::Ok(); });
  EXPECT_EQ(EncodeImage(in.get(), "in", out, {.block_size = 0xFFFFFFFC}).status().message(),
            "block size 4294967292 is too large: a RAW chunk of one block would exceed 2^32-1 bytes");
}

TEST(EncoderTest, HoleModeMapsHolesToDontCare) {
  char path[] = "/tmp/fp_enc_XXXXXX";
  UniqueFd fd(::mkstemp(path));
  ::unlink(path);
  // 64 KiB hole, 8 KiB data (random + zeros), 1 MiB hole, 100 bytes data at the end.
  auto data = SparseBuilder::RandomBytes(4096, 1);
  Append(data, Block(0));
  ASSERT_EQ(::pwrite(fd.get(), data.data(), data.size(), 65536), 8192);
  auto tail = SparseBuilder::RandomBytes(100, 2);
  uint64_t tail_at = 65536 + 8192 + (1 << 20);
  ASSERT_EQ(::pwrite(fd.get(), tail.data(), tail.size(), tail_at), 100);
  UniqueFd out(::memfd_create("out", 0));
  FdOutput output(out.get(), "out");
  auto r = EncodeImage(fd.get(), "in", output, {.holes = true});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  auto simg = ReadAll(out.get());
  EXPECT_EQ(Chunks(simg), (std::vector<Chunk>{{kChunkDontCare, 16}, {kChunkRaw, 1}, {kChunkFill, 1},
                                              {kChunkDontCare, 256}, {kChunkRaw, 1}}));
  std::vector<uint8_t> expect(tail_at + 4096, 0);
  std::copy(data.begin(), data.end(), expect.begin() + 65536);
  std::copy(tail.begin(), tail.end(), expect.begin() + tail_at);
  EXPECT_EQ(Expand(simg), expect);
}

// img2simg's file handling (EncodeToPath): the input is never the output,
// checks come before the output is touched, one symlink/mode policy.
TEST(EncodeToPathTest, TheInputIsNeverTheOutput) {
  testing::TempDir dir;
  auto raw = SparseBuilder::RandomBytes(3 * 4096, 1);
  testing::WriteFile(dir / "x", raw);
  ASSERT_EQ(::symlink("x", (dir / "sym").c_str()), 0);
  ASSERT_EQ(::link((dir / "x").c_str(), (dir / "hard").c_str()), 0);
  for (const char* out : {"x", "sym", "hard"}) {
    EXPECT_EQ(EncodeToPath(dir / "x", dir / out, {}).status().message(),
              "output " + (dir / out) + " is the same file as input " + (dir / "x") + ": refusing to overwrite an input");
  }
  EXPECT_EQ(testing::ReadFile(dir / "x"), raw);
}

// An empty input is refused before the old output is touched (it used to be
// truncated, then deleted).
TEST(EncodeToPathTest, AnEmptyOrMissingInputLeavesTheOutputAlone) {
  testing::TempDir dir;
  testing::WriteFile(dir / "empty", {});
  testing::WriteFile(dir / "out", {'o', 'l', 'd'});
  EXPECT_EQ(EncodeToPath(dir / "empty", dir / "out", {}).status().message(),
            (dir / "empty") + " is empty: a sparse image holds at least one block");
  EXPECT_EQ(testing::ReadFile(dir / "out"), (std::vector<uint8_t>{'o', 'l', 'd'}));
  EXPECT_FALSE(EncodeToPath(dir / "missing", dir / "new", {}).ok());
  EXPECT_FALSE(std::filesystem::exists(dir / "new"));
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir.path()), {}), 2);
}

// The writer thread fails part way (a file size limit stands in for a full
// disk): the error comes back, the old output stays, no temp is left.
TEST(EncodeToPathTest, AWriteFailureLeavesTheOldOutputAndNoTemp) {
  testing::TempDir dir;
  testing::WriteFile(dir / "in", SparseBuilder::RandomBytes(6 << 20, 3));
  testing::WriteFile(dir / "out", {'o', 'l', 'd'});
  pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    ::signal(SIGXFSZ, SIG_IGN);
    rlimit lim{2 << 20, 2 << 20};
    ::setrlimit(RLIMIT_FSIZE, &lim);
    Status s = EncodeToPath(dir / "in", dir / "out", {}).status();
    ::_exit(s.message().find(" at byte 0x200000") != std::string::npos && s.ToString().ends_with("File too large")
                ? 0 : 1);
  }
  int status = -1;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  EXPECT_EQ(testing::ReadFile(dir / "out"), (std::vector<uint8_t>{'o', 'l', 'd'}));
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir.path()), {}), 2);
}

TEST(EncodeToPathTest, SymlinkedOutputIsWrittenThroughAndKeepsItsMode) {
  testing::TempDir dir;
  auto raw = SparseBuilder::RandomBytes(3 * 4096, 1);
  testing::WriteFile(dir / "in", raw);
  testing::WriteFile(dir / "real", {'o', 'l', 'd'});
  ASSERT_EQ(::chmod((dir / "real").c_str(), 0640), 0);
  ASSERT_EQ(::symlink("real", (dir / "link").c_str()), 0);
  ASSERT_TRUE(EncodeToPath(dir / "in", dir / "link", {}).ok());
  EXPECT_TRUE(std::filesystem::is_symlink(dir / "link"));
  struct stat st;
  ASSERT_EQ(::stat((dir / "real").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0640u);
  EXPECT_EQ(Expand(testing::ReadFile(dir / "real")), raw);
}

}  // namespace
}  // namespace flashpipe::sparse
