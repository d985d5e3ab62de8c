#include "sparse/read_ahead.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "base/unique_fd.h"
#include "testing/sparse_builder.h"
#include "testing/temp_dir.h"

namespace flashpipe::sparse {
namespace {

using testing::SparseBuilder;
using testing::TempDir;

struct Read {
  std::vector<ReadAhead::Piece> pieces;  // data spans are dangling: offsets and sizes only
  std::vector<uint8_t> bytes;
  Status status;
};

// Every piece until the end or an error.
Read ReadAll(ReadAhead& in) {
  Read r;
  for (;;) {
    Result<ReadAhead::Piece> p = in.Next();
    if (!p.ok()) {
      r.status = p.status();
      return r;
    }
    if (p->data.empty()) return r;
    r.pieces.push_back(*p);
    r.bytes.insert(r.bytes.end(), p->data.begin(), p->data.end());
  }
}

std::string WriteTemp(const TempDir& dir, const std::vector<uint8_t>& bytes) {
  std::string path = dir / "in";
  testing::WriteFile(path, bytes);
  return path;
}

// A source of ranges from a list, failing after it when `fail` is set.
RangeSource Ranges(std::vector<ByteRange> list, bool fail = false) {
  return [list, fail, i = size_t{0}]() mutable -> Result<std::optional<ByteRange>> {
    if (i < list.size()) return std::optional<ByteRange>(list[i++]);
    if (fail) return IoError("lseek(SEEK_DATA) in: failed on purpose", EIO);
    return std::optional<ByteRange>();
  };
}

TEST(ReadAheadTest, ManyThreadsHandOutTheFileInOrder) {
  TempDir dir;
  auto data = SparseBuilder::RandomBytes((1 << 20) + 12345, 1);
  UniqueFd fd(::open(WriteTemp(dir, data).c_str(), O_RDONLY));
  ReadAhead in(fd.get(), "in", ReadAhead::OneRange(0, ReadAhead::kToEof),
               {.buffer_size = 64 << 10, .buffers = 5, .threads = 4});
  Read r = ReadAll(in);
  ASSERT_TRUE(r.status.ok()) << r.status.ToString();
  EXPECT_EQ(r.bytes, data);
  uint64_t at = 0;
  for (const auto& p : r.pieces) {
    EXPECT_EQ(p.offset, at);
    EXPECT_LE(p.data.size(), 64u << 10);
    at += p.data.size();
  }
  EXPECT_EQ(r.pieces.size(), 17u);  // 16 full pieces and the 12345-byte tail
  // The end is sticky.
  auto end = in.Next();
  ASSERT_TRUE(end.ok());
  EXPECT_TRUE(end->data.empty());
  EXPECT_EQ(end->offset, data.size());
}

TEST(ReadAheadTest, PiecesNeverSpanTwoRangesAndUnalignedStartsRealign) {
  TempDir dir;
  auto data = SparseBuilder::RandomBytes(300000, 2);
  UniqueFd fd(::open(WriteTemp(dir, data).c_str(), O_RDONLY));
  std::vector<ByteRange> ranges{{0, 5000}, {8192, 70000}, {100001, 20000}, {200000, 10}};
  ReadAhead in(fd.get(), "in", Ranges(ranges), {.buffer_size = 16384, .buffers = 3, .threads = 2});
  Read r = ReadAll(in);
  ASSERT_TRUE(r.status.ok()) << r.status.ToString();
  std::vector<uint8_t> want;
  for (const ByteRange& b : ranges) want.insert(want.end(), data.begin() + b.offset, data.begin() + b.offset + b.length);
  EXPECT_EQ(r.bytes, want);
  size_t k = 0;
  uint64_t at = ranges[0].offset;
  for (const auto& p : r.pieces) {
    if (at == ranges[k].offset + ranges[k].length) at = ranges[++k].offset;
    EXPECT_EQ(p.offset, at) << "piece of range " << k;
    at += p.data.size();
    EXPECT_LE(at, ranges[k].offset + ranges[k].length);
  }
  EXPECT_EQ(k, ranges.size() - 1);
  // 100001 is not 4096-aligned: its first piece stops at 114688 so the next starts aligned.
  bool realigned = false;
  for (const auto& p : r.pieces) realigned |= p.offset == 100001 && p.data.size() == 114688 - 100001;
  EXPECT_TRUE(realigned);
}

TEST(ReadAheadTest, ARangePastTheEndStopsAtEndOfFileAndTheNextRangeIsRead) {
  TempDir dir;
  auto data = SparseBuilder::RandomBytes(100000, 3);
  UniqueFd fd(::open(WriteTemp(dir, data).c_str(), O_RDONLY));
  ReadAhead in(fd.get(), "in", Ranges({{90000, 1 << 20}, {0, 10}}), {.buffer_size = 4096, .buffers = 4, .threads = 3});
  Read r = ReadAll(in);
  ASSERT_TRUE(r.status.ok()) << r.status.ToString();
  std::vector<uint8_t> want(data.begin() + 90000, data.end());
  want.insert(want.end(), data.begin(), data.begin() + 10);
  EXPECT_EQ(r.bytes, want);
  EXPECT_EQ(r.pieces.back().offset, 0u);
}

TEST(ReadAheadTest, AStreamIsReadInOrderWhateverTheWriterSlicing) {
  auto data = SparseBuilder::RandomBytes(300000, 4);
  int p[2];
  ASSERT_EQ(::pipe(p), 0);
  std::thread writer([&] {
    for (size_t off = 0; off < data.size();) {
      off += static_cast<size_t>(::write(p[1], data.data() + off, std::min<size_t>(777, data.size() - off)));
      if (off % 7 == 0) std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
    ::close(p[1]);
  });
  UniqueFd rd(p[0]);
  auto in = ReadAhead::Stream(rd.get(), "stdin", 28, {.buffer_size = 65536, .buffers = 2});
  Read r = ReadAll(*in);
  writer.join();
  ASSERT_TRUE(r.status.ok()) << r.status.ToString();
  EXPECT_EQ(r.bytes, data);
  EXPECT_EQ(r.pieces.front().offset, 28u);
  for (size_t i = 0; i + 1 < r.pieces.size(); ++i) EXPECT_EQ(r.pieces[i].data.size(), 65536u);  // short reads joined
}

TEST(ReadAheadTest, AReadErrorComesInItsPlaceWithNameAndOffset) {
  UniqueFd dir(::open("/tmp", O_RDONLY | O_DIRECTORY));
  ReadAhead in(dir.get(), "/tmp", ReadAhead::OneRange(8192, 100), {.buffer_size = 4096, .buffers = 3, .threads = 2});
  Read r = ReadAll(in);
  EXPECT_EQ(r.status.ToString(), "read /tmp at byte 0x2000: Is a directory");
  EXPECT_EQ(in.Next().status().ToString(), r.status.ToString());  // sticky
}

TEST(ReadAheadTest, ARangeSourceErrorComesAfterEveryPieceBeforeIt) {
  TempDir dir;
  auto data = SparseBuilder::RandomBytes(50000, 5);
  UniqueFd fd(::open(WriteTemp(dir, data).c_str(), O_RDONLY));
  ReadAhead in(fd.get(), "in", Ranges({{0, 20000}, {30000, 20000}}, /*fail=*/true),
               {.buffer_size = 4096, .buffers = 4, .threads = 3});
  Read r = ReadAll(in);
  EXPECT_EQ(r.status.ToString(), "lseek(SEEK_DATA) in: failed on purpose: Input/output error");
  std::vector<uint8_t> want(data.begin(), data.begin() + 20000);
  want.insert(want.end(), data.begin() + 30000, data.end());
  EXPECT_EQ(r.bytes, want);
}

TEST(ReadAheadTest, TheConsumerMayStopAtAnyTime) {
  TempDir dir;
  auto data = SparseBuilder::RandomBytes(4 << 20, 6);
  UniqueFd fd(::open(WriteTemp(dir, data).c_str(), O_RDONLY));
  for (int stop_after = 0; stop_after < 4; ++stop_after) {
    ReadAhead in(fd.get(), "in", ReadAhead::OneRange(0, ReadAhead::kToEof),
                 {.buffer_size = 65536, .buffers = 4, .threads = 3});
    for (int i = 0; i < stop_after; ++i) {
      auto p = in.Next();
      ASSERT_TRUE(p.ok());
      EXPECT_EQ(p->offset, uint64_t{65536} * i);
    }
  }  // each ReadAhead is destroyed with reads in flight: no hang, no leak (ASan)
}

TEST(ReadAheadTest, ColdFileIsReadDirectAndCachedFileFromTheCache) {
  TempDir dir;
  auto data = SparseBuilder::RandomBytes(2 << 20, 7);
  std::string path = WriteTemp(dir, data);
  UniqueFd fd(::open(path.c_str(), O_RDONLY));
  bool direct_works = UniqueFd(::open(path.c_str(), O_RDONLY | O_DIRECT)).valid();
  {
    // Just written: in the page cache, so read from it.
    ReadAhead in(fd.get(), "in", ReadAhead::OneRange(0, ReadAhead::kToEof), {.buffer_size = 1 << 20});
    Read r = ReadAll(in);
    EXPECT_EQ(r.bytes, data);
    EXPECT_EQ(in.cached_bytes(), data.size());
  }
  ASSERT_EQ(::fdatasync(fd.get()), 0);
  ASSERT_EQ(::posix_fadvise(fd.get(), 0, 0, POSIX_FADV_DONTNEED), 0);
  ReadAhead in(fd.get(), "in", ReadAhead::OneRange(0, ReadAhead::kToEof), {.buffer_size = 1 << 20});
  Read r = ReadAll(in);
  EXPECT_EQ(r.bytes, data);
  // Where the filesystem has O_DIRECT (ext4, xfs; not every tmpfs) a cold file bypasses the cache.
  EXPECT_EQ(in.direct_bytes(), direct_works ? data.size() : 0u);
  EXPECT_EQ(in.direct_bytes() + in.cached_bytes(), data.size());
}

}  // namespace
}  // namespace flashpipe::sparse
