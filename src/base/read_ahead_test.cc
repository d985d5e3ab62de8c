#include "base/read_ahead.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <chrono>
#include <thread>
#include <vector>

#include "base/fd_io.h"
#include "testing/temp_dir.h"

namespace flashpipe {
namespace {

constexpr uint64_t kMiB = 1 << 20;

TEST(ReadAheadTest, AsksForAWindowAndRenewsItAtHalf) {
  ReadAhead ra(-1, 100 * kMiB, 8 * kMiB);
  ra.At(0);
  EXPECT_EQ(ra.asked_from(), 0u);
  EXPECT_EQ(ra.asked_to(), 8 * kMiB);
  EXPECT_EQ(ra.calls(), 1u);
  ra.At(4 * kMiB);  // exactly half left: enough
  EXPECT_EQ(ra.calls(), 1u);
  ra.At(4 * kMiB + 4096);
  EXPECT_EQ(ra.calls(), 2u);
  EXPECT_EQ(ra.asked_to(), 12 * kMiB + 4096);
}

TEST(ReadAheadTest, StopsAtTheEnd) {
  ReadAhead ra(-1, 10 * kMiB, 8 * kMiB);
  ra.At(6 * kMiB);
  EXPECT_EQ(ra.asked_to(), 10 * kMiB);
  ra.At(9 * kMiB);
  ra.At(10 * kMiB);
  EXPECT_EQ(ra.calls(), 1u);
  EXPECT_EQ(ra.asked_to(), 10 * kMiB);
}

TEST(ReadAheadTest, AJumpStartsANewWindow) {
  ReadAhead ra(-1, 100 * kMiB, 8 * kMiB);
  ra.At(0);
  ra.At(50 * kMiB);  // past what was asked for (a hole, a range not read)
  EXPECT_EQ(ra.asked_from(), 50 * kMiB);
  EXPECT_EQ(ra.asked_to(), 58 * kMiB);
  ra.At(kMiB);  // backwards
  EXPECT_EQ(ra.asked_from(), kMiB);
  EXPECT_EQ(ra.asked_to(), 9 * kMiB);
  EXPECT_EQ(ra.calls(), 3u);
}

// Pages of [offset, offset + len) of fd that are in the page cache.
size_t Resident(int fd, uint64_t offset, uint64_t len) {
  void* p = mmap(nullptr, len, PROT_READ, MAP_SHARED, fd, static_cast<off_t>(offset));
  if (p == MAP_FAILED) return 0;
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  std::vector<unsigned char> vec((len + page - 1) / page);
  size_t n = 0;
  if (mincore(p, len, vec.data()) == 0)
    for (unsigned char v : vec) n += v & 1;
  munmap(p, len);
  return n;
}

// The advice reaches the kernel: a file dropped from the page cache has its
// next window read in without the reader reading anything.
TEST(ReadAheadTest, TheKernelReadsTheWindow) {
  testing::TempDir dir;
  std::string path = dir / "input";
  int fd = open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  ASSERT_GE(fd, 0);
  std::vector<uint8_t> data(16 * kMiB, 0x5a);
  ASSERT_TRUE(PwriteAll(fd, data, 0, path).ok());
  ASSERT_EQ(fdatasync(fd), 0);
  ASSERT_EQ(posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED), 0);
  const size_t pages = 8 * kMiB / static_cast<size_t>(sysconf(_SC_PAGESIZE));
  if (Resident(fd, 0, 8 * kMiB) == pages) {
    close(fd);
    GTEST_SKIP() << "this filesystem keeps the file in memory (tmpfs?): nothing to read ahead";
  }
  ASSERT_LT(Resident(fd, 0, 8 * kMiB), pages / 2);
  ReadAhead ra(fd, 16 * kMiB, 8 * kMiB);
  ra.At(0);
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (Resident(fd, 0, 8 * kMiB) < pages && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  EXPECT_EQ(Resident(fd, 0, 8 * kMiB), pages);
  close(fd);
}

}  // namespace
}  // namespace flashpipe
