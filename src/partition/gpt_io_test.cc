#include "partition/gpt_io.h"

#include <gtest/gtest.h>

#include <cstring>

#include <fmt/format.h>

#include "partition/gpt_image.h"
#include "partition/uboot_string.h"
#include "testing/op_log_block_io.h"
#include "testing/vector_block_io.h"

namespace flashpipe::partition {
namespace {

constexpr uint64_t kMiB = 1 << 20;

Table Make(const char* uboot, uint64_t disk_bytes, uint32_t sector = 512) {
  auto l = ParseUbootString(uboot);
  EXPECT_TRUE(l.ok()) << l.status().ToString();
  auto t = Resolve(*l, {.size = disk_bytes, .sector_size = sector});
  EXPECT_TRUE(t.ok()) << t.status().ToString();
  return *t;
}

std::vector<uint8_t> DiskWith(const Table& t, uint64_t bytes) {
  std::vector<uint8_t> disk(bytes, 0);
  testing::VectorBlockIo io(&disk, 0, bytes, "old");
  EXPECT_TRUE(WriteGpt(io, t).ok());
  return disk;
}

// What a reader makes of a medium: a table, or none (nullopt).
std::optional<Table> Reading(std::vector<uint8_t> medium, uint32_t sector) {
  testing::VectorBlockIo io(&medium, 0, medium.size(), "state");
  auto t = ReadTable(io, sector);
  if (!t.ok()) return std::nullopt;
  return *t;
}

TEST(GptIo, WrittenTableReadsBack512And4K) {
  for (uint32_t sector : {512u, 4096u}) {
    Table t = Make("name=boot,size=8M,bootable;name=system_a,size=16M,type=android-system;name=data,size=-", 64 * kMiB,
                   sector);
    std::vector<uint8_t> disk(64 * kMiB, 0);
    testing::VectorBlockIo io(&disk, 0, disk.size(), "disk");
    ASSERT_TRUE(WriteGpt(io, t).ok());
    std::vector<std::string> warnings;
    auto back = ReadTable(io, 0, &warnings);
    ASSERT_TRUE(back.ok()) << back.status().ToString();
    EXPECT_EQ(*back, t);
    EXPECT_TRUE(warnings.empty());
    EXPECT_EQ(disk[510], 0x55);
    EXPECT_EQ(disk[450], 0xEE);
    // The backup alone gives the same table.
    std::fill(disk.begin() + sector, disk.begin() + 2 * sector, 0);
    auto from_backup = ReadTable(io, sector, &warnings);
    ASSERT_TRUE(from_backup.ok());
    EXPECT_EQ(*from_backup, t);
    EXPECT_EQ(warnings.size(), 1u);
  }
}

// Four writes, each followed by a flush, in the documented order.
TEST(GptIo, WriteOrderIsBackupEntriesHeaderThenPrimary) {
  Table t = Make("name=a,size=1M", 16 * kMiB);
  std::vector<uint8_t> disk(16 * kMiB, 0);
  testing::OpLogBlockIo io(&disk);
  ASSERT_TRUE(WriteGpt(io, t).ok());
  using K = testing::OpLogBlockIo::Kind;
  const auto& ops = io.ops();
  std::vector<std::pair<K, uint64_t>> got;
  for (const auto& op : ops) got.emplace_back(op.kind, op.offset / 512);
  const uint64_t last = 16 * 2048 - 1;
  std::vector<std::pair<K, uint64_t>> want = {{K::kWrite, last - 32}, {K::kSync, 0}, {K::kWrite, last}, {K::kSync, 0},
                                              {K::kWrite, 0},         {K::kWrite, 2}, {K::kSync, 0},   {K::kWrite, 1},
                                              {K::kSync, 0}};
  EXPECT_EQ(got, want);
}

struct Case {
  const char* what;
  std::vector<uint8_t> old_disk;
  std::optional<Table> old_table;
  bool none_allowed;  // the old table was not read from a valid primary
};

struct Verdict {
  size_t states = 0, olds = 0, news = 0, nones = 0;
  std::vector<std::string> bad;  // what was wrong with which state
};

// The states a power cut can leave: the writes before the last flush all
// landed, and of those after it any subset (a device may reorder them),
// each subset also with one of its writes torn at every sector. Each state
// must read as the old table, the new one or (only where allowed) no
// table; after the new table was read whole from a state with every write
// of a flush window landed, no later window may read old.
// `drop_syncs` calibrates: a writer that never flushes.
Verdict Judge(const Case& c, const Table& next, bool drop_syncs = false) {
  const uint32_t ss = next.sector_size;
  std::vector<uint8_t> disk = c.old_disk;
  testing::OpLogBlockIo io(&disk);
  EXPECT_TRUE(WriteGpt(io, next).ok());
  using K = testing::OpLogBlockIo::Kind;
  std::vector<std::vector<size_t>> windows(1);  // write op indexes between flushes
  for (size_t i = 0; i < io.ops().size(); ++i) {
    if (io.ops()[i].kind == K::kWrite) {
      windows.back().push_back(i);
    } else if (!drop_syncs) {
      windows.emplace_back();
    }
  }
  Verdict v;
  bool seen_new = false;
  std::vector<uint8_t> base = c.old_disk;
  auto judge = [&](const std::vector<uint8_t>& medium, const std::string& label, bool whole) {
    auto r = Reading(medium, ss);
    ++v.states;
    if (!r) {
      ++v.nones;
      if (!c.none_allowed) v.bad.push_back(label + ": no valid table");
    } else if (*r == next) {
      ++v.news;
      seen_new |= whole;
    } else if (c.old_table && *r == *c.old_table) {
      ++v.olds;
      if (seen_new) v.bad.push_back(label + ": old again after the new table");
    } else {
      v.bad.push_back(label + ": a table that is neither old nor new");
    }
  };
  for (size_t w = 0; w < windows.size(); ++w) {
    const auto& ops = windows[w];
    for (uint32_t mask = 0; mask < (1u << ops.size()); ++mask) {
      std::vector<uint8_t> m = base;
      std::vector<size_t> landed;
      for (size_t k = 0; k < ops.size(); ++k) {
        if (mask & (1u << k)) landed.push_back(ops[k]);
      }
      for (size_t op : landed) std::memcpy(m.data() + io.ops()[op].offset, io.ops()[op].data.data(), io.ops()[op].data.size());
      std::string label = fmt::format("window {} writes mask {:x}", w, mask);
      judge(m, label, mask == (1u << ops.size()) - 1);
      // Each landed write torn instead, at every sector.
      for (size_t op : landed) {
        const auto& o = io.ops()[op];
        for (uint64_t b = ss; b < o.data.size(); b += ss) {
          std::vector<uint8_t> t = base;
          for (size_t other : landed) {
            const auto& x = io.ops()[other];
            std::memcpy(t.data() + x.offset, x.data.data(), other == op ? b : x.data.size());
          }
          judge(t, fmt::format("{}, op {} torn at byte {}", label, op, b), false);
        }
      }
    }
    for (size_t op : ops) std::memcpy(base.data() + io.ops()[op].offset, io.ops()[op].data.data(), io.ops()[op].data.size());
  }
  if (!seen_new) v.bad.push_back("the new table never read whole");
  if (Reading(disk, ss) != next) v.bad.push_back("the final state is not the new table");
  return v;
}

void CheckPowerCuts(const Case& c, const Table& next) {
  SCOPED_TRACE(c.what);
  Verdict v = Judge(c, next);
  for (const auto& b : v.bad) ADD_FAILURE() << b;
  std::printf("%s: %zu states: %zu old, %zu new, %zu none\n", c.what, v.states, v.olds, v.news, v.nones);
}

TEST(GptIo, PowerCutLeavesOldNewOrNone) {
  const uint64_t size = 32 * kMiB;
  Table next = Make("name=boot,size=4M;name=rootfs,size=-", size);
  Table old = Make("name=x,start=2M,size=1M;name=y,size=8M;name=z,size=2M", size);

  std::vector<Case> cases;
  cases.push_back({"blank disk", std::vector<uint8_t>(size, 0), std::nullopt, true});
  cases.push_back({"old table", DiskWith(old, size), old, false});

  // A table made for 16 MiB on a disk grown to 32: its backup sits in the middle.
  Table small = Make("name=s,size=4M", 16 * kMiB);
  std::vector<uint8_t> grown = DiskWith(small, 16 * kMiB);
  grown.resize(size, 0);
  auto small_read = Reading(grown, 512);
  ASSERT_TRUE(small_read.has_value());
  cases.push_back({"old table of a smaller disk", grown, *small_read, false});

  // The old primary is already broken: readers take the old backup.
  std::vector<uint8_t> broken = DiskWith(old, size);
  broken[512 + 20] ^= 1;
  cases.push_back({"old primary broken", broken, old, true});

  // Garbage where the tables go (a disk that held something else).
  std::vector<uint8_t> junk(size, 0);
  for (size_t i = 0; i < 64 * 1024; ++i) junk[i] = junk[size - 1 - i] = static_cast<uint8_t>(i * 131 + 7);
  cases.push_back({"junk", junk, std::nullopt, true});

  for (const Case& c : cases) CheckPowerCuts(c, next);
}

// Calibration: the same writes without flushes leave, on a disk whose old
// table was fine, states that read as no table (backup entries landed, the
// backup header not yet, the primary entries already): the judge sees them.
TEST(GptIo, PowerCutJudgeCatchesAWriterWithoutFlushes) {
  const uint64_t size = 32 * kMiB;
  Table next = Make("name=boot,size=4M;name=rootfs,size=-", size);
  Table old = Make("name=x,start=2M,size=1M;name=y,size=8M", size);
  Verdict v = Judge({"old table, no flushes", DiskWith(old, size), old, false}, next, /*drop_syncs=*/true);
  EXPECT_GT(v.nones, 0u);
  EXPECT_FALSE(v.bad.empty());
}

TEST(GptIo, SameTableWrittenAgainIsOldAndNew) {
  const uint64_t size = 8 * kMiB;
  Table t = Make("name=a,size=-", size);
  CheckPowerCuts({"same table", DiskWith(t, size), t, false}, t);
}

TEST(GptIo, ReadbackMismatchIsReported) {
  // A disk that drops writes to LBA 1: the primary never lands.
  class DroppingIo final : public lp::BlockIo {
   public:
    explicit DroppingIo(std::vector<uint8_t>* d) : inner_(d, 0, d->size(), "dropping") {}
    std::string_view name() const override { return "dropping"; }
    uint64_t size() const override { return inner_.size(); }
    Status Read(uint64_t o, std::span<uint8_t> out) override { return inner_.Read(o, out); }
    Status Write(uint64_t o, std::span<const uint8_t> d) override { return o == 512 ? Status::Ok() : inner_.Write(o, d); }
    Status Sync() override { return Status::Ok(); }
   private:
    testing::VectorBlockIo inner_;
  };
  std::vector<uint8_t> disk(8 * kMiB, 0);
  DroppingIo io(&disk);
  Status s = WriteGpt(io, Make("name=a,size=1M", disk.size()));
  EXPECT_EQ(s.code(), Code::kMismatch) << s.ToString();
}

}  // namespace
}  // namespace flashpipe::partition
