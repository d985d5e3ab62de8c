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
#include "testing/sparse_builder.h"
#include "testing/stdin_pipe.h"
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
  size_t file_sends = 0;  // payload sent as file spans
};

// What a device sender does: plan each part from the cursor, write it,
// lay it over a disk; `pause` after each payload piece.
// `files`: the output sends file spans (as TCP does), read here with pread.
Reader ReadAll(Cursor& c, uint64_t max_download, std::chrono::microseconds pause = 0us,
               std::atomic<bool>* stop_after_first = nullptr, bool files = false) {
  Reader r;
  auto shape = c.Shape();
  if (!shape.ok()) {
    r.status = shape.status();
    return r;
  }
  struct SlowOut : DataOut {
    testing::BytesOut inner;
    std::chrono::microseconds pause;
    bool files = false;
    size_t file_sends = 0;
    Status Send(std::span<const std::span<const uint8_t>> pieces) override {
      if (pause.count() > 0) std::this_thread::sleep_for(pause);
      return inner.Send(pieces);
    }
    bool can_send_file() const override { return files; }
    Status SendFile(std::span<const std::span<const uint8_t>> head, const FileSpan& f) override {
      std::vector<uint8_t> bytes(f.size);
      if (::pread(f.fd, bytes.data(), f.size, static_cast<off_t>(f.offset)) != static_cast<ssize_t>(f.size)) {
        return Corrupt("short file span");
      }
      ++file_sends;
      std::vector<std::span<const uint8_t>> all(head.begin(), head.end());
      all.emplace_back(bytes);
      return Send(all);
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
    out.files = files;
    r.status = WritePart(**part, *shape, c, c, out);
    r.file_sends += out.file_sends;
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

// A device stuck inside a send (a USB device that stopped taking data, up
// to the idle limit) holds the span it was given: the window goes on
// without it (the buffer is lent, the pool grows by one), the others finish
// while it is still stuck, and the bytes it holds stay the image's.
TEST_F(FeedTest, AReaderStuckInASendDoesNotStopTheOthers) {
  auto img = Image(16 << 20, 7);
  Write("s.img", img);
  ImageSpec spec{dir_ / "s.img"};
  auto plan = PlanImage(spec);
  FeedOptions o{.window_bytes = 1 << 20, .buffer_bytes = 256 << 10, .lag_limit = 200ms};
  auto feed = Feed::Start(spec, *plan, o, 2);
  auto held = feed->PayloadAt(1, 0, 64 << 10);  // member 1 takes a span, then is stuck
  ASSERT_TRUE(held.ok()) << held.status().ToString();
  Reader fast;
  std::thread tf([&] {
    Cursor c(feed, 0);
    fast = ReadAll(c, 1 << 20);
  });
  tf.join();  // with the stuck member holding the window, this never ends
  EXPECT_TRUE(fast.status.ok()) << fast.status.ToString();
  EXPECT_EQ(fast.disk, img);
  EXPECT_TRUE(feed->detached(1));
  ASSERT_EQ(held->size(), 64u << 10);
  std::vector<uint8_t> payload;  // the image's data blocks in order (every fifth block is zeros, not sent)
  for (size_t at = 0; payload.size() < held->size(); at += 4096) {
    if ((at / 4096) % 5 != 2) payload.insert(payload.end(), img.begin() + at, img.begin() + at + 4096);
  }
  EXPECT_TRUE(std::equal(held->begin(), held->end(), payload.begin())) << "a lent buffer was reused";
  EXPECT_FALSE(feed->PayloadAt(1, 64 << 10, 4096).ok());  // detached: its cursor reads alone from here
  EXPECT_LE(feed->buffers_made(), 5u);  // the window's four and the one lent
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
  // A compressed file is planned ahead now (decompressed once more); here
  // it is fed without its plan, as a pipe would be.
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
  testing::StdinPipe in(img);
  ImageSpec spec{"-"};
  FeedOptions o{.window_bytes = 1 << 20, .buffer_bytes = 64 << 10, .lag_limit = 100ms};
  auto feed = Feed::Start(spec, nullptr, o, 2);
  Reader fast, slow;
  std::thread ts([&] { Cursor c(feed, 1); slow = ReadAll(c, 1 << 20, 30ms); });
  std::thread tf([&] { Cursor c(feed, 0); fast = ReadAll(c, 1 << 20); });
  tf.join();
  ts.join();
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

// A planned sparse or raw file: a reader whose output sends files takes the
// payload from the image file as spans (the window reads nothing for it),
// one that does not reads the window, and both get the image; small RAW
// chunks are read into the stage, large ones go as spans. An image with a
// CRC32 chunk goes through the window (its check needs the bytes read), and
// a file changed since planning is refused.
TEST_F(FeedTest, ReadersThatSendFilesTakeThePayloadFromTheImageFile) {
  testing::SparseBuilder b(4096);
  b.RawBlocks(700, 1).Fill(5, 0x11223344).DontCare(40).RawBlocks(3, 2).Fill(2, 0).RawBlocks(1, 3).RawBlocks(300, 4);
  Write("s.simg", b.Build());
  ImageSpec spec{dir_ / "s.simg"};
  auto plan = PlanImage(spec);
  ASSERT_TRUE(plan.ok() && *plan) << plan.status().ToString();
  ASSERT_FALSE((*plan)->payload_in_file.empty());
  auto expanded = [&](const std::vector<uint8_t>& disk) {
    for (size_t i = 0; i < b.expanded().size(); ++i) {
      bool dont_care = i >= 705 * 4096 && i < 745 * 4096;
      if (disk[i] != (dont_care ? 0xDC : b.expanded()[i])) return false;
    }
    return true;
  };
  FeedOptions o{.window_bytes = 2 << 20, .buffer_bytes = 256 << 10};
  {
    auto feed = Feed::Start(spec, *plan, o, 1);
    Cursor c(feed, 0);
    Reader r = ReadAll(c, 1 << 20, 0us, nullptr, true);
    EXPECT_TRUE(r.status.ok()) << r.status.ToString();
    EXPECT_TRUE(expanded(r.disk));
    EXPECT_GE(r.file_sends, 4u);  // 700 + 300 blocks in parts of 1 MiB; 3 and 1 blocks are staged
    EXPECT_EQ(feed->buffers_made(), 0u);
  }
  {
    auto feed = Feed::Start(spec, *plan, o, 2);
    Reader by_file, by_window;
    std::thread t([&] {
      Cursor c(feed, 0);
      by_file = ReadAll(c, 3 << 20, 0us, nullptr, true);
    });
    Cursor c(feed, 1);
    by_window = ReadAll(c, 3 << 20);
    t.join();
    EXPECT_TRUE(by_file.status.ok() && by_window.status.ok()) << by_file.status.ToString() << by_window.status.ToString();
    EXPECT_TRUE(expanded(by_file.disk));
    EXPECT_TRUE(expanded(by_window.disk));
    EXPECT_GT(by_file.file_sends, 0u);
    EXPECT_EQ(by_window.file_sends, 0u);
    EXPECT_EQ(feed->detach_count(), 0u);
  }
  testing::SparseBuilder crc(4096);
  crc.RawBlocks(300, 5).Crc();
  Write("c.simg", crc.Build());
  auto crc_plan = PlanImage({dir_ / "c.simg"});
  ASSERT_TRUE(crc_plan.ok() && *crc_plan);
  EXPECT_TRUE((*crc_plan)->payload_in_file.empty());
  {
    Cursor c(Feed::Start({dir_ / "c.simg"}, *crc_plan, o, 1), 0);
    Reader r = ReadAll(c, 1 << 20, 0us, nullptr, true);
    EXPECT_TRUE(r.status.ok()) << r.status.ToString();
    EXPECT_EQ(r.file_sends, 0u);
    EXPECT_TRUE(std::equal(crc.expanded().begin(), crc.expanded().end(), r.disk.begin()));
  }
  // A raw file: its data blocks are its bytes at their own offsets; one of
  // an odd size (its last block padded) goes through the window.
  std::vector<uint8_t> raw(6 << 20);
  std::mt19937 rng(7);
  for (size_t i = 0; i < raw.size(); ++i) raw[i] = i >= (2 << 20) && i < (3 << 20) ? 0 : static_cast<uint8_t>(rng());
  Write("r.img", raw);
  auto raw_plan = PlanImage({dir_ / "r.img"});
  ASSERT_TRUE(raw_plan.ok() && *raw_plan);
  EXPECT_FALSE((*raw_plan)->payload_in_file.empty());
  {
    Cursor c(Feed::Start({dir_ / "r.img"}, *raw_plan, o, 1), 0);
    Reader r = ReadAll(c, 1 << 20, 0us, nullptr, true);
    EXPECT_TRUE(r.status.ok()) << r.status.ToString();
    EXPECT_GE(r.file_sends, 5u);
    EXPECT_EQ(r.disk, raw);
  }
  raw.resize(raw.size() - 100);
  Write("odd.img", raw);
  auto odd_plan = PlanImage({dir_ / "odd.img"});
  ASSERT_TRUE(odd_plan.ok() && *odd_plan);
  EXPECT_TRUE((*odd_plan)->payload_in_file.empty());
  std::this_thread::sleep_for(20ms);  // a time of change that differs
  Write("s.simg", b.Build());
  Cursor c(Feed::Start(spec, *plan, o, 1), 0);
  Reader r = ReadAll(c, 1 << 20, 0us, nullptr, true);
  EXPECT_EQ(r.status.code(), Code::kCorrupt);
  EXPECT_NE(r.status.message().find("changed since it was planned"), std::string::npos) << r.status.ToString();
}

// The window's reading checks CRC32 chunks only when the plan saw some (it
// does not CRC the RAW of an image without them): a bad CRC32 is caught, and
// an image that gained a CRC32 chunk since it was planned is refused.
TEST_F(FeedTest, TheWindowChecksCrcChunksThePlanSaw) {
  FeedOptions o{.window_bytes = 2 << 20, .buffer_bytes = 256 << 10};
  testing::SparseBuilder bad(4096);
  bad.RawBlocks(300, 5).CrcValue(0x12345678);
  Write("bad.simg", bad.Build());
  auto plan = PlanImage({dir_ / "bad.simg"});
  ASSERT_TRUE(plan.ok() && *plan) << plan.status().ToString();  // planning does not check CRC32
  EXPECT_TRUE((*plan)->crc_chunks);
  {
    Cursor c(Feed::Start({dir_ / "bad.simg"}, *plan, o, 1), 0);
    Reader r = ReadAll(c, 1 << 20);
    EXPECT_EQ(r.status.code(), Code::kCorrupt) << r.status.ToString();
  }
  testing::SparseBuilder plain(4096);
  plain.RawBlocks(300, 5);
  Write("p.simg", plain.Build());
  auto plain_plan = PlanImage({dir_ / "p.simg"});
  ASSERT_TRUE(plain_plan.ok() && *plain_plan);
  EXPECT_FALSE((*plain_plan)->crc_chunks);
  testing::SparseBuilder with_crc(4096);
  with_crc.RawBlocks(300, 5).Crc();
  Write("p.simg", with_crc.Build());
  Cursor c(Feed::Start({dir_ / "p.simg"}, *plain_plan, o, 1), 0);
  Reader r = ReadAll(c, 1 << 20);
  EXPECT_EQ(r.status.code(), Code::kCorrupt);
  EXPECT_NE(r.status.message().find("changed since it was planned"), std::string::npos) << r.status.ToString();
}

}  // namespace
}  // namespace flashpipe::host
