#include "sparse/write_behind.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "base/endian.h"
#include "base/unique_fd.h"
#include "testing/sparse_builder.h"
#include "testing/temp_dir.h"

namespace flashpipe::sparse {
namespace {

using testing::SparseBuilder;
using testing::TempDir;

// What a WriteBehind is asked to do, applied to a vector in order.
struct Model {
  std::vector<uint8_t> bytes;
  void Put(uint64_t offset, std::span<const uint8_t> data) {
    if (bytes.size() < offset + data.size()) bytes.resize(offset + data.size(), 0);
    std::copy(data.begin(), data.end(), bytes.begin() + static_cast<ptrdiff_t>(offset));
  }
};

std::vector<uint8_t> Pattern(uint64_t length, uint32_t pattern) {
  std::vector<uint8_t> v(length);
  for (uint64_t i = 0; i < length; ++i) v[i] = static_cast<uint8_t>(pattern >> (8 * (i % 4)));
  return v;
}

// Runs `ops` random writes, fills, zeroed ranges and rewrites of recent bytes
// through a WriteBehind on a file and checks the file against the model.
void RandomOps(uint32_t seed, int ops, WriteBehindOptions options, bool* used_direct) {
  TempDir dir;
  std::string path = dir / "out";
  UniqueFd fd(::open(path.c_str(), O_RDWR | O_CREAT | O_EXCL, 0644));
  ASSERT_TRUE(fd.valid());
  std::mt19937 rng(seed);
  Model model;
  WriteBehind w(fd.get(), path, WriteBehind::Mode::kSeekable, options);
  for (int i = 0; i < ops; ++i) {
    uint64_t end = model.bytes.size();
    uint64_t len = rng() % 3 == 0 ? (rng() % 64 + 1) * 4096 : rng() % 20000 + 1;
    uint64_t offset = 0;
    switch (rng() % 4) {
      case 0: offset = end; break;                                      // append
      case 1: offset = end > 0 ? end - std::min<uint64_t>(end, rng() % 5000 + 1) : 0; break;  // patch
      case 2: offset = (rng() % ((end + 65536) / 4096)) * 4096; break;  // aligned, anywhere
      default: offset = rng() % (end + 65536); break;                   // anywhere
    }
    switch (rng() % 6) {
      case 0: {
        uint32_t p = rng();
        offset &= ~uint64_t{3};
        len = (len + 3) / 4 * 4;
        ASSERT_TRUE(w.Fill(offset, len, p).ok());
        model.Put(offset, Pattern(len, p));
        break;
      }
      case 1:
        ASSERT_TRUE(w.Zero(offset, len).ok());
        model.Put(offset, std::vector<uint8_t>(len, 0));
        break;
      default: {
        auto data = SparseBuilder::RandomBytes(len, rng());
        ASSERT_TRUE(w.Write(offset, data).ok());
        model.Put(offset, data);
      }
    }
  }
  Status s = w.Finish();
  ASSERT_TRUE(s.ok()) << s.ToString();
  ASSERT_EQ(::ftruncate(fd.get(), static_cast<off_t>(model.bytes.size())), 0);  // a hole punched past the end
  EXPECT_EQ(testing::ReadFile(path), model.bytes) << "seed " << seed;
  EXPECT_EQ(w.end(), model.bytes.size());
  *used_direct = w.direct_bytes() > 0;
}

TEST(WriteBehindTest, OverlappingWritesEndAsTheLastOneSays) {
  bool direct = false;
  for (uint32_t seed = 1; seed <= 6; ++seed) {
    bool used = false;
    RandomOps(seed, 300, {.buffer_size = 256 << 10, .buffers = 3}, &used);
    direct |= used;
  }
  TempDir dir;
  int probe = ::open((dir / "p").c_str(), O_WRONLY | O_CREAT | O_DIRECT, 0644);
  if (probe >= 0) {
    EXPECT_TRUE(direct) << "O_DIRECT works here, but nothing was written with it";
    ::close(probe);
  }
}

TEST(WriteBehindTest, ThroughThePageCacheOnlyTheBytesAreTheSame) {
  bool used = true;
  RandomOps(7, 300, {.buffer_size = 256 << 10, .buffers = 2, .direct = false}, &used);
  EXPECT_FALSE(used);
}

TEST(WriteBehindTest, OneBufferOfManySmallSegments) {
  bool used = false;
  RandomOps(8, 2000, {.buffer_size = 16 << 20, .buffers = 2}, &used);  // the 256-segment limit is reached
}

TEST(WriteBehindTest, AStreamIsWrittenInOrderAndRefusesToSeek) {
  int p[2];
  ASSERT_EQ(::pipe(p), 0);
  std::vector<uint8_t> got;
  std::thread reader([&] {
    uint8_t buf[4096];
    for (ssize_t n; (n = ::read(p[0], buf, sizeof buf)) > 0;) got.insert(got.end(), buf, buf + n);
  });
  Model model;
  {
    UniqueFd wr(p[1]);
    WriteBehind w(wr.get(), "stdout", WriteBehind::Mode::kStream, {.buffer_size = 65536, .buffers = 2});
    std::mt19937 rng(3);
    for (int i = 0; i < 100; ++i) {
      uint64_t len = rng() % 100000 + 1;
      if (i % 3 == 0) {
        len = len / 4 * 4 + 4;
        uint32_t pat = rng();
        ASSERT_TRUE(w.Fill(w.end(), len, pat).ok());
        model.Put(model.bytes.size(), Pattern(len, pat));
      } else {
        auto d = SparseBuilder::RandomBytes(len, rng());
        ASSERT_TRUE(w.Write(w.end(), d).ok());
        model.Put(model.bytes.size(), d);
      }
    }
    EXPECT_EQ(w.Write(0, std::vector<uint8_t>(8)).message(), "stdout: out-of-order write at 0x0 to a stream at 0x" +
                                                                 fmt::format("{:x}", model.bytes.size()));
    EXPECT_EQ(w.Zero(0, 4096).message(), "stdout: cannot punch a hole in a stream");
    ASSERT_TRUE(w.Finish().ok());
  }
  ::close(p[1]);
  reader.join();
  ::close(p[0]);
  EXPECT_EQ(got, model.bytes);
}

TEST(WriteBehindTest, AWriteErrorStopsTheWriterAndComesBackToTheProducer) {
  UniqueFd full(::open("/dev/full", O_WRONLY));
  ASSERT_TRUE(full.valid());
  WriteBehind w(full.get(), "/dev/full", WriteBehind::Mode::kStream, {.buffer_size = 65536, .buffers = 2});
  auto data = SparseBuilder::RandomBytes(1 << 20, 1);
  Status s;
  for (int i = 0; i < 64 && s.ok(); ++i) s = w.Write(w.end(), data);  // fails once the writer has failed
  EXPECT_EQ(s.ToString(), "write /dev/full at byte 0x0: No space left on device");
  EXPECT_EQ(w.Finish().ToString(), s.ToString());
}

// The writer fails part way (the file size limit stands in for a full disk:
// the same error path, but it can be set up without a filesystem of our own).
TEST(WriteBehindTest, AFailurePartWayIsReportedWithItsOffsetAndNothingAfterIt) {
  TempDir dir;
  std::string path = dir / "out";
  pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    ::signal(SIGXFSZ, SIG_IGN);
    rlimit lim{1 << 20, 1 << 20};
    ::setrlimit(RLIMIT_FSIZE, &lim);
    UniqueFd fd(::open(path.c_str(), O_RDWR | O_CREAT | O_EXCL, 0644));
    WriteBehind w(fd.get(), path, WriteBehind::Mode::kSeekable, {.buffer_size = 256 << 10, .buffers = 2});
    auto data = SparseBuilder::RandomBytes(3 << 20, 2);
    Status s = w.Write(0, data);
    Status f = w.Finish();
    bool ok = f.ToString() == "write " + path + " at byte 0x100000: File too large" && (s.ok() || s.ToString() == f.ToString());
    ::_exit(ok ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  struct stat st;
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_size, 1 << 20);
}

// A caller that forgets Finish (or returns early on an error of its own)
// still gets what it queued, as from a synchronous writer.
TEST(WriteBehindTest, DestroyedWithoutFinishStillWritesWhatWasQueued) {
  TempDir dir;
  UniqueFd fd(::open((dir / "out").c_str(), O_RDWR | O_CREAT | O_EXCL, 0644));
  auto data = SparseBuilder::RandomBytes((1 << 20) + 4000, 3);
  for (int i = 0; i < 3; ++i) {
    {
      WriteBehind w(fd.get(), "out", WriteBehind::Mode::kSeekable, {.buffer_size = 65536, .buffers = 3});
      ASSERT_TRUE(w.Write(uint64_t{1} << (20 + i), data).ok());
    }
    std::vector<uint8_t> got(data.size());
    ASSERT_EQ(::pread(fd.get(), got.data(), got.size(), off_t{1} << (20 + i)), static_cast<ssize_t>(got.size()));
    EXPECT_EQ(got, data);
  }
}

TEST(WriteBehindOutputTest, PatchesOfEarlierBytesLandWhereverTheyAre) {
  TempDir dir;
  UniqueFd fd(::open((dir / "out").c_str(), O_RDWR | O_CREAT | O_EXCL, 0644));
  ASSERT_EQ(::write(fd.get(), "pre", 3), 3);  // writing starts at the descriptor's position
  WriteBehindOutput out(fd.get(), "out", {.buffer_size = 65536, .buffers = 2});
  ASSERT_TRUE(out.seekable());
  std::vector<uint8_t> want{'p', 'r', 'e'};
  auto data = SparseBuilder::RandomBytes(300000, 4);
  ASSERT_TRUE(out.Write(std::span(data).first(1000), std::span(data).subspan(1000)).ok());
  want.insert(want.end(), data.begin(), data.end());
  // One patch long handed over to the writer, one in the buffer being filled, one across both.
  for (uint64_t at : {uint64_t{10}, uint64_t{299980}, uint64_t{3 * 65536 - 6}}) {
    std::vector<uint8_t> patch{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
    ASSERT_TRUE(out.WriteAt(at, patch).ok());
    std::copy(patch.begin(), patch.end(), want.begin() + 3 + static_cast<ptrdiff_t>(at));
  }
  ASSERT_TRUE(out.Finish().ok());
  EXPECT_EQ(::lseek(fd.get(), 0, SEEK_CUR), static_cast<off_t>(want.size()));  // as write(2) would leave it
  EXPECT_EQ(testing::ReadFile(dir / "out"), want);
}

}  // namespace
}  // namespace flashpipe::sparse
