// Landing: whatever the slicing, the pieces put back together are the image,
// every large RAW payload starts on a page, and the buffer bound holds.
#include "fastboot/download.h"

#include <gtest/gtest.h>
#include <sys/mman.h>

#include <unistd.h>

#include <chrono>
#include <random>
#include <thread>

#include "sparse/decoder.h"
#include "testing/sparse_builder.h"

namespace flashpipe::fastboot {
namespace {

using testing::SparseBuilder;

// A page-aligned buffer, as DownloadBuffer maps.
struct Buffer {
  explicit Buffer(size_t n) : size(n) {
    data = static_cast<uint8_t*>(::mmap(nullptr, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  }
  ~Buffer() { ::munmap(data, size); }
  std::span<uint8_t> span() { return {data, size}; }
  uint8_t* data;
  size_t size;
};

// Delivers `image` through a Landing in slices of at most `max_slice` bytes
// (and never more than the window), as a transport would.
struct Delivery {
  std::vector<uint8_t> joined;
  Status status;
  unsigned gaps = 0;
  std::vector<std::span<const uint8_t>> pieces;
  Landing landing;
};

void Deliver(const std::vector<uint8_t>& image, std::mt19937_64& rng, size_t max_slice, Buffer& buf, Delivery* d,
             bool prefault = false, std::shared_ptr<DownloadStream> stream = nullptr) {
  d->landing.Begin(buf.span(), image.size(), prefault, std::move(stream));
  uint64_t at = 0;
  while (d->landing.received() < image.size()) {
    std::span<uint8_t> w = d->landing.Window();
    ASSERT_FALSE(w.empty());
    size_t n = std::min<size_t>(w.size(), 1 + rng() % max_slice);
    std::memcpy(w.data(), image.data() + at, n);
    at += n;
    d->landing.Arrived(n);
  }
  EXPECT_TRUE(d->landing.Window().empty());
  d->status = d->landing.Finish();
  d->gaps = d->landing.gaps();
  d->pieces = d->landing.pieces();
  for (auto p : d->pieces) d->joined.insert(d->joined.end(), p.begin(), p.end());
}

// RAW payloads of >= 64 KiB start on a page; returns how many there were.
int CheckLargePayloadsAligned(const std::vector<std::span<const uint8_t>>& pieces) {
  struct Sink : sparse::NullSink {
    Status OnRaw(uint64_t, std::span<const uint8_t> data) override {
      // The first piece of a payload: raw_pending() still counts it whole.
      if (first() && d->raw_pending() >= ImageCheck::kAlignMin) {
        ++large;
        EXPECT_EQ(reinterpret_cast<uintptr_t>(data.data()) % 4096, 0u) << "payload at chunk " << d->chunks_done();
      }
      return Status::Ok();
    }
    bool first() {
      bool f = static_cast<int64_t>(d->chunks_done()) != last;
      last = d->chunks_done();
      return f;
    }
    sparse::Decoder* d = nullptr;
    int64_t last = -1;
    int large = 0;
  } sink;
  sparse::Decoder dec(&sink, {.check_crc = true, .tolerate_missing_tail = true});
  sink.d = &dec;
  for (auto p : pieces) EXPECT_TRUE(dec.Feed(p).ok());
  EXPECT_TRUE(dec.Finish().ok());
  return sink.large;
}

SparseBuilder Mixed(std::mt19937_64& rng, int chunks) {
  SparseBuilder b(4096);
  for (int i = 0; i < chunks; ++i) {
    switch (rng() % 5) {
      case 0: b.RawBlocks(16 + rng() % 64, static_cast<uint32_t>(rng())); break;  // >= 64 KiB
      case 1: b.RawBlocks(1 + rng() % 3, static_cast<uint32_t>(rng())); break;    // small
      case 2: b.Fill(1 + rng() % 8, static_cast<uint32_t>(rng())); break;
      case 3: b.DontCare(1 + rng() % 8); break;
      default: b.Fill(1 + rng() % 4, 0); break;
    }
  }
  b.Crc();
  return b;
}

TEST(LandingTest, PiecesAreTheImageAndLargePayloadsArePageAligned) {
  for (uint64_t seed = 1; seed <= 30; ++seed) {
    std::mt19937_64 rng(seed);
    SparseBuilder b = Mixed(rng, 40);
    auto image = b.Build();
    Buffer buf(Landing::CapacityFor(image.size()));
    size_t max_slice = std::array<size_t, 4>{1, 100, 70000, 1 << 22}[seed % 4];
    if (max_slice == 1 && image.size() > (4u << 20)) max_slice = 7;
    Delivery d;
    Deliver(image, rng, max_slice, buf, &d);
    if (HasFatalFailure()) return;
    ASSERT_TRUE(d.status.ok()) << d.status.ToString();
    EXPECT_EQ(d.joined, image) << "seed " << seed;
    int large = CheckLargePayloadsAligned(d.pieces);
    EXPECT_EQ(d.gaps <= static_cast<unsigned>(large), true) << "one gap per large payload at most";
    EXPECT_TRUE(d.landing.check().sparse());
    EXPECT_EQ(d.landing.check().image_size(), b.expanded().size());
  }
}

// What a stream's writer takes while the bytes arrive is, copied at the
// moment it is taken, the image in order: a published byte never moves.
TEST(LandingTest, AStreamHandsOutTheImageInOrderWhileItArrives) {
  for (uint64_t seed = 1; seed <= 24; ++seed) {
    std::mt19937_64 rng(seed);
    SparseBuilder b = Mixed(rng, 60);
    auto image = seed % 3 == 0 ? SparseBuilder::RandomBytes(300000 + seed, static_cast<uint32_t>(seed)) : b.Build();
    Buffer buf(Landing::CapacityFor(image.size()));
    size_t max_slice = std::array<size_t, 4>{13, 100, 70000, 1 << 22}[seed % 4];
    auto stream = std::make_shared<DownloadStream>(image.size());
    std::vector<uint8_t> taken;
    size_t takes = 0;
    std::thread writer([&] {
      for (;;) {
        auto spans = stream->Next(seed % 2 == 0 ? 1 : stream->step());
        ASSERT_TRUE(spans.ok()) << spans.status().ToString();
        if (spans->empty()) return;
        ++takes;
        for (auto s : *spans) taken.insert(taken.end(), s.begin(), s.end());
      }
    });
    Delivery d;
    Deliver(image, rng, max_slice, buf, &d, false, stream);
    writer.join();
    if (HasFatalFailure()) return;
    EXPECT_EQ(taken, image) << "seed " << seed;
    EXPECT_GE(takes, 1u);
  }
}

TEST(LandingTest, AnAbortedStreamHandsOutWhatArrivedThenTheError) {
  auto image = SparseBuilder::RandomBytes(1 << 20, 5);
  Buffer buf(Landing::CapacityFor(image.size()));
  auto stream = std::make_shared<DownloadStream>(image.size());
  Landing landing;
  landing.Begin(buf.span(), image.size(), false, stream);
  auto w = landing.Window();
  std::memcpy(w.data(), image.data(), 1000);
  landing.Arrived(1000);
  landing.Abort(Cancelled("client gone"));
  auto first = stream->Next(1 << 20);
  ASSERT_TRUE(first.ok());
  ASSERT_EQ(first->size(), 1u);
  EXPECT_EQ(std::vector<uint8_t>((*first)[0].begin(), (*first)[0].end()),
            std::vector<uint8_t>(image.begin(), image.begin() + 1000));
  auto second = stream->Next(1 << 20);
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().message(), "client gone");
  // A complete download is not aborted after the fact: its writer takes it all.
  auto done = std::make_shared<DownloadStream>(4);
  std::vector<std::span<const uint8_t>> none;
  done->Publish(none, std::span<const uint8_t>(image.data(), 4), 4);
  done->Abort(Cancelled("next download"));
  auto all = done->Next(1 << 20);
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(all->size(), 1u);
  auto end = done->Next(1 << 20);
  ASSERT_TRUE(end.ok());
  EXPECT_TRUE(end->empty());
}

// Pages of [from, to) present in `buf`.
uint64_t Resident(Buffer& buf, uint64_t from, uint64_t to) {
  std::vector<unsigned char> vec((to - from) / 4096);
  EXPECT_EQ(::mincore(buf.data + from, to - from, vec.data()), 0);
  uint64_t n = 0;
  for (unsigned char v : vec) n += v & 1;
  return n;
}

TEST(LandingTest, APrefaulterChangesNoByteOfTheImage) {
  for (uint64_t seed = 1; seed <= 4; ++seed) {
    std::mt19937_64 rng(seed);
    SparseBuilder b(4096);
    for (int i = 0; i < 24; ++i) b.RawBlocks(64 + rng() % 256, static_cast<uint32_t>(rng())).Fill(1 + rng() % 8, 7);
    auto image = b.Build();
    Buffer buf(Landing::CapacityFor(image.size()));
    Delivery d;
    Deliver(image, rng, std::array<size_t, 2>{70000, 1 << 22}[seed % 2], buf, &d, /*prefault=*/true);
    if (HasFatalFailure()) return;
    ASSERT_TRUE(d.status.ok()) << d.status.ToString();
    EXPECT_EQ(d.joined, image) << "seed " << seed;
  }
}

// Before a byte arrives, the buffer's first pages come in, and none past
// the download's size.
TEST(LandingTest, APrefaulterFaultsTheBufferInAheadOfTheBytes) {
  if (!Prefaulter::Supported()) GTEST_SKIP() << "no MADV_POPULATE_WRITE on this kernel";
  const uint64_t size = 24u << 20;
  Buffer buf(Landing::CapacityFor(64u << 20));
  Landing landing;
  landing.Begin(buf.span(), size, /*prefault=*/true);
  auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (Resident(buf, 0, size) < size / 4096 && std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  EXPECT_EQ(Resident(buf, 0, size), size / 4096);
  EXPECT_EQ(Resident(buf, size, buf.size / 4096 * 4096), 0u);
  landing.Abort();
}

// The worst case for the bound: every payload just over 64 KiB, each after a
// 16-byte FILL chunk that misaligns it, in one big slice each time.
TEST(LandingTest, WorstCaseGapsFitTheCapacity) {
  SparseBuilder b(4096);
  for (int i = 0; i < 200; ++i) b.Fill(1, 7).RawBlocks(16, i);
  auto image = b.Build();
  Buffer buf(Landing::CapacityFor(image.size()));
  std::mt19937_64 rng(9);
  Delivery d;
  Deliver(image, rng, 1 << 30, buf, &d);
  ASSERT_TRUE(d.status.ok()) << d.status.ToString();
  EXPECT_EQ(d.joined, image);
  EXPECT_EQ(CheckLargePayloadsAligned(d.pieces), 200);
  EXPECT_EQ(d.gaps, 200u);
}

TEST(LandingTest, RawImageIsOnePieceWithoutGaps) {
  auto image = SparseBuilder::RandomBytes(3 << 20, 4);
  Buffer buf(Landing::CapacityFor(image.size()));
  std::mt19937_64 rng(1);
  Delivery d;
  Deliver(image, rng, 100000, buf, &d);
  ASSERT_TRUE(d.status.ok());
  EXPECT_FALSE(d.landing.check().sparse());
  ASSERT_EQ(d.pieces.size(), 1u);
  EXPECT_EQ(d.pieces[0].data(), buf.data);
  EXPECT_EQ(d.joined, image);
}

TEST(LandingTest, BadCrcAndTruncationAreReported) {
  SparseBuilder b(4096);
  b.RawBlocks(20, 1).CrcValue(0xDEAD).RawBlocks(20, 2);
  auto image = b.Build();
  Buffer buf(Landing::CapacityFor(image.size()));
  std::mt19937_64 rng(2);
  Delivery d;
  Deliver(image, rng, 5000, buf, &d);
  EXPECT_NE(d.status.message().find("CRC32 0x0000dead"), std::string::npos) << d.status.ToString();

  auto cut = image;
  cut.resize(cut.size() - 10);
  Delivery t;
  Deliver(cut, rng, 5000, buf, &t);
  EXPECT_FALSE(t.status.ok());
  EXPECT_EQ(t.joined, cut);  // the bytes are all there, in order, to be refused
}

TEST(LandingTest, TinyDownloadsDecideAtTheEnd) {
  std::vector<uint8_t> image = {1, 2};
  Buffer buf(Landing::CapacityFor(image.size()));
  std::mt19937_64 rng(3);
  Delivery d;
  Deliver(image, rng, 1, buf, &d);
  ASSERT_TRUE(d.status.ok());
  EXPECT_FALSE(d.landing.check().sparse());
  EXPECT_EQ(d.joined, image);
}

}  // namespace
}  // namespace flashpipe::fastboot
