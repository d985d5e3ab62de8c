#include "input/image_source.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdlib>
#include <random>

#include "input/sources.h"
#include "testing/compress.h"
#include "testing/image_recorder.h"
#include "testing/sparse_builder.h"
#include "testing/stdin_pipe.h"
#include "testing/temp_dir.h"

namespace flashpipe::input {
namespace {

using testing::Gzip;

using testing::ImageRecorder;
using testing::SparseBuilder;

class ImageSourceTest : public ::testing::Test {
 protected:
  std::string Write(const std::string& name, std::span<const uint8_t> bytes) {
    std::string path = dir_ / name;
    testing::WriteFile(path, {bytes.begin(), bytes.end()});
    return path;
  }
  Result<ImageRecorder> Expand(const std::string& spec, SourceOptions o = {}) {
    FP_ASSIGN_OR_RETURN(auto src, OpenImage(spec, o));
    kind_ = src->kind();
    known_ = src->known_size();
    ImageRecorder rec;
    FP_RETURN_IF_ERROR(src->Run(&rec));
    size_ = src->image_size();
    return rec;
  }
  testing::TempDir dir_;
  std::string kind_;
  std::optional<uint64_t> known_;
  uint64_t size_ = 0;
};

std::vector<uint8_t> Random(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> v(n);
  for (auto& b : v) b = static_cast<uint8_t>(rng());
  return v;
}

SparseBuilder Sample() {
  SparseBuilder b(4096);
  b.RawBlocks(3, 1).Fill(2, 0xAABBCCDD).DontCare(2).Fill(1, 0).RawBlocks(1, 2);
  return b;
}

TEST_F(ImageSourceTest, SparseFileIsReadAheadAndDecoded) {
  SparseBuilder b = Sample();
  auto r = Expand(Write("a.simg", b.Build()));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(kind_, "sparse");
  EXPECT_EQ(known_, b.expanded().size());
  EXPECT_EQ(r->image, b.expanded());
  EXPECT_EQ(r->fd_raws, 0u);  // RAW comes as slices of the read-ahead pieces
  EXPECT_EQ(r->raws, 2u);
  EXPECT_EQ(r->skips, 1u);
}

// A payload spread over several read-ahead pieces arrives whole, and the
// CRC32 chunk after it is checked over all of them.
TEST_F(ImageSourceTest, SparseFileLongRawPayloadSpansPieces) {
  const size_t piece = FileReadAhead().buffer_size;
  const uint32_t blocks = static_cast<uint32_t>(3 * piece / 4096 + 3);
  SparseBuilder b(4096);
  b.RawBlocks(blocks, 9).Crc().Fill(1, 0);
  auto r = Expand(Write("long.simg", b.Build()));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->image, b.expanded());
  EXPECT_GE(r->raws, 4u);
  SparseBuilder bad(4096);
  bad.RawBlocks(blocks, 9).CrcValue(0x12345678);
  EXPECT_EQ(Expand(Write("bad.simg", bad.Build())).status().code(), Code::kCorrupt);
}

// raw_by_range: each RAW payload reaches the sink as a file range (the
// host reads it into its window, or not at all when planning), long ones in
// pieces, and the CRC32 chunk after them is still checked.
TEST_F(ImageSourceTest, SparseFileByRangeHandsRawAsFileRanges) {
  SourceOptions o;
  o.raw_by_range = true;
  SparseBuilder b = Sample();
  auto r = Expand(Write("a.simg", b.Build()), o);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->image, b.expanded());
  EXPECT_EQ(r->fd_raws, 2u);
  EXPECT_EQ(r->skips, 1u);
  const uint32_t blocks = (9 << 20) / 4096 + 3;  // three pieces
  SparseBuilder lng(4096);
  lng.RawBlocks(blocks, 9).Crc().Fill(1, 0);
  r = Expand(Write("long.simg", lng.Build()), o);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->image, lng.expanded());
  EXPECT_EQ(r->fd_raws, 3u);
  SparseBuilder bad(4096);
  bad.RawBlocks(blocks, 9).CrcValue(0x12345678);
  EXPECT_EQ(Expand(Write("bad.simg", bad.Build()), o).status().code(), Code::kCorrupt);
  auto cut = lng.Build();
  cut.resize(cut.size() / 2);
  EXPECT_EQ(Expand(Write("cut.simg", cut), o).status().code(), Code::kCorrupt);
}

TEST_F(ImageSourceTest, SparseFileTrailingDataIsAnError) {
  auto bytes = Sample().Build();
  bytes.push_back(0);
  auto r = Expand(Write("trail.simg", bytes));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Code::kCorrupt) << r.status().ToString();
}

// Pages of [0, len) of fd that are in the page cache.
size_t Resident(int fd, size_t len) {
  void* p = mmap(nullptr, len, PROT_READ, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED) return 0;
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  std::vector<unsigned char> vec((len + page - 1) / page);
  size_t n = 0;
  if (mincore(p, len, vec.data()) == 0)
    for (unsigned char v : vec) n += v & 1;
  munmap(p, len);
  return n;
}

// A cold image is read with O_DIRECT, in large requests straight from the
// disk, not through the page cache (which the old preads filled, a page at
// a time behind the kernel's read-ahead).
TEST_F(ImageSourceTest, ColdSparseFileIsReadPastThePageCache) {
  SparseBuilder b(4096);
  b.RawBlocks(2048, 4).Fill(16, 0).RawBlocks(1024, 5);
  std::string path = Write("cold.simg", b.Build());
  UniqueFd fd(open(path.c_str(), O_RDONLY | O_CLOEXEC));
  ASSERT_TRUE(fd.valid());
  const size_t size = static_cast<size_t>(std::filesystem::file_size(path));
  const size_t pages = (size + 4095) / 4096;
  ASSERT_EQ(fdatasync(fd.get()), 0);
  ASSERT_EQ(posix_fadvise(fd.get(), 0, 0, POSIX_FADV_DONTNEED), 0);
  if (Resident(fd.get(), size) > pages / 2) GTEST_SKIP() << "this filesystem keeps files in memory (tmpfs?)";
  auto r = Expand(path);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->image, b.expanded());
  EXPECT_LT(Resident(fd.get(), size), pages / 10);
}

TEST_F(ImageSourceTest, RawFileExtentsSpanPiecesAndHoles) {
  const size_t piece = FileReadAhead().buffer_size;
  auto data = Random(3 * piece + 4096, 11);
  std::string path = dir_ / "long.img";
  const uint64_t second = 4 * piece + 8192;  // a hole of about a piece between the extents
  {
    UniqueFd fd(open(path.c_str(), O_CREAT | O_WRONLY | O_CLOEXEC, 0644));
    ASSERT_EQ(pwrite(fd.get(), data.data(), data.size(), 0), static_cast<ssize_t>(data.size()));
    ASSERT_EQ(pwrite(fd.get(), data.data(), piece, static_cast<off_t>(second)), static_cast<ssize_t>(piece));
    ASSERT_EQ(ftruncate(fd.get(), static_cast<off_t>(second + piece + 4096 + 3)), 0);  // odd hole at the end
  }
  auto r = Expand(path);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  std::vector<uint8_t> want(second + piece + 4096 + 3, 0);
  std::copy(data.begin(), data.end(), want.begin());
  std::copy(data.begin(), data.begin() + static_cast<ptrdiff_t>(piece), want.begin() + static_cast<ptrdiff_t>(second));
  EXPECT_EQ(r->image, want);
  EXPECT_GE(r->zero_fills, 1u);
}

// A file that is shorter than when it was opened (cut while it is written
// out) is an error, not zeros.
TEST_F(ImageSourceTest, RawFileCutWhileReadIsAnError) {
  auto data = Random(64 << 10, 12);
  std::string path = Write("cut.img", data);
  UniqueFd fd(open(path.c_str(), O_RDONLY | O_CLOEXEC));
  auto src = MakeRawFileSource(std::move(fd), path, 128 << 10);  // its size when "opened"
  ImageRecorder rec;
  Status s = src->Run(&rec);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), Code::kCorrupt);
  EXPECT_EQ(s.message(), path + ": the file ends at byte 0x10000, not 0x20000 as when it was opened: changed while read");
}

TEST_F(ImageSourceTest, SparseFileWithLargerHeadersAndCrc) {
  SparseBuilder b(4096);
  b.header().file_hdr_sz = 32;
  b.header().chunk_hdr_sz = 16;
  b.RawBlocks(2, 3).Fill(3, 7).Crc().DontCare(1).RawBlocks(1, 4);
  auto r = Expand(Write("b.simg", b.Build()));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->image, b.expanded());
}

TEST_F(ImageSourceTest, SparseFileTruncatedInsideRawIsAnError) {
  auto bytes = Sample().Build();
  bytes.resize(28 + 12 + 5000);
  auto r = Expand(Write("t.simg", bytes));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("t.simg"), std::string::npos) << r.status().ToString();
}

TEST_F(ImageSourceTest, SparseFileTruncatedInsideRawNamesChunkAndOffset) {
  auto bytes = Sample().Build();
  bytes.resize(28 + 12 + 5000);
  auto r = Expand(Write("t.simg", bytes));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Code::kCorrupt);
  EXPECT_EQ(r.status().message(),
            dir_.path() + "/t.simg: chunk 0 at input byte 0x1c: truncated RAW payload (5000 of 12288 bytes) at input byte 0x13b0");
}

TEST_F(ImageSourceTest, SparseFileWithBadHeaderIsRefusedAtOpen) {
  auto bytes = Sample().Build();
  bytes[12] = 6;  // blk_sz 6
  bytes[13] = 0;
  auto bad = OpenImage(Write("h.simg", bytes), {});
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(),
            dir_.path() + "/h.simg: file header at input byte 0x0: blk_sz 6 is not a non-zero multiple of 4");
  bytes.resize(20);
  auto shorter = OpenImage(Write("s.simg", bytes), {});
  ASSERT_FALSE(shorter.ok());
  EXPECT_EQ(shorter.status().message(),
            dir_.path() + "/s.simg: input byte 0x14: truncated in the file header (20 of 28 bytes)");
}

TEST_F(ImageSourceTest, SparseFileWithBadCrcIsAnErrorUnlessUnchecked) {
  SparseBuilder b(4096);
  b.RawBlocks(2, 3).CrcValue(0x12345678);
  std::string path = Write("c.simg", b.Build());
  EXPECT_EQ(Expand(path).status().code(), Code::kCorrupt);
  SourceOptions o;
  o.decoder.check_crc = false;
  EXPECT_TRUE(Expand(path, o).ok());
}

TEST_F(ImageSourceTest, RawFileHolesBecomeZeroFill) {
  auto data = Random(8192, 5);
  std::string path = dir_.path() + "/r.img";
  {
    UniqueFd fd(open(path.c_str(), O_CREAT | O_WRONLY, 0644));
    ASSERT_EQ(pwrite(fd.get(), data.data(), 4096, 0), 4096);
    ASSERT_EQ(pwrite(fd.get(), data.data() + 4096, 4096, 1 << 20), 4096);
    ASSERT_EQ(ftruncate(fd.get(), (1 << 20) + 4096 + 1001), 0);  // hole tail of odd length
  }
  auto r = Expand(path);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(kind_, "raw");
  std::vector<uint8_t> want((1 << 20) + 4096 + 1001, 0);
  std::copy(data.begin(), data.begin() + 4096, want.begin());
  std::copy(data.begin() + 4096, data.end(), want.begin() + (1 << 20));
  EXPECT_EQ(r->image, want);
  EXPECT_GE(r->zero_fills, 1u);
}

TEST_F(ImageSourceTest, TinyRawFile) {
  std::vector<uint8_t> three = {1, 2, 3};
  auto r = Expand(Write("tiny", three));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->image, three);
}

TEST_F(ImageSourceTest, PartsAreOverlaidInOrder) {
  SparseBuilder a(4096), b(4096);
  a.RawBlocks(2, 1).DontCare(2);
  b.DontCare(1).RawBlocks(2, 2).DontCare(1);
  std::string spec = Write("p1.simg", a.Build()) + "," + Write("p2.simg", b.Build());
  auto r = Expand(spec);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(kind_, "parts(2)+sparse");
  auto want = a.expanded();
  std::copy(b.expanded().begin() + 4096, b.expanded().begin() + 3 * 4096, want.begin() + 4096);
  EXPECT_EQ(r->image, want);
  EXPECT_EQ(r->headers, 2u);
}

TEST_F(ImageSourceTest, RawPartIsRefused) {
  std::string spec = Write("p1.simg", Sample().Build()) + "," + Write("p2.img", Random(4096, 1));
  auto r = Expand(spec);
  EXPECT_EQ(r.status().code(), Code::kInvalidArgument);
  EXPECT_NE(r.status().message().find("p2.img"), std::string::npos) << r.status().ToString();
}

TEST_F(ImageSourceTest, GzipOfSparseIsDetectedByMagicNotName) {
  SparseBuilder b = Sample();
  auto r = Expand(Write("image.raw", Gzip(b.Build())));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(kind_, "gzip+sparse");
  EXPECT_EQ(r->image, b.expanded());
}

TEST_F(ImageSourceTest, TruncatedGzipNamesTheStreamOnce) {
  SparseBuilder b(4096);
  b.RawBlocks(64, 5);
  auto gz = Gzip(b.Build());
  gz.resize(gz.size() / 2);
  std::string path = Write("cut.simg.gz", gz);
  auto r = Expand(path);
  ASSERT_FALSE(r.ok());
  const std::string name = "gzip of " + path + ":";
  EXPECT_TRUE(r.status().message().starts_with(name)) << r.status().ToString();
  EXPECT_EQ(r.status().message().find(name, 1), std::string::npos) << r.status().ToString();
}

TEST_F(ImageSourceTest, GzipOfRawFindsZeroRuns) {
  std::vector<uint8_t> img = Random(3 << 20, 9);
  std::fill(img.begin() + (1 << 20), img.begin() + (2 << 20) + 123, 0);
  auto r = Expand(Write("image.simg", Gzip(img)));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(kind_, "gzip+raw");
  EXPECT_EQ(r->image, img);
  EXPECT_GE(r->zero_fills, 1u);
  EXPECT_EQ(size_, img.size());
}

TEST_F(ImageSourceTest, StdinStreamOfSparse) {
  SparseBuilder b = Sample();
  testing::StdinPipe in(b.Build());
  auto r = Expand("-");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(kind_, "sparse");
  EXPECT_EQ(r->image, b.expanded());
}

TEST_F(ImageSourceTest, StdinWriterDyingMidSparseIsAnError) {
  auto bytes = Sample().Build();
  bytes.resize(6000);
  testing::StdinPipe in(bytes);
  EXPECT_FALSE(Expand("-").ok());
}

// Feeds `bytes` to stdin (a pipe) while `body` opens "-".
template <typename Body>
void ThroughStdin(const std::vector<uint8_t>& bytes, Body body) {
  testing::StdinPipe in(bytes);
  body();
}

// Streams that never end (/dev/zero) or block (a fifo) are not images, by
// their path or through a link to them: refused at open, naming the path and
// what it is, and "-" offered for a stream.
TEST_F(ImageSourceTest, CharacterDevicesFifosAndLinksToThemAreNotImages) {
  auto refused = [](const std::string& path, const std::string& what) {
    auto r = OpenImage(path, {});
    EXPECT_EQ(r.status().code(), Code::kInvalidArgument) << r.status().ToString();
    EXPECT_EQ(r.status().message(), path + " is " + what + ", not an image; use - for a stream");
    EXPECT_EQ(CheckImagePathType(path).code(), Code::kInvalidArgument) << path;
  };
  refused("/dev/zero", "a character device");
  refused("/dev/urandom", "a character device");
  std::string link = dir_ / "system.img";
  ASSERT_EQ(symlink("/dev/zero", link.c_str()), 0);
  refused(link, "a character device");
  std::string fifo = dir_ / "fifo";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  refused(fifo, "a fifo");  // returns at once: nothing waits for a writer
  std::string fifo_link = dir_ / "fifo.img";
  ASSERT_EQ(symlink(fifo.c_str(), fifo_link.c_str()), 0);
  refused(fifo_link, "a fifo");
  // A part of a split image, and --sha256 (which would hash it first).
  std::string part = Write("p.simg", Sample().Build());
  EXPECT_EQ(OpenImage(part + "," + link, {}).status().code(), Code::kInvalidArgument);
  SourceOptions o;
  o.fetch.sha256 = std::string(64, '0');
  EXPECT_EQ(OpenImage(link, o).status().message(), link + " is a character device, not an image; use - for a stream");
  // What stays an image: "-", files, and a path that does not exist says so at open.
  EXPECT_TRUE(CheckImagePathType("-").ok());
  EXPECT_TRUE(CheckImagePathType(part).ok());
  EXPECT_EQ(OpenImage(dir_ / "missing", {}).status().code(), Code::kNotFound);
}

// An empty image would "succeed" and leave an empty target: refused when it
// is opened, whatever its form.
TEST_F(ImageSourceTest, EmptyImagesAreRefusedAtOpen) {
  std::string empty = Write("e.img", {});
  auto r = OpenImage(empty, {});
  EXPECT_EQ(r.status().code(), Code::kInvalidArgument) << r.status().ToString();
  EXPECT_NE(r.status().message().find("empty"), std::string::npos) << r.status().ToString();
  std::string gz = Write("e.gz", testing::Gzip(std::vector<uint8_t>()));
  r = OpenImage(gz, {});
  EXPECT_EQ(r.status().code(), Code::kInvalidArgument) << r.status().ToString();
  EXPECT_NE(r.status().message().find("decompresses to nothing"), std::string::npos) << r.status().ToString();
  ThroughStdin({}, [&] {
    auto f = OpenImage("-", {});
    EXPECT_EQ(f.status().code(), Code::kInvalidArgument) << f.status().ToString();
  });
}

// A stream's sparse header is decoded before OpenImage returns, so the
// caller refuses it before touching a target, and knows the size.
TEST_F(ImageSourceTest, StreamSparseHeaderIsCheckedAndSizedAtOpen) {
  auto bytes = Sample().Build();
  std::vector<uint8_t> bad = bytes;
  bad[12] = 6;  // blk_sz 4102
  bad[13] = 16;
  ThroughStdin(bad, [&] {
    auto r = OpenImage("-", {});
    EXPECT_EQ(r.status().code(), Code::kCorrupt) << r.status().ToString();
    EXPECT_NE(r.status().message().find("blk_sz 4102"), std::string::npos) << r.status().ToString();
  });
  std::string gz = Write("s.simg.gz", testing::Gzip(bytes));
  auto r = OpenImage(gz, {});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ((*r)->known_size(), Sample().expanded().size());
}

TEST_F(ImageSourceTest, CompressedRawSizesComeFromTheContainer) {
  std::vector<uint8_t> img = Random(300000, 21);
  auto xz = OpenImage(Write("r.xz", testing::Xz(img)), {});
  ASSERT_TRUE(xz.ok()) << xz.status().ToString();
  EXPECT_EQ((*xz)->known_size(), img.size());
  auto gz = OpenImage(Write("r.gz", testing::Gzip(img)), {});
  ASSERT_TRUE(gz.ok());
  EXPECT_FALSE((*gz)->known_size().has_value());
  EXPECT_EQ((*gz)->min_size(), img.size());
  ThroughStdin(testing::Zstd(img), [&] {
    auto z = OpenImage("-", {});
    ASSERT_TRUE(z.ok()) << z.status().ToString();
    EXPECT_FALSE(z.value()->known_size().has_value());
    EXPECT_EQ(z.value()->min_size(), img.size());
  });
}

TEST_F(ImageSourceTest, InputsNameEveryFileTheImageIsReadFrom) {
  auto a = Sample().Build();
  std::string p1 = Write("p1.simg", a), p2 = Write("p2.simg", a);
  auto r = OpenImage(p1 + "," + p2, {});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ((*r)->inputs().size(), 2u);
  struct stat st;
  ASSERT_EQ(stat(p2.c_str(), &st), 0);
  EXPECT_EQ((*r)->inputs()[1].id, FileIdOf(st));
  EXPECT_EQ((*r)->inputs()[1].role, "part 2 of the image (" + p2 + ")");
  EXPECT_EQ((*r)->kind(), "parts(2)+sparse");
  auto one = OpenImage(p1, {});
  ASSERT_TRUE(one.ok());
  ASSERT_EQ((*one)->inputs().size(), 1u);
  EXPECT_EQ((*one)->inputs()[0].role, "the image itself (" + p1 + ")");
}

// The stream's name and the codec's are said once ("gzip of X: incorrect
// data check at compressed byte ..."), not once per layer.
TEST_F(ImageSourceTest, CorruptGzipNamesTheStreamOnce) {
  auto gz = testing::Gzip(Random(200000, 22));
  gz[gz.size() - 6] ^= 0xFF;  // the CRC in the trailer
  std::string path = Write("crc.gz", gz);
  auto r = Expand(path);
  ASSERT_EQ(r.status().code(), Code::kCorrupt) << r.status().ToString();
  const std::string& m = r.status().message();
  EXPECT_TRUE(m.starts_with("gzip of " + path + ": ")) << m;
  EXPECT_EQ(m.find("gzip", 1), std::string::npos) << m;
  EXPECT_EQ(m.find(path, m.find(path) + 1), std::string::npos) << m;
  EXPECT_NE(m.find("compressed byte"), std::string::npos) << m;
}

TEST(ImageFormTest, Names) {
  EXPECT_EQ(ImageForm{}.Name(), "raw");
  EXPECT_EQ((ImageForm{.sparse = true}).Name(), "sparse");
  EXPECT_EQ((ImageForm{.compression = ImageKind::kGzip, .sparse = true}).Name(), "gzip+sparse");
  EXPECT_EQ((ImageForm{.compression = ImageKind::kZstd, .bmap = true}).Name(), "zstd+raw+bmap");
  EXPECT_EQ((ImageForm{.compression = ImageKind::kXz, .sparse = true, .parts = 3}).Name(), "parts(3)+xz+sparse");
}

TEST_F(ImageSourceTest, MissingImage) {
  auto r = Expand(dir_.path() + "/nope.img");
  // not_found in a report (a job's mistake), not io_error (the machine's): docs/contracts.md.
  EXPECT_EQ(r.status().code(), Code::kNotFound);
  EXPECT_EQ(r.status().message(), "cannot open image " + dir_.path() + "/nope.img: No such file or directory");
}

TEST(ZeroRunTest, OnlyAlignedLongRunsBecomeFill) {
  std::vector<uint8_t> d(10 * 4096, 1);
  std::fill(d.begin() + 4096 + 1, d.begin() + 2 * 4096, 0);      // partial block: raw
  std::fill(d.begin() + 3 * 4096, d.begin() + 8 * 4096, 0);      // 5 blocks
  ImageRecorder rec;
  ASSERT_TRUE(EmitRawDetectingZeros(&rec, 0, d, 4 * 4096).ok());
  EXPECT_EQ(rec.image, d);
  EXPECT_EQ(rec.zero_fills, 1u);
  EXPECT_EQ(rec.raws, 2u);
  ImageRecorder strict;
  ASSERT_TRUE(EmitRawDetectingZeros(&strict, 0, d, 6 * 4096).ok());  // run too short
  EXPECT_EQ(strict.zero_fills, 0u);
}

TEST(ZeroRunTest, UnalignedOffsetShiftsBlocks) {
  std::vector<uint8_t> d(6 * 4096, 0);
  ImageRecorder rec;
  ASSERT_TRUE(EmitRawDetectingZeros(&rec, 100, d, 4096).ok());
  ASSERT_EQ(rec.image.size(), 100 + d.size());
  EXPECT_EQ(rec.zero_fills, 1u);
  EXPECT_EQ(rec.raws, 2u);  // head up to 4096 and tail past the last full block
}

}  // namespace
}  // namespace flashpipe::input
