// Prefaulter: pages become resident (mincore) ahead of the receiver and
// only there, never past the region, never behind the receiver, without
// changing a byte; it stops at the end and on destruction.
#include "base/prefaulter.h"

#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <thread>
#include <vector>

namespace flashpipe {
namespace {

constexpr uint64_t kMiB = 1u << 20;
const uint64_t kPage = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));

// An anonymous mapping nothing has touched (no huge pages: mincore then
// counts exactly what was populated).
class Mapping {
 public:
  explicit Mapping(uint64_t size) : size_(size) {
    void* p = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    data_ = p == MAP_FAILED ? nullptr : static_cast<uint8_t*>(p);
    if (data_ != nullptr) (void)::madvise(data_, size, MADV_NOHUGEPAGE);
  }
  ~Mapping() {
    if (data_ != nullptr) ::munmap(data_, size_);
  }
  uint8_t* data() { return data_; }
  std::span<uint8_t> span(uint64_t n) { return {data_, n}; }
  // Resident pages in [from, to) bytes.
  uint64_t Resident(uint64_t from, uint64_t to) {
    std::vector<unsigned char> vec((to - from) / kPage);
    if (::mincore(data_ + from, to - from, vec.data()) != 0) return UINT64_MAX;
    uint64_t n = 0;
    for (unsigned char v : vec) n += v & 1;
    return n;
  }

 private:
  uint64_t size_;
  uint8_t* data_;
};

#define REQUIRE_SUPPORT() \
  if (!Prefaulter::Supported()) GTEST_SKIP() << "no MADV_POPULATE_WRITE on this kernel"

TEST(PrefaulterTest, StaysABoundedDistanceAheadOfTheReceiver) {
  REQUIRE_SUPPORT();
  Mapping m(64 * kMiB);
  ASSERT_NE(m.data(), nullptr);
  Prefaulter p(m.span(64 * kMiB), {.step = 4 * kMiB, .ahead = 16 * kMiB});
  p.WaitIdle();
  EXPECT_FALSE(p.stopped());
  EXPECT_EQ(p.populated(), 16 * kMiB);
  EXPECT_EQ(p.skipped(), 0u);
  EXPECT_EQ(m.Resident(0, 16 * kMiB), 16 * kMiB / kPage);
  EXPECT_EQ(m.Resident(16 * kMiB, 64 * kMiB), 0u);

  // The receiver is at 6 MiB: room for one more step, not two.
  p.Advance(6 * kMiB);
  p.WaitIdle();
  EXPECT_EQ(p.populated(), 20 * kMiB);
  EXPECT_EQ(m.Resident(0, 20 * kMiB), 20 * kMiB / kPage);
  EXPECT_EQ(m.Resident(20 * kMiB, 64 * kMiB), 0u);
}

TEST(PrefaulterTest, NeverFaultsPagesTheReceiverPassed) {
  REQUIRE_SUPPORT();
  Mapping m(64 * kMiB);
  ASSERT_NE(m.data(), nullptr);
  Prefaulter p(m.span(64 * kMiB), {.step = 4 * kMiB, .ahead = 8 * kMiB});
  p.WaitIdle();
  ASSERT_EQ(p.populated(), 8 * kMiB);
  p.Advance(30 * kMiB + 100);  // the receiver ran past the thread
  p.WaitIdle();
  // A step past the receiver's page (the receiver faults that one), then
  // on up to 8 MiB ahead of it.
  EXPECT_EQ(m.Resident(8 * kMiB, 34 * kMiB), 0u);
  EXPECT_EQ(p.populated(), 30 * kMiB + 8 * kMiB);
  EXPECT_EQ(p.skipped(), 26 * kMiB);
  EXPECT_EQ(m.Resident(34 * kMiB, 38 * kMiB), 4 * kMiB / kPage);
  EXPECT_EQ(m.Resident(38 * kMiB, 64 * kMiB), 0u);
}

TEST(PrefaulterTest, NeverRunsPastTheRegion) {
  REQUIRE_SUPPORT();
  Mapping m(32 * kMiB);
  ASSERT_NE(m.data(), nullptr);
  const uint64_t size = 10 * kMiB + 5 * kPage + 100;  // not a whole number of steps or pages
  Prefaulter p(m.span(size), {.step = 4 * kMiB, .ahead = 64 * kMiB});
  p.WaitIdle();
  EXPECT_TRUE(p.stopped());
  EXPECT_EQ(p.populated(), size / kPage * kPage);
  EXPECT_EQ(m.Resident(0, size / kPage * kPage), size / kPage);
  // The partial last page is the receiver's own to fault.
  EXPECT_EQ(m.Resident(size / kPage * kPage, 32 * kMiB), 0u);
}

TEST(PrefaulterTest, ARegionOffAPageStartsAtItsFirstWholePage) {
  REQUIRE_SUPPORT();
  Mapping m(16 * kMiB);
  ASSERT_NE(m.data(), nullptr);
  Prefaulter p(std::span<uint8_t>(m.data() + 100, 8 * kMiB), {.step = kMiB, .ahead = 64 * kMiB});
  p.WaitIdle();
  EXPECT_TRUE(p.stopped());
  EXPECT_EQ(m.Resident(0, kPage), 0u);
  EXPECT_EQ(m.Resident(kPage, 8 * kMiB), 8 * kMiB / kPage - 1);
  EXPECT_EQ(m.Resident(8 * kMiB, 16 * kMiB), 0u);
}

TEST(PrefaulterTest, ChangesNoByteTheReceiverWrote) {
  REQUIRE_SUPPORT();
  Mapping m(32 * kMiB);
  ASSERT_NE(m.data(), nullptr);
  // Bytes written before the thread gets there, in pages it will populate.
  for (uint64_t off = 0; off < 32 * kMiB; off += 64 * 1024) m.data()[off + 7] = static_cast<uint8_t>(off >> 16);
  {
    Prefaulter p(m.span(32 * kMiB), {.step = kMiB, .ahead = 64 * kMiB});
    // And bytes written while it runs.
    for (uint64_t off = 4096; off < 32 * kMiB; off += 64 * 1024) m.data()[off] = 0xA5;
    p.WaitIdle();
    EXPECT_TRUE(p.stopped());
  }
  EXPECT_EQ(m.Resident(0, 32 * kMiB), 32 * kMiB / kPage);
  for (uint64_t off = 0; off < 32 * kMiB; off += 64 * 1024) {
    ASSERT_EQ(m.data()[off + 7], static_cast<uint8_t>(off >> 16)) << off;
    ASSERT_EQ(m.data()[off + 4096], 0xA5) << off;
  }
}

TEST(PrefaulterTest, StopsWhenTheReceiverIsDone) {
  REQUIRE_SUPPORT();
  Mapping m(64 * kMiB);
  ASSERT_NE(m.data(), nullptr);
  Prefaulter p(m.span(64 * kMiB), {.step = 4 * kMiB, .ahead = 8 * kMiB});
  p.WaitIdle();
  p.Advance(64 * kMiB);  // every byte is in: nothing left to prepare
  p.WaitIdle();
  EXPECT_TRUE(p.stopped());
  EXPECT_EQ(m.Resident(8 * kMiB, 64 * kMiB), 0u);
}

TEST(PrefaulterTest, StopsOnDestruction) {
  REQUIRE_SUPPORT();
  const uint64_t size = 2048 * kMiB;  // far more than it can populate before it is told to stop
  Mapping m(size);
  ASSERT_NE(m.data(), nullptr);
  {
    Prefaulter p(m.span(size), {.step = kMiB, .ahead = size});
    while (p.populated() == 0) std::this_thread::yield();
  }
  uint64_t at_stop = m.Resident(0, size);
  EXPECT_LT(at_stop, size / kPage);
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(m.Resident(0, size), at_stop);  // nothing ran on after it returned
}

TEST(PrefaulterTest, AnEmptyRegionStopsAtOnce) {
  Mapping m(kPage);
  Prefaulter p(std::span<uint8_t>(m.data(), 0));
  p.WaitIdle();
  EXPECT_TRUE(p.stopped());
  EXPECT_EQ(p.populated(), 0u);
}

}  // namespace
}  // namespace flashpipe
