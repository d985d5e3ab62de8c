// ImageWriter on regular files: random event sequences (overlaid parts,
// unaligned block sizes, fills, skips) against an in-memory model, on every
// backend; zero modes; several devices; verify; first block last.
#include "io/image_writer.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include "base/crc32.h"
#include "io/queues.h"
#include "testing/fault_queue.h"
#include "testing/image_events.h"
#include "testing/reorder_queue.h"
#include "testing/temp_dir.h"

namespace flashpipe::io {
namespace {

using testing::Event;

struct Config {
  Backend backend = Backend::kUring;
  bool reorder = false;  // testing::ReorderQueue instead of the backend
  uint32_t blk = 4096;
  bool fresh = true;
  uint64_t request_size = 0;
  unsigned depth = 4;
  bool verify = true;
  bool first_block_last = false;
  int parts = 1;
};

// Sends one part's events, RAW split at random points, some of it through
// WriteRawFromFd from a source file.
void Replay(ImageWriter& w, const std::vector<Event>& part, uint32_t blk, std::mt19937_64& rng, int src_fd) {
  sparse::FileHeader h;
  h.blk_sz = blk;
  h.total_blks = static_cast<uint32_t>((part.back().offset + part.back().length) / blk);
  ASSERT_TRUE(w.OnHeader(h).ok());
  for (const Event& e : part) {
    Status s;
    if (e.kind == Event::kFill) s = w.OnFill(e.offset, e.length, e.pattern);
    if (e.kind == Event::kSkip) s = w.OnSkip(e.offset, e.length);
    if (e.kind == Event::kRaw && src_fd >= 0 && rng() % 3 == 0) {
      uint64_t in_off = rng() % 5000;
      ASSERT_EQ(pwrite(src_fd, e.data.data(), e.data.size(), in_off), static_cast<ssize_t>(e.data.size()));
      auto crc = w.WriteRawFromFd(e.offset, src_fd, in_off, e.data.size());
      ASSERT_TRUE(crc.ok()) << crc.status().ToString();
      EXPECT_EQ(*crc, Crc32Update(0, e.data.data(), e.data.size()));
    } else if (e.kind == Event::kRaw) {
      for (uint64_t at = 0; at < e.length && s.ok();) {
        uint64_t n = std::min<uint64_t>(e.length - at, 1 + rng() % (rng() % 2 ? 100 : 300000));
        s = w.OnRaw(e.offset + at, {e.data.data() + at, n});
        at += n;
      }
    }
    ASSERT_TRUE(s.ok()) << s.ToString();
  }
  ASSERT_TRUE(w.OnEnd().ok());
}

void ExpectSame(const std::vector<uint8_t>& got, const std::vector<uint8_t>& want, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  auto mm = std::mismatch(got.begin(), got.end(), want.begin());
  EXPECT_TRUE(mm.first == got.end()) << what << ": first difference at byte 0x" << std::hex
                                     << (mm.first - got.begin());
}

void RunRandom(const Config& c, uint64_t seed) {
  SCOPED_TRACE(::testing::Message() << "seed " << seed << " blk " << c.blk << " fresh " << c.fresh << " rs "
                                  << c.request_size << " depth " << c.depth << " fbl " << c.first_block_last
                                  << " parts " << c.parts);
  testing::TempDir dir;
  std::mt19937_64 rng(seed);
  uint64_t blocks = 40 + rng() % 700;
  uint64_t size = blocks * c.blk;
  std::string path = dir.File("target");
  std::vector<uint8_t> model;
  TargetOptions to;
  to.create = true;
  if (c.fresh) {
    to.truncate_to = size;
    model.assign(size, 0);
  } else {
    model = testing::RandomBytes(rng, size + (rng() % 2) * 8192);
    testing::WriteFile(path, model);
  }
  auto t = Target::Open(path, to);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  auto q = (*t)->MakeQueue(c.backend, c.depth);
  ASSERT_TRUE(q.ok()) << q.status().ToString();
  if (c.reorder) *q = std::make_unique<testing::ReorderQueue>((*t)->fd(), c.depth, seed);
  WriterOptions wo;
  wo.request_size = c.request_size;
  wo.queue_depth = c.depth;
  wo.verify = c.verify;
  wo.first_block_last = c.first_block_last;
  auto w = ImageWriter::Create({DeviceFor(**t, q->get())}, wo);
  ASSERT_TRUE(w.ok()) << w.status().ToString();
  int src = open(dir.File("source").c_str(), O_RDWR | O_CREAT, 0644);
  for (int p = 0; p < c.parts; ++p) {
    auto part = testing::RandomPart(rng, c.blk, blocks - (p ? rng() % (blocks / 2) : 0));
    Replay(**w, part, c.blk, rng, src);
    for (const Event& e : part) testing::ApplyToModel(e, model);
  }
  close(src);
  Status s = (*w)->Finish();
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ((*w)->stats().verified, c.verify);
  ExpectSame(testing::ReadFile(path), model, "target");
}

class WriterRandomTest : public ::testing::TestWithParam<Backend> {};

TEST_P(WriterRandomTest, MatchesModel) {
  std::mt19937_64 pick(static_cast<uint64_t>(GetParam()) * 1000);
  for (uint64_t seed = 1; seed <= 24; ++seed) {
    Config c;
    c.backend = GetParam();
    c.blk = std::array<uint32_t, 4>{512, 1024, 4096, 4096}[pick() % 4];
    c.fresh = pick() % 2;
    c.request_size = std::array<uint64_t, 3>{0, 64 * 1024, 256 * 1024}[pick() % 3];
    c.depth = 1 + pick() % 4;
    c.first_block_last = pick() % 3 == 0;
    c.parts = 1 + pick() % 3;
    RunRandom(c, seed);
    if (HasFatalFailure()) return;
  }
}

// Ops done in random order at completion time: overlapping requests (overlaid
// parts, read-modify-write of a block just written) must be ordered.
TEST(WriterOrderTest, OverlapsAreOrderedWhateverTheCompletionOrder) {
  std::mt19937_64 pick(77);
  for (uint64_t seed = 100; seed < 140; ++seed) {
    Config c;
    c.reorder = true;
    c.blk = std::array<uint32_t, 3>{512, 1024, 4096}[pick() % 3];
    c.fresh = pick() % 2;
    c.request_size = std::array<uint64_t, 2>{16 * 1024, 64 * 1024}[pick() % 2];
    c.depth = 2 + pick() % 7;
    c.first_block_last = pick() % 4 == 0;
    c.parts = 2 + pick() % 3;
    RunRandom(c, seed);
    if (HasFatalFailure()) return;
  }
}

INSTANTIATE_TEST_SUITE_P(Backends, WriterRandomTest,
                         ::testing::Values(Backend::kUring, Backend::kThreads, Backend::kSync),
                         [](const auto& info) {
                           return std::string(info.param == Backend::kUring     ? "io_uring"
                                              : info.param == Backend::kThreads ? "threads"
                                                                                : "sync");
                         });

// A file of `size` bytes on which one writer is set up.
struct FileRig {
  testing::TempDir dir;
  std::unique_ptr<Target> target;
  std::unique_ptr<IoQueue> queue;
  std::unique_ptr<testing::FaultQueue> fault;

  void Open(uint64_t size, bool fresh = true, Backend backend = Backend::kUring) {
    TargetOptions to;
    to.create = true;
    if (fresh) to.truncate_to = size;
    else testing::WriteFile(path(), std::vector<uint8_t>(size, 0xA5));
    auto t = Target::Open(path(), to);
    ASSERT_TRUE(t.ok()) << t.status().ToString();
    target = std::move(*t);
    auto q = target->MakeQueue(backend, 4);
    ASSERT_TRUE(q.ok());
    queue = std::move(*q);
    fault = std::make_unique<testing::FaultQueue>(queue.get());
  }
  std::string path() const { return dir.File("target"); }
  Device device() {
    Device d = DeviceFor(*target, fault.get());
    return d;
  }
  std::unique_ptr<ImageWriter> Writer(WriterOptions wo = {}) {
    auto w = ImageWriter::Create({device()}, wo);
    EXPECT_TRUE(w.ok()) << w.status().ToString();
    return w.ok() ? std::move(*w) : nullptr;
  }
};

uint64_t AllocatedBytes(const std::string& path) {
  struct stat st;
  stat(path.c_str(), &st);
  return static_cast<uint64_t>(st.st_blocks) * 512;
}

TEST(WriterZeroTest, AutoLeavesHolesOnFreshFile) {
  FileRig rig;
  rig.Open(16 << 20);
  auto w = rig.Writer();
  ASSERT_TRUE(w->OnFill(0, 15 << 20, 0).ok());
  std::vector<uint8_t> tail(1 << 20, 7);
  ASSERT_TRUE(w->OnRaw(15 << 20, tail).ok());
  ASSERT_TRUE(w->Finish().ok());
  EXPECT_LE(AllocatedBytes(rig.path()), 2u << 20);
  EXPECT_EQ(w->stats().bytes_zeroed, 15u << 20);
  EXPECT_EQ(w->stats().bytes_written, 1u << 20);
  auto got = testing::ReadFile(rig.path());
  EXPECT_TRUE(std::all_of(got.begin(), got.begin() + (15 << 20), [](uint8_t b) { return b == 0; }));
}

TEST(WriterZeroTest, AutoPunchesOldContent) {
  FileRig rig;
  rig.Open(8 << 20, /*fresh=*/false);
  auto w = rig.Writer();
  ASSERT_TRUE(w->OnFill(4096, (8 << 20) - 8192, 0).ok());
  ASSERT_TRUE(w->Finish().ok());
  auto got = testing::ReadFile(rig.path());
  EXPECT_EQ(got[4095], 0xA5);
  EXPECT_EQ(got[(8 << 20) - 4096], 0xA5);
  EXPECT_TRUE(std::all_of(got.begin() + 4096, got.end() - 4096, [](uint8_t b) { return b == 0; }));
  EXPECT_LE(AllocatedBytes(rig.path()), 1u << 20);
}

TEST(WriterZeroTest, WriteModeWritesRealZeros) {
  FileRig rig;
  rig.Open(8 << 20);
  WriterOptions wo;
  wo.zero_mode = ZeroMode::kWrite;
  auto w = rig.Writer(wo);
  ASSERT_TRUE(w->OnFill(0, 8 << 20, 0).ok());
  ASSERT_TRUE(w->Finish().ok());
  EXPECT_GE(AllocatedBytes(rig.path()), 8u << 20);
  EXPECT_EQ(w->stats().bytes_written, 8u << 20);
  EXPECT_EQ(w->stats().bytes_zeroed, 0u);
}

// Raw data carrying runs of zero blocks: runs of >= 64 KiB are zeroed
// (holes in a file), shorter ones and partial blocks are written; old content
// under a zeroed run reads back as zeros; --zero-mode write writes them all.
TEST(WriterZeroTest, ZeroRunsInsideRawDataAreZeroedNotWritten) {
  std::mt19937_64 rng(3);
  std::vector<uint8_t> data = testing::RandomBytes(rng, 4 << 20);
  std::fill(data.begin() + (1 << 20), data.begin() + (3 << 20), 0);        // 2 MiB run
  std::fill(data.begin() + 8192, data.begin() + 8192 + 32768, 0);          // 32 KiB: too short
  std::fill(data.begin() + (3 << 20) + 100, data.begin() + (3 << 20) + 200000, 0);  // unaligned edges
  for (ZeroMode mode : {ZeroMode::kAuto, ZeroMode::kWrite}) {
    FileRig rig;
    rig.Open(4 << 20, /*fresh=*/false);  // 0xA5 everywhere before
    WriterOptions wo;
    wo.zero_mode = mode;
    wo.verify = true;
    auto w = rig.Writer(wo);
    for (uint64_t at = 0; at < data.size(); at += 300000) {  // slices across the runs
      uint64_t n = std::min<uint64_t>(300000, data.size() - at);
      ASSERT_TRUE(w->OnRaw(at, {data.data() + at, n}).ok());
    }
    Status st = w->Finish();
    ASSERT_TRUE(st.ok()) << st.ToString();
    EXPECT_TRUE(w->stats().verified);
    ExpectSame(testing::ReadFile(rig.path()), data, mode == ZeroMode::kAuto ? "auto" : "write");
    if (mode == ZeroMode::kAuto) {
      EXPECT_GE(w->stats().bytes_zeroed, (2u << 20) + 180000);
      EXPECT_LE(w->stats().bytes_written, (2u << 20) - 150000);
      EXPECT_LE(AllocatedBytes(rig.path()), (2u << 20) + 200000);
    } else {
      EXPECT_EQ(w->stats().bytes_zeroed, 0u);
      EXPECT_EQ(w->stats().bytes_written, 4u << 20);
    }
  }
}

TEST(WriterZeroTest, ParseZeroMode) {
  EXPECT_EQ(*ParseZeroMode("write"), ZeroMode::kWrite);
  EXPECT_EQ(*ParseZeroMode("auto"), ZeroMode::kAuto);
  EXPECT_FALSE(ParseZeroMode("fast").ok());
}

TEST(WriterPatternTest, LargeFillUsesSharedPatternRequests) {
  FileRig rig;
  rig.Open(8 << 20);
  uint64_t max_write = 0;
  rig.fault->OnSubmit([&](const IoOp& op) {
    if (op.kind == OpKind::kWrite) max_write = std::max(max_write, op.length);
  });
  auto w = rig.Writer();
  ASSERT_TRUE(w->OnFill(0, 8 << 20, 0xDEADBEEF).ok());
  ASSERT_TRUE(w->Finish().ok());
  auto got = testing::ReadFile(rig.path());
  for (size_t i = 0; i < got.size(); i += 4) ASSERT_EQ(got[i] | got[i + 3] << 24, 0xEF | 0xDE << 24) << i;
  EXPECT_EQ(max_write, 1u << 20);
  EXPECT_EQ(w->stats().requests, 8u);
}

// Writers made one after another from a stock reuse its buffers, and a
// reused buffer (zeroed again) carries nothing of the last image.
TEST(WriterStockTest, SecondWriterReusesTheFirstWritersBuffers) {
  FileRig rig;
  rig.Open(8 << 20, /*fresh=*/false);
  BufferStock stock(64 << 20);
  WriterOptions wo;
  wo.stock = &stock;
  std::mt19937_64 rng(5);
  auto data = testing::RandomBytes(rng, 3 << 20);
  {
    auto w = rig.Writer(wo);
    ASSERT_TRUE(w->OnRaw(0, data).ok());
    ASSERT_TRUE(w->OnFill(3 << 20, 1 << 20, 0x01020304).ok());
    ASSERT_TRUE(w->Finish().ok());
  }
  size_t kept = stock.kept_bytes();
  EXPECT_GT(kept, 4u << 20);  // pool + patterns + scratch
  {
    auto w = rig.Writer(wo);
    EXPECT_EQ(stock.kept_bytes(), 0u);
    ASSERT_TRUE(w->OnRaw((4 << 20) + 100, {data.data(), 5000}).ok());  // unaligned: read-modify-write
    ASSERT_TRUE(w->Finish().ok());
  }
  EXPECT_GT(stock.reused(), 4u);
  EXPECT_EQ(stock.kept_bytes(), kept);
  auto got = testing::ReadFile(rig.path());
  EXPECT_TRUE(std::equal(data.begin(), data.end(), got.begin()));
  EXPECT_TRUE(std::equal(data.begin(), data.begin() + 5000, got.begin() + (4 << 20) + 100));
  EXPECT_EQ(got[(4 << 20) + 99], 0xA5);  // old content around the edit kept
  EXPECT_EQ(got[(4 << 20) + 5100], 0xA5);
}

// borrow_raw: overlapping RAW events, half of them from memory aligned like
// their image offsets (written straight from it), half not (staged), on
// every backend; the file ends up as the model says and verify passes.
TEST(WriterBorrowTest, AlignedStretchesFromCallerMemoryMatchModel) {
  constexpr uint64_t kSize = 4 << 20;
  for (Backend backend : {Backend::kUring, Backend::kThreads, Backend::kSync}) {
    for (uint64_t seed = 1; seed <= 6; ++seed) {
      std::mt19937_64 rng(seed);
      FileRig rig;
      rig.Open(kSize, /*fresh=*/seed % 2 == 0, backend);
      std::vector<uint8_t> model(kSize, seed % 2 == 0 ? 0 : 0xA5);
      AlignedBuffer src(kSize + 8192);
      for (auto& b : src.span()) b = static_cast<uint8_t>(rng());
      WriterOptions wo;
      wo.borrow_raw = true;
      wo.verify = true;
      wo.request_size = 256 * 1024;
      auto w = rig.Writer(wo);
      for (int k = 0; k < 24; ++k) {
        uint64_t off = rng() % kSize;
        if (k % 3 == 0) off = off / 4096 * 4096;
        uint64_t len = 1 + rng() % std::min<uint64_t>(1 << 20, kSize - off);
        const uint8_t* from = src.data() + off + (k % 2 ? 0 : 1 + rng() % 4000);
        ASSERT_TRUE(w->OnRaw(off, {from, len}).ok());
        std::copy(from, from + len, model.begin() + off);
      }
      Status st = w->Finish();
      ASSERT_TRUE(st.ok()) << st.ToString();
      EXPECT_TRUE(w->stats().verified);
      EXPECT_GT(w->stats().bytes_borrowed, 0u) << "seed " << seed;
      EXPECT_LT(w->stats().bytes_borrowed, w->stats().bytes_written);
      ExpectSame(testing::ReadFile(rig.path()), model, "borrow seed " + std::to_string(seed));
    }
  }
}

TEST(WriterProgressTest, ReportsGrowingProgressAndStats) {
  FileRig rig;
  rig.Open(64 << 20);
  std::vector<std::pair<uint64_t, uint64_t>> calls;
  WriterOptions wo;
  wo.progress = [&](uint64_t done, uint64_t total) { calls.push_back({done, total}); };
  auto w = rig.Writer(wo);
  sparse::FileHeader h;
  h.total_blks = (64 << 20) / 4096;
  ASSERT_TRUE(w->OnHeader(h).ok());
  std::vector<uint8_t> data(32 << 20, 9);
  ASSERT_TRUE(w->OnRaw(0, data).ok());
  ASSERT_TRUE(w->OnFill(32 << 20, 16 << 20, 0).ok());
  ASSERT_TRUE(w->OnSkip(48 << 20, 16 << 20).ok());
  ASSERT_TRUE(w->Finish().ok());
  ASSERT_GE(calls.size(), 3u);
  for (size_t i = 1; i < calls.size(); ++i) EXPECT_GE(calls[i].first, calls[i - 1].first);
  EXPECT_EQ(calls.back(), std::make_pair(uint64_t{64} << 20, uint64_t{64} << 20));
  const WriteStats& st = w->stats();
  EXPECT_EQ(st.image_size, 64u << 20);
  EXPECT_EQ(st.bytes_written, 32u << 20);
  EXPECT_EQ(st.bytes_zeroed, 16u << 20);
  EXPECT_EQ(st.bytes_skipped, 16u << 20);
  EXPECT_EQ(st.bytes_discarded, 0u);  // files: discard never applies
  EXPECT_EQ(st.requests, 32u);
}

TEST(WriterMultiTest, TwoDevicesFromOneEventStream) {
  testing::TempDir dir;
  std::mt19937_64 rng(7);
  const uint32_t blk = 1024;
  const uint64_t blocks = 3001, size = blocks * blk;
  std::vector<uint8_t> old_b = testing::RandomBytes(rng, size);
  testing::WriteFile(dir.File("b"), old_b);
  TargetOptions fresh;
  fresh.create = true;
  fresh.truncate_to = size;
  auto ta = Target::Open(dir.File("a"), fresh);
  auto tb = Target::Open(dir.File("b"), {});
  ASSERT_TRUE(ta.ok() && tb.ok());
  auto qa = (*ta)->MakeQueue(Backend::kUring, 4);
  auto qb = (*tb)->MakeQueue(Backend::kThreads, 2);
  WriterOptions wo;
  wo.verify = true;
  auto w = ImageWriter::Create({DeviceFor(**ta, qa->get()), DeviceFor(**tb, qb->get())}, wo);
  ASSERT_TRUE(w.ok());
  std::vector<uint8_t> model_a(size, 0), model_b = old_b;
  for (int p = 0; p < 2; ++p) {
    auto part = testing::RandomPart(rng, blk, blocks);
    Replay(**w, part, blk, rng, -1);
    for (const Event& e : part) {
      testing::ApplyToModel(e, model_a);
      testing::ApplyToModel(e, model_b);
    }
  }
  Status s = (*w)->Finish();
  ASSERT_TRUE(s.ok()) << s.ToString();
  ExpectSame(testing::ReadFile(dir.File("a")), model_a, "a");
  ExpectSame(testing::ReadFile(dir.File("b")), model_b, "b");
}

TEST(WriterVerifyTest, CatchesCorruptionAfterWrite) {
  FileRig rig;
  rig.Open(4 << 20);
  std::mt19937_64 rng(3);
  auto data = testing::RandomBytes(rng, 3 << 20);
  bool corrupted = false;
  rig.fault->BeforeSync([&] {
    if (corrupted) return;
    corrupted = true;
    int fd = open(rig.path().c_str(), O_WRONLY);
    uint8_t b = data[0x25123] ^ 0xFF;
    ASSERT_EQ(pwrite(fd, &b, 1, 0x25123), 1);
    close(fd);
  });
  WriterOptions wo;
  wo.verify = true;
  auto w = rig.Writer(wo);
  ASSERT_TRUE(w->OnRaw(0, data).ok());
  ASSERT_TRUE(w->OnFill(3 << 20, 1 << 20, 0x01020304).ok());
  Status s = w->Finish();
  EXPECT_EQ(s.code(), Code::kMismatch);
  EXPECT_NE(s.message().find("image offset 0x25000"), std::string::npos) << s.ToString();
  EXPECT_FALSE(w->stats().verified);
}

TEST(WriterVerifyTest, CatchesCorruptedFill) {
  FileRig rig;
  rig.Open(4 << 20);
  rig.fault->BeforeSync([&] {
    int fd = open(rig.path().c_str(), O_WRONLY);
    uint8_t b = 0x55;
    ASSERT_EQ(pwrite(fd, &b, 1, (2 << 20) + 9000), 1);
    close(fd);
  });
  WriterOptions wo;
  wo.verify = true;
  auto w = rig.Writer(wo);
  ASSERT_TRUE(w->OnFill(0, 4 << 20, 0).ok());
  Status s = w->Finish();
  EXPECT_EQ(s.code(), Code::kMismatch);
  EXPECT_NE(s.message().find("image offset 0x202000"), std::string::npos) << s.ToString();
}

TEST(WriterFirstBlockTest, FirstMiBWrittenAfterSync) {
  FileRig rig;
  rig.Open(6 << 20);
  int syncs = 0;
  std::vector<std::pair<uint64_t, int>> writes;  // offset, syncs before it
  rig.fault->OnSubmit([&](const IoOp& op) {
    if (op.kind == OpKind::kWrite) writes.push_back({op.offset, syncs});
  });
  rig.fault->BeforeSync([&] { ++syncs; });
  WriterOptions wo;
  wo.first_block_last = true;
  wo.verify = true;
  auto w = rig.Writer(wo);
  std::mt19937_64 rng(5);
  auto data = testing::RandomBytes(rng, 6 << 20);
  ASSERT_TRUE(w->OnRaw(0, data).ok());
  ASSERT_TRUE(w->Finish().ok());
  EXPECT_EQ(syncs, 2);
  ASSERT_FALSE(writes.empty());
  EXPECT_EQ(writes.back().first, 0u);
  EXPECT_EQ(writes.back().second, 1);
  for (size_t i = 0; i + 1 < writes.size(); ++i) {
    EXPECT_GE(writes[i].first, 1u << 20);
    EXPECT_EQ(writes[i].second, 0);
  }
  ExpectSame(testing::ReadFile(rig.path()), data, "target");
}

}  // namespace
}  // namespace flashpipe::io
