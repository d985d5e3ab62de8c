// Storage::Write with each write model (pipelined, bounce:N, discard) over an
// in-memory disk: the bytes each one leaves, the requests it issues, and
// whether it syncs; and how a --partition NAME=PATH[:OFFSET:SIZE] spec parses.
#include "fastboot/storage.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>

#include "testing/fastboot_fakes.h"
#include "testing/fault_queue.h"
#include "testing/sparse_builder.h"
#include "testing/temp_dir.h"
#include "fastboot/dynamic_partitions.h"

namespace flashpipe::fastboot {
namespace {

constexpr uint64_t kMiB = 1 << 20;
constexpr uint8_t kGuard = 0xEE;
const Partition kSystem{"system", 0, kMiB + 4096, 2 * kMiB};

class StorageTest : public ::testing::Test {
 protected:
  void Open(const char* model) {
    mem_.Allow(kSystem.offset, kSystem.size);
    fault_.OnSubmit([this](const io::IoOp& op) {
      if (op.kind == io::OpKind::kWrite) writes_.emplace_back(op.offset - kSystem.offset, op.length);
      max_in_flight_ = std::max(max_in_flight_, fault_.in_flight() + 1);
    });
    io::Geometry g{.size = mem_.disk().size(), .logical_block = 512, .physical_block = 4096,
                   .mem_align = 512, .offset_align = 512, .max_request = kMiB, .direct = false};
    auto m = io::ParseWriteModel(model);
    ASSERT_TRUE(m.ok()) << m.status().ToString();
    storage_ = Storage::ForQueue(&fault_, g, {kSystem}, WriteOptions{.model = *m});
  }
  Status Write(const std::vector<uint8_t>& image, bool sparse, size_t piece = SIZE_MAX, bool sync = true) {
    std::vector<std::span<const uint8_t>> pieces;
    for (size_t at = 0; at < image.size(); at += piece) {
      pieces.push_back({image.data() + at, std::min(piece, image.size() - at)});
    }
    return storage_->Write(*storage_->Find("system"), pieces, sparse, nullptr, sync);
  }
  std::vector<uint8_t> Bytes(uint64_t n) {
    return {mem_.disk().begin() + kSystem.offset, mem_.disk().begin() + kSystem.offset + n};
  }

  testing::MemQueue mem_{4 * kMiB, kGuard};
  testing::FaultQueue fault_{&mem_};
  std::unique_ptr<Storage> storage_;
  std::vector<std::pair<uint64_t, uint64_t>> writes_;  // partition offset, length
  unsigned max_in_flight_ = 0;
};

// 100 KiB RAW, 12 KiB FILL, 8 KiB DONT_CARE, 4 KiB RAW, 16 KiB zero FILL.
testing::SparseBuilder Sample() {
  testing::SparseBuilder b(4096);
  b.RawBlocks(25, 1).Fill(3, 0x11223344).DontCare(2).RawBlocks(1, 2).Fill(4, 0);
  return b;
}

TEST_F(StorageTest, PipelinedWritesTheImageInFewRequests) {
  Open("pipelined");
  auto b = Sample();
  ASSERT_TRUE(Write(b.Build(), true).ok());
  EXPECT_EQ(Bytes(28 * 4096), std::vector<uint8_t>(b.expanded().begin(), b.expanded().begin() + 28 * 4096));
  EXPECT_LE(writes_.size(), 3u);
  EXPECT_EQ(mem_.syncs(), 1);
  EXPECT_TRUE(mem_.violations().empty());
}

TEST_F(StorageTest, BounceWritesLikeUBootOneRequestAtATime) {
  Open("bounce:100");
  auto b = Sample();
  // Pieces of 3000 bytes, as the download buffer may hold the image.
  ASSERT_TRUE(Write(b.Build(), true, 3000).ok());
  const std::vector<std::pair<uint64_t, uint64_t>> want = {
      {0, 51200}, {51200, 51200}, {102400, 12288}, {122880, 4096}, {126976, 16384}};
  EXPECT_EQ(writes_, want);
  EXPECT_EQ(max_in_flight_, 1u);
  const auto& exp = b.expanded();
  auto disk = Bytes(exp.size());
  EXPECT_TRUE(std::equal(exp.begin(), exp.begin() + 28 * 4096, disk.begin()));
  EXPECT_TRUE(std::equal(exp.begin() + 30 * 4096, exp.end(), disk.begin() + 30 * 4096));
  EXPECT_EQ(disk[28 * 4096], kGuard);  // DONT_CARE untouched
  EXPECT_EQ(mem_.syncs(), 1);
  EXPECT_TRUE(mem_.violations().empty());
}

TEST_F(StorageTest, BounceWritesARawImageAsOneChunkAndLeavesTheSyncToWriteBehind) {
  Open("bounce:16");
  std::vector<uint8_t> raw(20000 * 4, 0);
  for (size_t i = 0; i < raw.size(); ++i) raw[i] = static_cast<uint8_t>(i * 7);
  ASSERT_TRUE(Write(raw, false, 5000, /*sync=*/false).ok());
  EXPECT_EQ(Bytes(raw.size()), raw);
  EXPECT_EQ(writes_.size(), (raw.size() + 8191) / 8192);  // 16 x 512 each, whatever the pieces
  EXPECT_EQ(writes_.front(), std::make_pair(uint64_t{0}, uint64_t{8192}));
  EXPECT_EQ(mem_.syncs(), 0);
  ASSERT_TRUE(storage_->Sync(*storage_->Find("system")).ok());
  EXPECT_EQ(mem_.syncs(), 1);
}

TEST_F(StorageTest, DiscardValidatesAndWritesNothing) {
  Open("discard");
  auto b = Sample();
  ASSERT_TRUE(Write(b.Build(), true, 3000).ok());
  ASSERT_TRUE(Write(std::vector<uint8_t>(8192, 1), false).ok());
  EXPECT_TRUE(writes_.empty());
  EXPECT_EQ(mem_.bytes_written(), 0u);
  EXPECT_EQ(Bytes(kSystem.size), std::vector<uint8_t>(kSystem.size, kGuard));
  ASSERT_TRUE(storage_->Sync(*storage_->Find("system")).ok());
  EXPECT_EQ(mem_.syncs(), 0);
  // Still bounds-checked: a raw image larger than the partition is refused.
  Status st = Write(std::vector<uint8_t>(kSystem.size + 4096, 1), false);
  EXPECT_EQ(st.code(), Code::kNoSpace) << st.ToString();
  EXPECT_NE(st.message().find("partition 'system'"), std::string::npos) << st.message();
}

TEST_F(StorageTest, EachModelKeepsInsideThePartition) {
  for (const char* model : {"pipelined", "bounce:100", "discard"}) {
    SCOPED_TRACE(model);
    Open(model);
    Status st = Write(std::vector<uint8_t>(kSystem.size + 512, 1), false);
    EXPECT_EQ(st.code(), Code::kNoSpace) << st.ToString();
    EXPECT_TRUE(mem_.violations().empty());
    EXPECT_EQ(mem_.disk()[kSystem.offset + kSystem.size], kGuard);
  }
}

TEST(PartitionSpecTest, Parses) {
  auto s = ParsePartitionSpec("boot_a=/dev/loop0:1M:64M");
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->name, "boot_a");
  EXPECT_EQ(s->path, "/dev/loop0");
  EXPECT_EQ(s->offset, 1u << 20);
  EXPECT_EQ(s->size, 64u << 20);
  EXPECT_TRUE(s->ranged);
  s = ParsePartitionSpec("misc=/tmp/a:b.img");
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->path, "/tmp/a:b.img");
  EXPECT_FALSE(s->ranged);
  EXPECT_FALSE(ParsePartitionSpec("noequals").ok());
  EXPECT_FALSE(ParsePartitionSpec("=x").ok());
  EXPECT_FALSE(ParsePartitionSpec("a:b=x").ok());
  EXPECT_FALSE(ParsePartitionSpec("a=x:0:0").ok());
  EXPECT_FALSE(ParsePartitionSpec("a=").ok());
}

// The misc block's update: one whole-block write holding the edit, the
// rest of the block as it was; nothing written when the range leaves the
// partition or the edit fails.
TEST_F(StorageTest, UpdateInPlaceWritesOneWholeBlockOrNothing) {
  Open("pipelined");
  const Partition& p = *storage_->Find("system");
  for (size_t i = 0; i < 1024; ++i) mem_.disk()[kSystem.offset + i] = static_cast<uint8_t>(i);
  auto set = [](std::span<uint8_t> b) {
    std::fill(b.begin(), b.end(), 0xAB);
    return Status::Ok();
  };
  EXPECT_EQ(storage_->UpdateInPlace(p, kSystem.size - 8, 16, set).code(), Code::kInvalidArgument);
  EXPECT_EQ(storage_->UpdateInPlace(p, 0, 4, [](std::span<uint8_t>) { return InvalidArgument("no"); }).code(),
            Code::kInvalidArgument);
  EXPECT_TRUE(writes_.empty());
  ASSERT_TRUE(storage_->UpdateInPlace(p, 520, 32, set).ok());
  ASSERT_EQ(writes_.size(), 1u);
  EXPECT_EQ(writes_[0], (std::pair<uint64_t, uint64_t>{512, 512}));
  auto bytes = Bytes(1024);
  for (size_t i = 0; i < 1024; ++i) {
    ASSERT_EQ(bytes[i], i >= 520 && i < 552 ? 0xAB : static_cast<uint8_t>(i)) << i;
  }
  std::array<uint8_t, 4> got{};
  ASSERT_TRUE(storage_->Read(p, 550, got).ok());
  EXPECT_EQ(got, (std::array<uint8_t, 4>{0xAB, 0xAB, 552 & 0xFF, 553 & 0xFF}));
  EXPECT_EQ(storage_->Read(p, kSystem.size - 2, got).code(), Code::kInvalidArgument);
}

}  // namespace
}  // namespace flashpipe::fastboot

namespace flashpipe::fastboot {
namespace {

// A blank board: serve starts, with no partitions and a warning saying how
// to write a table; ReloadTable after a table change serves it.
TEST(StorageTableTest, BlankDiskHasNoPartitionsUntilATableIsWritten) {
  testing::TempDir dir;
  const std::string path = dir / "disk.img";
  testing::WriteFile(path, std::vector<uint8_t>(32 << 20));
  std::vector<std::string> warnings;
  auto s = Storage::OpenGpt(path, {}, &warnings);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_TRUE((*s)->has_table());
  EXPECT_TRUE((*s)->partitions().empty());
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("fastboot flash gpt LAYOUT"), std::string::npos) << warnings[0];
  std::string layout = "name=boot,size=1MiB;name=super,size=-;";
  warnings.clear();
  (*s)->WatchSuper("super");
  auto out = (*s)->ChangeTable({reinterpret_cast<const uint8_t*>(layout.data()), layout.size()}, "flash gpt", 'a',
                               &warnings);
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  ASSERT_EQ((*s)->partitions().size(), 2u);
  EXPECT_EQ((*s)->Find("boot")->offset, 1u << 20);
  // The watched super is there but blank: served without logical partitions.
  ASSERT_NE((*s)->dynamic(), nullptr);
  EXPECT_FALSE((*s)->dynamic()->has_metadata());
}

}  // namespace
}  // namespace flashpipe::fastboot

namespace flashpipe::fastboot {
namespace {

TEST(StorageTableTest, AMissingDiskIsNotCreated) {
  testing::TempDir dir;
  std::vector<std::string> warnings;
  auto s = Storage::OpenGpt(dir / "missing.img", {}, &warnings);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().ToString().find("No such file"), std::string::npos) << s.status().ToString();
  EXPECT_FALSE(std::filesystem::exists(dir / "missing.img"));
}

}  // namespace
}  // namespace flashpipe::fastboot
