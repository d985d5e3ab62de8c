// The unit-level model of a volatile-cache device (testing/volatile_cache.h)
// under the harness's crash states and checkers: the writers the VM test
// drives through the kernel, here driven in memory, each also with its
// flushes dropped (the broken variant the harness must catch).
#include <gtest/gtest.h>

#include "fastboot/misc_slot.h"
#include "fastboot/storage.h"
#include "lp/lp_test_util.h"
#include "lp/writer.h"
#include "partition/gpt_io.h"
#include "partition/uboot_string.h"
#include "powercut/device_checkers.h"
#include "powercut/harness.h"
#include "testing/volatile_cache.h"

namespace flashpipe::powercut {
namespace {

// A run in memory: the medium, the log, and a snapshot per mark.
struct ModelRun {
  explicit ModelRun(size_t size) : disk(size, 0), initial(disk) {}
  void Ack(const std::string& step) {
    log.AddMark(step);
    snaps.push_back(disk);
  }
  std::vector<Expectation> Expect(Checker& c, bool any_before = false) {
    std::vector<Expectation> out;
    auto first = c.Read(initial);
    EXPECT_TRUE(first.ok());
    out.push_back({any_before, *first, "start"});
    for (const auto& s : snaps) {
      auto r = c.Read(s);
      EXPECT_TRUE(r.ok());
      out.push_back({false, *r, "step"});
    }
    return out;
  }
  HarnessReport Check(Checker& c, bool any_before = false) {
    auto expect = Expect(c, any_before);
    HarnessOptions o;
    o.budget.tears = 8;
    auto rep = RunHarness(log, initial, c, expect, o);
    EXPECT_TRUE(rep.ok()) << rep.status().ToString();
    return rep.ok() ? *rep : HarnessReport{};
  }
  std::vector<uint8_t> disk, initial;
  WriteLog log;
  std::vector<std::vector<uint8_t>> snaps;
};

std::string Listing(const HarnessReport& r) {
  std::string s = r.Summary();
  for (const auto& u : r.reported) s += "\n  " + u.state.Describe() + ": " + u.reason;
  return s;
}

constexpr uint64_t kMisc = 64 << 10, kMiscSize = 64 << 10;

void SetActiveSteps(ModelRun& run, testing::RecordingQueue& q) {
  auto storage = fastboot::Storage::ForQueue(&q, {.size = run.disk.size(), .logical_block = 512},
                                             {{"misc", 0, kMisc, kMiscSize}});
  const fastboot::Partition* misc = storage->Find("misc");
  ASSERT_NE(misc, nullptr);
  char prev = 'a';
  for (char slot : {'b', 'a', 'b'}) {
    ASSERT_TRUE(fastboot::WriteActiveSlot(*storage, *misc, slot, prev).ok());
    run.Ack(fmt::format("set_active {}", slot));
    prev = slot;
  }
}

TEST(PowerCutModelTest, SetActiveLeavesTheOldOrTheNewBootControlBlock) {
  ModelRun run(1 << 20);
  testing::RecordingQueue q(&run.disk, &run.log);
  SetActiveSteps(run, q);
  BootControlChecker c(kMisc);
  auto rep = run.Check(c);
  EXPECT_EQ(rep.unacceptable, 0u) << Listing(rep);
  EXPECT_EQ(rep.marks, 3u);
  EXPECT_GE(rep.flushes, 3u);
  EXPECT_GT(rep.checked, 6u);
}

TEST(PowerCutModelTest, SetActiveWithoutItsFlushIsCaught) {
  ModelRun run(1 << 20);
  testing::RecordingQueue q(&run.disk, &run.log);
  q.DropSyncs(true);
  SetActiveSteps(run, q);
  BootControlChecker c(kMisc);
  auto rep = run.Check(c);
  ASSERT_GT(rep.unacceptable, 0u) << Listing(rep);
  EXPECT_NE(rep.reported[0].reason.find("was acknowledged"), std::string::npos) << rep.reported[0].reason;
}

constexpr uint64_t kSuper = 1 << 20, kSuperSize = 16 << 20;

void MetadataSteps(ModelRun& run, testing::RecordingBlockIo& io) {
  lp::Builder b = lp::test::SampleBuilder(kSuperSize, 4096);
  auto m = b.Export();
  ASSERT_TRUE(m.ok());
  ASSERT_TRUE(lp::FlashMetadata(io, *m, {.allow_new_geometry = true}).ok());
  run.Ack("update-super");
  auto every_slot = [&](const lp::Metadata& next) {
    for (uint32_t s = 0; s < next.geometry.metadata_slot_count; ++s) ASSERT_TRUE(lp::UpdateMetadata(io, next, s).ok());
  };
  ASSERT_TRUE(b.AddPartition("odm", "default", 0).ok());
  ASSERT_TRUE(b.ResizePartition("odm", 1 << 20).ok());
  every_slot(*b.Export());
  run.Ack("create-logical-partition odm");
  ASSERT_TRUE(b.ResizePartition("system", 6 << 20).ok());
  ASSERT_TRUE(b.ResizePartition("odm", 3 << 20).ok());
  every_slot(*b.Export());
  run.Ack("resize-logical-partition");
  ASSERT_TRUE(b.RemovePartition("vendor").ok());
  every_slot(*b.Export());
  run.Ack("delete-logical-partition vendor");
}

TEST(PowerCutModelTest, LpMetadataOpensAsTheOldOrTheNewInEverySlot) {
  for (uint32_t slot : {0u, 1u}) {
    ModelRun run(kSuper + kSuperSize);
    testing::RecordingBlockIo io(&run.disk, kSuper, kSuperSize, &run.log);
    MetadataSteps(run, io);
    LpMetadataChecker c(kSuper, kSuperSize, slot, 64 << 10);
    auto rep = run.Check(c);
    EXPECT_EQ(rep.unacceptable, 0u) << "metadata slot " << slot << ": " << Listing(rep);
    EXPECT_GT(rep.distinct, 5u);
  }
}

TEST(PowerCutModelTest, LpMetadataWithoutSyncsIsCaught) {
  ModelRun run(kSuper + kSuperSize);
  testing::RecordingBlockIo io(&run.disk, kSuper, kSuperSize, &run.log);
  io.DropSyncs(true);
  MetadataSteps(run, io);
  LpMetadataChecker c(kSuper, kSuperSize, 0, 64 << 10);
  auto rep = run.Check(c);
  EXPECT_GT(rep.unacceptable, 0u) << Listing(rep);
}

// flashpipe partition's table writer: blank, then three tables.
void GptSteps(ModelRun& run, testing::RecordingBlockIo& io) {
  for (const char* layout : {"name=boot,size=1M;name=rootfs,size=-", "name=a,start=2M,size=1M;name=b,size=3M;name=c,size=-",
                             "name=boot,size=2M;name=rootfs,size=-"}) {
    auto l = partition::ParseUbootString(layout);
    ASSERT_TRUE(l.ok());
    auto t = partition::Resolve(*l, {.size = run.disk.size(), .sector_size = 512});
    ASSERT_TRUE(t.ok()) << t.status().ToString();
    ASSERT_TRUE(partition::WriteGpt(io, *t).ok());
    run.Ack(layout);
  }
}

TEST(PowerCutModelTest, APartitionTableReadsAsTheOldTheNewOrNone) {
  ModelRun run(8 << 20);
  testing::RecordingBlockIo io(&run.disk, 0, run.disk.size(), &run.log);
  GptSteps(run, io);
  GptChecker c;
  auto rep = run.Check(c);
  EXPECT_EQ(rep.unacceptable, 0u) << Listing(rep);
  EXPECT_EQ(rep.marks, 3u);
  EXPECT_GE(rep.flushes, 12u);
  EXPECT_GE(rep.distinct, 4u);
}

TEST(PowerCutModelTest, APartitionTableWithoutItsFlushesIsCaught) {
  ModelRun run(8 << 20);
  testing::RecordingBlockIo io(&run.disk, 0, run.disk.size(), &run.log);
  io.DropSyncs(true);
  GptSteps(run, io);
  GptChecker c;
  auto rep = run.Check(c);
  EXPECT_GT(rep.unacceptable, 0u) << Listing(rep);
}

void FlashSteps(ModelRun& run, testing::RecordingQueue& q, bool sync) {
  auto storage = fastboot::Storage::ForQueue(&q, {.size = run.disk.size(), .logical_block = 512},
                                             {{"boot", 0, 1 << 20, 4 << 20}});
  std::vector<uint8_t> image(3 << 20);
  for (size_t i = 0; i < image.size(); ++i) image[i] = static_cast<uint8_t>(i * 2654435761u >> 24);
  std::span<const uint8_t> piece(image);
  ASSERT_TRUE(storage->Write(*storage->Find("boot"), std::span(&piece, 1), false, nullptr, sync).ok());
  run.Ack("flash boot");
}

TEST(PowerCutModelTest, AFlashIsOnTheMediumWhenItReportsSuccess) {
  ModelRun run(8 << 20);
  testing::RecordingQueue q(&run.disk, &run.log);
  FlashSteps(run, q, true);
  RegionChecker c(1 << 20, 3 << 20);
  auto rep = run.Check(c, /*any_before=*/true);
  EXPECT_EQ(rep.unacceptable, 0u) << Listing(rep);
  EXPECT_GE(rep.writes, 3u);
}

TEST(PowerCutModelTest, AFlashReportedBeforeItsSyncIsCaught) {
  ModelRun run(8 << 20);
  testing::RecordingQueue q(&run.disk, &run.log);
  FlashSteps(run, q, false);
  RegionChecker c(1 << 20, 3 << 20);
  auto rep = run.Check(c, /*any_before=*/true);
  EXPECT_GT(rep.unacceptable, 0u) << Listing(rep);
}

}  // namespace
}  // namespace flashpipe::powercut
