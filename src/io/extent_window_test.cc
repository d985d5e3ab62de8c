// The writer on a window of several extents (a logical partition): every op
// lands inside one extent (a queue that aborts otherwise), the extents end up
// holding the image in order, and nothing outside them changes.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstdio>

#include "io/extent_map.h"
#include "io/image_writer.h"
#include "io/queues.h"
#include "testing/image_events.h"
#include "testing/reorder_queue.h"
#include "testing/temp_dir.h"

namespace flashpipe::io {
namespace {

using testing::Event;

TEST(ExtentMapTest, SplitsAtExtentBoundaries) {
  auto m = ExtentMap::Create("dev", {{8192, 4096}, {0, 8192}, {65536, 4096}}, 1 << 20, 4096);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ(m->size(), 16384u);
  std::vector<std::string> pieces;
  ASSERT_TRUE(m->Split(2048, 12288, [&](uint64_t dev, uint64_t at, uint64_t n) {
                 pieces.push_back(fmt::format("{}@{}+{}", at, dev, n));
                 return Status::Ok();
               }).ok());
  EXPECT_EQ(pieces, (std::vector<std::string>{"0@10240+2048", "2048@0+8192", "10240@65536+2048"}));
  EXPECT_EQ(m->DeviceOffset(12288), 65536u);
  int calls = 0;
  Status s = m->Split(12288, 8192, [&](uint64_t, uint64_t, uint64_t) { ++calls; return Status::Ok(); });
  EXPECT_EQ(s.message(), "8192 bytes at image offset 0x3000 run past the 16384 bytes of the window's extents");
  EXPECT_EQ(calls, 0);  // refused whole, before any piece
}

TEST(ExtentMapTest, RefusesBadExtents) {
  EXPECT_EQ(ExtentMap::Create("dev", {{0, 8192}, {4096, 4096}}, 1 << 20, 4096).status().message(),
            "dev: extents overlap at device offset 0x1000");
  EXPECT_EQ(ExtentMap::Create("dev", {{0, 8192}, {(1 << 20) - 4096, 8192}}, 1 << 20, 4096).status().message(),
            "dev: extent 1 (device offset 0xff000, 8192 bytes) runs past the device's 1048576 bytes");
  EXPECT_EQ(ExtentMap::Create("dev", {{512, 4096}}, 1 << 20, 4096).status().message(),
            "dev: extent 0 (device offset 0x200, 4096 bytes) is not whole 4096-byte blocks");
  EXPECT_EQ(ExtentMap::Create("dev", {}, 1 << 20, 4096).status().message(), "dev: a window of no extents");
}

// An IoQueue that aborts the process on any op not inside exactly one of
// `extents`: the writer must never issue one.
class ExtentGuardQueue final : public IoQueue {
 public:
  ExtentGuardQueue(IoQueue* inner, std::vector<DeviceExtent> extents) : inner_(inner), extents_(std::move(extents)) {}
  std::string_view name() const override { return "extent-guard"; }
  unsigned depth() const override { return inner_->depth(); }
  unsigned in_flight() const override { return inner_->in_flight(); }
  Status Submit(const IoOp& op) override {
    bool inside = std::any_of(extents_.begin(), extents_.end(), [&](const DeviceExtent& e) {
      return op.offset >= e.device_offset && op.length <= e.device_offset + e.length - op.offset;
    });
    if (!inside || op.length == 0) {
      std::fprintf(stderr, "op %d at 0x%llx+%llu outside every extent\n", static_cast<int>(op.kind),
                   static_cast<unsigned long long>(op.offset), static_cast<unsigned long long>(op.length));
      std::abort();
    }
    ++ops;
    return inner_->Submit(op);
  }
  Result<IoCompletion> Wait() override { return inner_->Wait(); }
  Status Sync() override { return inner_->Sync(); }
  bool RegisterBuffers(std::span<const std::span<uint8_t>> b) override { return inner_->RegisterBuffers(b); }
  uint64_t ops = 0;

 private:
  IoQueue* inner_;
  std::vector<DeviceExtent> extents_;
};

struct Case {
  uint32_t blk;
  bool verify, first_block_last, reorder;
  int parts;
};

void Replay(ImageWriter& w, const std::vector<Event>& part, std::mt19937_64& rng) {
  for (const Event& e : part) {
    Status s;
    if (e.kind == Event::kFill) s = w.OnFill(e.offset, e.length, e.pattern);
    if (e.kind == Event::kSkip) s = w.OnSkip(e.offset, e.length);
    for (uint64_t at = 0; e.kind == Event::kRaw && at < e.length && s.ok();) {
      uint64_t n = std::min<uint64_t>(e.length - at, 1 + rng() % (rng() % 2 ? 700 : 200000));
      s = w.OnRaw(e.offset + at, {e.data.data() + at, n});
      at += n;
    }
    ASSERT_TRUE(s.ok()) << s.ToString();
  }
  ASSERT_TRUE(w.OnEnd().ok());
}

void RunExtents(const Case& c, uint64_t seed) {
  SCOPED_TRACE(::testing::Message() << "seed " << seed << " blk " << c.blk << " fbl " << c.first_block_last);
  testing::TempDir dir;
  std::mt19937_64 rng(seed);
  const uint64_t dev_size = 8 << 20;
  // Four extents of whole 4 KiB blocks, scattered and out of device order.
  std::vector<DeviceExtent> extents = {{(5 << 20) + 8192, 300 * 4096}, {4096 * 3, 40 * 4096},
                                       {2 << 20, (1 + rng() % 200) * 4096}, {7 << 20, 64 * 4096}};
  uint64_t window = 0;
  for (const auto& e : extents) window += e.length;
  std::vector<uint8_t> medium = testing::RandomBytes(rng, dev_size);
  testing::WriteFile(dir.File("dev"), medium);
  auto t = Target::Open(dir.File("dev"), {});
  ASSERT_TRUE(t.ok());
  auto q = (*t)->MakeQueue(Backend::kUring, 4);
  ASSERT_TRUE(q.ok());
  std::unique_ptr<IoQueue> inner = std::move(*q);
  if (c.reorder) inner = std::make_unique<testing::ReorderQueue>((*t)->fd(), 4, seed);
  ExtentGuardQueue guard(inner.get(), extents);
  Device d = DeviceFor(**t, &guard);
  d.window_offset = 0;
  d.window_size = 0;
  d.extents = extents;
  WriterOptions wo;
  wo.verify = c.verify;
  wo.first_block_last = c.first_block_last;
  wo.request_size = 64 << 10;
  auto w = ImageWriter::Create({d}, wo);
  ASSERT_TRUE(w.ok()) << w.status().ToString();
  std::vector<uint8_t> model(window);
  // The model of the window: what the extents hold now, in order.
  uint64_t at = 0;
  for (const auto& e : extents) {
    std::copy(medium.begin() + e.device_offset, medium.begin() + e.device_offset + e.length, model.begin() + at);
    at += e.length;
  }
  for (int p = 0; p < c.parts; ++p) {
    auto part = testing::RandomPart(rng, c.blk, window / c.blk - (p ? rng() % 64 : 0));
    Replay(**w, part, rng);
    for (const Event& e : part) testing::ApplyToModel(e, model);
  }
  Status s = (*w)->Finish();
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_GT(guard.ops, 0u);
  std::vector<uint8_t> after = testing::ReadFile(dir.File("dev"));
  ASSERT_EQ(after.size(), dev_size);
  at = 0;
  std::vector<bool> inside(dev_size, false);
  for (const auto& e : extents) {
    ASSERT_TRUE(std::equal(model.begin() + at, model.begin() + at + e.length, after.begin() + e.device_offset))
        << "extent at device 0x" << std::hex << e.device_offset;
    std::fill(inside.begin() + e.device_offset, inside.begin() + e.device_offset + e.length, true);
    at += e.length;
  }
  for (uint64_t i = 0; i < dev_size; ++i) {
    if (!inside[i]) ASSERT_EQ(after[i], medium[i]) << "byte 0x" << std::hex << i << " outside the extents changed";
  }
}

TEST(ExtentWindowTest, WritesOnlyInsideTheExtentsInOrder) {
  std::mt19937_64 pick(11);
  for (uint64_t seed = 1; seed <= 12; ++seed) {
    Case c{std::array<uint32_t, 3>{512, 1024, 4096}[pick() % 3], pick() % 2 == 0, pick() % 3 == 0, pick() % 2 == 0,
           1 + static_cast<int>(pick() % 2)};
    RunExtents(c, seed);
    if (HasFatalFailure()) return;
  }
}

TEST(ExtentWindowTest, AnImagePastTheExtentsIsRefused) {
  testing::TempDir dir;
  testing::WriteFile(dir.File("dev"), std::vector<uint8_t>(1 << 20, 0x5a));
  auto t = Target::Open(dir.File("dev"), {});
  ASSERT_TRUE(t.ok());
  auto q = (*t)->MakeQueue(Backend::kSync, 1);
  ASSERT_TRUE(q.ok());
  std::vector<DeviceExtent> extents = {{65536, 8192}, {4096, 4096}};
  ExtentGuardQueue guard(q->get(), extents);
  Device d = DeviceFor(**t, &guard);
  d.window_size = 0;
  d.extents = extents;
  auto w = ImageWriter::Create({d}, {});
  ASSERT_TRUE(w.ok());
  std::vector<uint8_t> data(16384, 1);
  Status s = (*w)->OnRaw(0, data);
  EXPECT_EQ(s.code(), Code::kNoSpace) << s.ToString();
  d.window_offset = 4096;
  EXPECT_EQ(ImageWriter::Create({d}, {}).status().message(),
            fmt::format("{}: a window is either extents or an offset and size, not both", d.name));
}

}  // namespace
}  // namespace flashpipe::io
