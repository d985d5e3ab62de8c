// The shared window: several readers of one image get it whole, in the
// window's memory; a reader that stops reading is detached after the lag
// limit and finishes on its own reading; one that leaves frees what it held;
// an image from a pipe cannot be read again for a reader that fell behind.
#include "host/feed.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <random>
#include <thread>

#include "testing/compress.h"
#include "testing/host_images.h"
#include "testing/temp_dir.h"

namespace flashpipe::host {
namespace {

using namespace std::chrono_literals;

std::vector<uint8_t> Image(size_t size, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> img(size);
  for (size_t at = 0; at < size; at += 4096) {
    bool zero = (at / 4096) % 5 == 2;
    for (size_t i = at; i < std::min(size, at + 4096); ++i) img[i] = zero ? 0 : static_cast<uint8_t>(rng());
  }
  return img;
}

struct Reader {
  std::vector<uint8_t> disk;
  Status status;
  size_t parts = 0;
  bool reopened = false;
};

// What a device sender does: plan each part from the cursor, write it,
// lay it over a disk; `pause` after each payload piece.
Reader ReadAll(Cursor& c, uint64_t max_download, std::chrono::microseconds pause = 0us,
               std::atomic<bool>* stop_after_first = nullptr) {
  Reader r;
  auto shape = c.Shape();
  if (!shape.ok()) {
    r.status = shape.status();
    return r;
  }
  struct SlowOut : DataOut {
    testing::BytesOut inner;
    std::chrono::microseconds pause;
    Status Send(std::span<const std::span<const uint8_t>> pieces) override {
      if (pause.count() > 0) std::this_thread::sleep_for(pause);
      return inner.Send(pieces);
    }
  };
  Position from;
  for (bool first = true;; first = false) {
    auto part = PlanPart(c, *shape, from, first,
                         {.max_bytes = std::min(max_download, c.max_part_bytes()), .max_chunks = c.max_part_chunks()});
    if (!part.ok()) {
      r.status = part.status();
      break;
    }
    if (!*part) break;
    c.PartStart((*part)->begin);
    SlowOut out;
    out.pause = pause;
    r.status = WritePart(**part, *shape, c, c, out);
    if (!r.status.ok()) break;
    EXPECT_TRUE(testing::Overlay(&r.disk, out.inner.bytes).ok());
    ++r.parts;
    from = (*part)->end;
    if (stop_after_first && *stop_after_first) break;
  }
  r.reopened = c.reopened();
  return r;
}

class FeedTest : public ::testing::Test {
 protected:
  void Write(const std::string& name, const std::vector<uint8_t>& bytes) { testing::WriteFile(dir_ / name, bytes); }
  testing::TempDir dir_;
};

TEST_F(FeedTest, EveryReaderGetsTheWholeImageInTheWindowsMemory) {
  auto img = Image(24 << 20, 1);
  Write("a.img", img);
  ImageSpec spec{dir_ / "a.img"};
  auto plan = PlanImage(spec);
  ASSERT_TRUE(plan.ok() && *plan);
  FeedOptions o{.window_bytes = 4 << 20, .buffer_bytes = 256 << 10};
  auto feed = Feed::Start(spec, *plan, o, 3);
  std::vector<Reader> got(3);
  std::vector<std::thread> threads;
  const uint64_t limits[] = {1 << 20, 3 << 20, 256 << 20};
  for (size_t i = 0; i < 3; ++i) {
    threads.emplace_back([&, i] {
      Cursor c(feed, i);
      got[i] = ReadAll(c, limits[i]);
    });
  }
  for (auto& t : threads) t.join();
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_TRUE(got[i].status.ok()) << got[i].status.ToString();
    EXPECT_EQ(got[i].disk, img) << "reader " << i;
    EXPECT_FALSE(got[i].reopened);
  }
  EXPECT_EQ(got[0].parts, 20u);  // 24 MiB, a fifth of it zero blocks, in parts of at most 1 MiB
  EXPECT_LE(feed->buffers_made(), 16u);  // 4 MiB of 256 KiB buffers
  EXPECT_EQ(feed->detach_count(), 0u);
}

TEST_F(FeedTest, ASlowReaderIsDetachedAndFinishesOnItsOwn) {
  auto img = Image(16 << 20, 2);
  Write("b.img", img);
  ImageSpec spec{dir_ / "b.img"};
  auto plan = PlanImage(spec);
  FeedOptions o{.window_bytes = 2 << 20, .buffer_bytes = 256 << 10, .lag_limit = 200ms,
                .private_window_bytes = 1 << 20};
  auto feed = Feed::Start(spec, *plan, o, 2);
  Reader fast, slow;
  std::chrono::steady_clock::time_point fast_done, slow_done;
  std::thread ts([&] {
    Cursor c(feed, 1);
    slow = ReadAll(c, 1 << 20, 10ms);  // 10 ms per send: about 2.5 s
    slow_done = std::chrono::steady_clock::now();
  });
  std::thread tf([&] {
    Cursor c(feed, 0);
    fast = ReadAll(c, 1 << 20);
    fast_done = std::chrono::steady_clock::now();
  });
  tf.join();
  ts.join();
  EXPECT_TRUE(fast.status.ok()) << fast.status.ToString();
  EXPECT_TRUE(slow.status.ok()) << slow.status.ToString();
  EXPECT_EQ(fast.disk, img);
  EXPECT_EQ(slow.disk, img);
  EXPECT_FALSE(fast.reopened);
  EXPECT_TRUE(slow.reopened);
  EXPECT_EQ(feed->detach_count(), 1u);
  EXPECT_LT(fast_done, slow_done - 1s) << "the fast reader waited for the slow one";
}

TEST_F(FeedTest, AReaderThatLeavesFreesTheWindow) {
  auto img = Image(16 << 20, 3);
  Write("c.img", img);
  ImageSpec spec{dir_ / "c.img"};
  auto plan = PlanImage(spec);
  FeedOptions o{.window_bytes = 2 << 20, .buffer_bytes = 256 << 10, .lag_limit = 60s};
  auto feed = Feed::Start(spec, *plan, o, 2);
  Reader fast;
  std::thread tf([&] {
    Cursor c(feed, 0);
    fast = ReadAll(c, 1 << 20);
  });
  {
    Cursor failing(feed, 1);
    std::atomic<bool> stop{true};
    Reader r = ReadAll(failing, 1 << 20, 0us, &stop);  // one part, then the device "fails"
    EXPECT_EQ(r.parts, 1u);
  }  // leaves
  tf.join();
  EXPECT_TRUE(fast.status.ok());
  EXPECT_EQ(fast.disk, img);
  EXPECT_EQ(feed->detach_count(), 0u);  // no lag: the window went on when it left
}

TEST_F(FeedTest, AnUnplannedImageIsPlannedInTheWindow) {
  auto img = Image((6 << 20) + 1234, 4);
  Write("d.img.zst", testing::Zstd(img));
  ImageSpec spec{dir_ / "d.img.zst"};
  auto plan = PlanImage(spec);
  ASSERT_TRUE(plan.ok());
  ASSERT_EQ(*plan, nullptr);
  FeedOptions o{.window_bytes = 1 << 20, .buffer_bytes = 64 << 10, .max_records = 64};
  auto feed = Feed::Start(spec, nullptr, o, 2);
  EXPECT_EQ(feed->max_part_bytes(), 512u << 10);
  std::vector<Reader> got(2);
  std::thread t0([&] { Cursor c(feed, 0); got[0] = ReadAll(c, 256 << 20); });
  std::thread t1([&] { Cursor c(feed, 1); got[1] = ReadAll(c, 100 << 10); });
  t0.join();
  t1.join();
  for (auto& r : got) {
    EXPECT_TRUE(r.status.ok()) << r.status.ToString();
    ASSERT_GE(r.disk.size(), img.size());
    EXPECT_TRUE(std::equal(img.begin(), img.end(), r.disk.begin()));
  }
  EXPECT_GE(got[0].parts, 10u);  // parts of at most half the window
  EXPECT_LE(feed->buffers_made(), 16u);
}

TEST_F(FeedTest, AReaderBehindOnAPipeFailsAndSaysWhy) {
  auto img = Image(8 << 20, 5);
  std::string fifo = dir_ / "pipe";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  std::thread writer([&] {
    int fd = ::open(fifo.c_str(), O_WRONLY);
    size_t done = 0;
    while (done < img.size()) {
      ssize_t n = ::write(fd, img.data() + done, img.size() - done);
      if (n <= 0) break;
      done += static_cast<size_t>(n);
    }
    ::close(fd);
  });
  ImageSpec spec{fifo};
  FeedOptions o{.window_bytes = 1 << 20, .buffer_bytes = 64 << 10, .lag_limit = 100ms};
  auto feed = Feed::Start(spec, nullptr, o, 2);
  Reader fast, slow;
  std::thread ts([&] { Cursor c(feed, 1); slow = ReadAll(c, 1 << 20, 30ms); });
  std::thread tf([&] { Cursor c(feed, 0); fast = ReadAll(c, 1 << 20); });
  tf.join();
  ts.join();
  writer.join();
  EXPECT_TRUE(fast.status.ok()) << fast.status.ToString();
  EXPECT_EQ(fast.disk, img);
  EXPECT_EQ(slow.status.code(), Code::kCancelled);
  EXPECT_NE(slow.status.message().find("cannot be read again"), std::string::npos) << slow.status.ToString();
}

TEST_F(FeedTest, AFileThatChangesAfterPlanningFails) {
  auto img = Image(4 << 20, 6);
  Write("e.img", img);
  ImageSpec spec{dir_ / "e.img"};
  auto plan = PlanImage(spec);
  img[100] ^= 0xff;
  for (size_t i = 2 * 4096; i < 3 * 4096; ++i) img[i] = 0x77;  // a zero block became data
  Write("e.img", img);
  auto feed = Feed::Start(spec, *plan, {}, 1);
  Cursor c(feed, 0);
  Reader r = ReadAll(c, 1 << 20);
  EXPECT_EQ(r.status.code(), Code::kCorrupt);
  EXPECT_NE(r.status.message().find("changed since it was planned"), std::string::npos) << r.status.ToString();
}

}  // namespace
}  // namespace flashpipe::host
