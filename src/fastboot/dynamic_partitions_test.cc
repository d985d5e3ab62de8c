// DynamicPartitions on an in-memory super that can tear any write and lose
// what was not synced (testing/memory_block_io.h): the logical partitions it
// hands out, its refusals, repair on open, and crash safety of every change
// (update-super with and without wipe, create, grow, shrink, delete) with a
// crash at each of its writes and syncs.
#include "fastboot/dynamic_partitions.h"

#include <gtest/gtest.h>

#include <functional>

#include "lp/reader.h"
#include "lp/writer.h"
#include "testing/memory_block_io.h"

namespace flashpipe::fastboot {
namespace {

using testing::MemoryBlockIo;

constexpr uint64_t kMiB = 1 << 20;
constexpr uint64_t kSuper = 32 * kMiB;
const Partition kSuperPart{"super", 0, 4 * kMiB, kSuper};

// A/B: group main (12 MiB) with system_a, vendor_a, system_b, vendor_b of the
// given sizes (system_a grown in two steps, so it has two extents).
lp::Metadata Layout(std::array<uint64_t, 4> sizes, uint64_t super = kSuper) {
  lp::LayoutSpec spec;
  spec.devices.push_back({"super", super, 1 << 20, 0});
  spec.metadata_max_size = 4096;
  auto b = lp::Builder::New(spec);
  EXPECT_TRUE(b.ok());
  EXPECT_TRUE(b->AddGroup("main", 12 * kMiB).ok());
  const char* names[] = {"system_a", "vendor_a", "system_b", "vendor_b"};
  for (const char* n : names) EXPECT_TRUE(b->AddPartition(n, "main", 0).ok());
  EXPECT_TRUE(b->ResizePartition("system_a", std::min<uint64_t>(sizes[0], kMiB)).ok());
  for (int i = 1; i < 4; ++i) EXPECT_TRUE(b->ResizePartition(names[i], sizes[i]).ok());
  EXPECT_TRUE(b->ResizePartition("system_a", sizes[0]).ok());
  auto m = b->Export();
  EXPECT_TRUE(m.ok()) << m.status().ToString();
  return *m;
}

std::unique_ptr<MemoryBlockIo> Device(const lp::Metadata& m) {
  auto io = std::make_unique<MemoryBlockIo>(kSuper, "super");
  EXPECT_TRUE(lp::FlashMetadata(*io, m).ok());
  return io;
}

std::unique_ptr<DynamicPartitions> Open(std::unique_ptr<lp::BlockIo> io, char slot = 'a') {
  auto d = DynamicPartitions::Open(kSuperPart, std::move(io), slot);
  EXPECT_TRUE(d.ok()) << d.status().ToString();
  return d.ok() ? std::move(*d) : nullptr;
}

bool SameLayout(const lp::Metadata& a, const lp::Metadata& b) {
  return a.partitions == b.partitions && a.extents == b.extents && a.groups == b.groups &&
         a.block_devices == b.block_devices;
}

std::vector<uint8_t> EmptyImage(const lp::Metadata& m) {
  auto bytes = lp::SerializeEmptyImage(m);
  EXPECT_TRUE(bytes.ok());
  return *bytes;
}

TEST(DynamicPartitionsTest, HandsOutLogicalPartitionsAsAbsoluteExtents) {
  auto d = Open(Device(Layout({3 * kMiB, kMiB, 2 * kMiB, 0})));
  ASSERT_NE(d, nullptr);
  ASSERT_EQ(d->partitions().size(), 4u);
  const Partition* system = d->Find("system_a");
  ASSERT_NE(system, nullptr);
  EXPECT_TRUE(system->logical);
  EXPECT_EQ(system->size, 3 * kMiB);
  // 1 MiB at the first aligned MiB of the super, then 2 MiB after vendor_a
  // and system_b: offsets are the device's, the super starting at 4 MiB.
  EXPECT_EQ(system->extents, (std::vector<io::DeviceExtent>{{5 * kMiB, kMiB}, {9 * kMiB, 2 * kMiB}}));
  EXPECT_EQ(system->offset, 5 * kMiB);
  EXPECT_EQ(d->Find("vendor_a")->extents, (std::vector<io::DeviceExtent>{{6 * kMiB, kMiB}}));
  EXPECT_TRUE(d->Find("vendor_b")->extents.empty());
  EXPECT_EQ(d->Find("vendor_b")->size, 0u);
  EXPECT_EQ(d->Find("nope"), nullptr);
}

TEST(DynamicPartitionsTest, ChangesGoToEverySlotAndFailuresChangeNothing) {
  auto io = Device(Layout({3 * kMiB, kMiB, 0, 0}));
  MemoryBlockIo* raw = io.get();
  auto d = Open(std::move(io));
  ASSERT_TRUE(d->Resize("vendor_a", 2 * kMiB).ok());
  ASSERT_TRUE(d->Create("odm_a", 4096).ok());
  for (uint32_t slot : {0u, 1u}) {
    auto m = lp::ReadMetadata(*raw, slot);
    ASSERT_TRUE(m.ok());
    EXPECT_EQ(lp::PartitionSize(*m, *lp::FindPartition(*m, "vendor_a")), 2 * kMiB);
    EXPECT_NE(lp::FindPartition(*m, "odm_a"), nullptr);
  }
  EXPECT_EQ(d->Find("odm_a")->size, 4096u);
  const std::vector<uint8_t> before = raw->bytes();
  const uint64_t writes = raw->writes();
  Status st = d->Resize("system_a", 40 * kMiB);
  EXPECT_EQ(st.code(), Code::kNoSpace);
  EXPECT_EQ(st.message(), "partition system_a: group main has 7340032 of its 12582912 bytes free; 38797312 more needed");
  st = d->Resize("odm_a", 40 * kMiB);  // default group: no limit, but no room
  EXPECT_EQ(st.message(), "not enough free space for partition odm_a: 41938944 more bytes needed, 27258880 free");
  EXPECT_EQ(d->Create("odm_a", 1).message(), "partition odm_a already exists");
  EXPECT_EQ(d->Delete("nope").message(), "no partition nope");
  EXPECT_EQ(d->Create("bad:name", 1).code(), Code::kInvalidArgument);
  EXPECT_EQ(raw->writes(), writes);
  EXPECT_EQ(raw->bytes(), before);
  ASSERT_TRUE(d->Delete("odm_a").ok());
  EXPECT_EQ(d->Find("odm_a"), nullptr);
}

TEST(DynamicPartitionsTest, UpdateSuperKeepsTheOtherSlotAndRefusesAnotherGeometry) {
  auto io = Device(Layout({3 * kMiB, kMiB, 2 * kMiB, kMiB}));
  MemoryBlockIo* raw = io.get();
  auto d = Open(std::move(io));
  const auto system_b = d->Find("system_b")->extents;
  ASSERT_TRUE(d->UpdateSuper(EmptyImage(Layout({0, 0, 0, 0})), false, "_a").ok());
  EXPECT_EQ(d->Find("system_a")->size, 0u);
  EXPECT_EQ(d->Find("system_b")->extents, system_b);
  ASSERT_TRUE(d->UpdateSuper(EmptyImage(Layout({0, 0, 0, 0})), true, "_a").ok());
  EXPECT_EQ(d->Find("system_b")->size, 0u);

  // Three slots instead of two: refused, wipe or not, nothing written.
  lp::LayoutSpec spec;
  spec.devices.push_back({"super", kSuper, 1 << 20, 0});
  spec.metadata_max_size = 4096;
  spec.metadata_slot_count = 3;
  auto other = lp::Builder::New(spec)->Export();
  ASSERT_TRUE(other.ok());
  const std::vector<uint8_t> before = raw->bytes();
  Status st = d->UpdateSuper(EmptyImage(*other), true, "_a");
  EXPECT_EQ(st.message(), "super_empty.img's geometry (3 slots of 4096 bytes, 4096-byte blocks) differs from the "
                          "device's (2 slots of 4096 bytes, 4096-byte blocks)");
  // A corrupt image: the reader's reason, with where.
  std::vector<uint8_t> bad = EmptyImage(Layout({0, 0, 0, 0}));
  bad[4096 + 200] ^= 1;
  st = d->UpdateSuper(bad, false, "_a");
  EXPECT_EQ(st.code(), Code::kCorrupt) << st.ToString();
  EXPECT_NE(st.message().find("super_empty.img: "), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("checksum"), std::string::npos) << st.message();
  EXPECT_EQ(raw->bytes(), before);
  EXPECT_EQ(d->UpdateSuper(std::vector<uint8_t>(100, 0), false, "_a").code(), Code::kCorrupt);
  EXPECT_EQ(raw->bytes(), before);
}

TEST(DynamicPartitionsTest, ABlankSuperHasNoPartitionsUntilUpdateSuper) {
  ::testing::internal::CaptureStderr();
  auto d = Open(std::make_unique<MemoryBlockIo>(kSuper, "super"));
  std::string log = ::testing::internal::GetCapturedStderr();
  ASSERT_NE(d, nullptr);
  EXPECT_FALSE(d->has_metadata());
  EXPECT_TRUE(d->partitions().empty());
  EXPECT_NE(log.find("super 'super': no logical partitions (no valid metadata"), std::string::npos) << log;
  EXPECT_EQ(d->Create("system", kMiB).message(),
            "super 'super' holds no metadata: flash a super_empty.img (update-super) first");
  ASSERT_TRUE(d->UpdateSuper(EmptyImage(Layout({0, 0, 0, 0})), false, "_a").ok());
  EXPECT_TRUE(d->has_metadata());
  EXPECT_EQ(d->partitions().size(), 4u);
}

TEST(DynamicPartitionsTest, MetadataLargerThanThePartitionIsNotServed) {
  MemoryBlockIo big(2 * kSuper, "super");
  ASSERT_TRUE(lp::FlashMetadata(big, Layout({kMiB, 0, 0, 0}, 2 * kSuper)).ok());
  std::vector<uint8_t> bytes = big.bytes();
  bytes.resize(kSuper);
  ::testing::internal::CaptureStderr();
  auto d = Open(std::make_unique<MemoryBlockIo>(std::move(bytes), "super"));
  std::string log = ::testing::internal::GetCapturedStderr();
  ASSERT_NE(d, nullptr);
  EXPECT_TRUE(d->partitions().empty());
  EXPECT_NE(log.find("its metadata describes 67108864 bytes, the partition has 33554432"), std::string::npos) << log;
}

TEST(DynamicPartitionsTest, OpenRepairsACorruptCopyAndSaysSo) {
  auto io = Device(Layout({kMiB, 0, 0, 0}));
  const lp::Geometry g = *lp::ReadGeometry(*io);
  io->Poke(lp::PrimaryMetadataOffset(g, 1) + 20, 0xFF);  // slot 1 primary: header checksum
  MemoryBlockIo* raw = io.get();
  ::testing::internal::CaptureStderr();
  auto d = Open(std::move(io));
  std::string log = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(log.find("super 'super': slot 1 primary metadata was corrupt or stale: repaired from its valid copy"),
            std::string::npos) << log;
  auto state = lp::InspectSuper(*raw);
  ASSERT_TRUE(state.ok());
  for (const auto& slot : state->slots) EXPECT_TRUE(slot[0].status.ok() && slot[1].status.ok());
}

TEST(DynamicPartitionsTest, TheMetadataSlotFollowsTheDeviceSlot) {
  auto io = Device(Layout({kMiB, 0, 0, 0}));
  ASSERT_TRUE(lp::UpdateMetadata(*io, Layout({2 * kMiB, 0, kMiB, 0}), 1).ok());
  auto d = Open(std::move(io), 'a');
  EXPECT_EQ(d->Find("system_a")->size, kMiB);
  d->SelectSlot('b');
  EXPECT_EQ(d->Find("system_a")->size, 2 * kMiB);
  EXPECT_EQ(d->Find("system_b")->size, kMiB);
}

// Every way the writes not yet synced at a crash can end up: each lost,
// torn or landed, on its own.
std::vector<std::vector<MemoryBlockIo::Fate>> AllFates(size_t n) {
  std::vector<std::vector<MemoryBlockIo::Fate>> out{{}};
  for (size_t i = 0; i < n; ++i) {
    std::vector<std::vector<MemoryBlockIo::Fate>> next;
    for (const auto& f : out) {
      for (auto fate : {MemoryBlockIo::Fate::kLost, MemoryBlockIo::Fate::kTorn, MemoryBlockIo::Fate::kLanded}) {
        next.push_back(f);
        next.back().push_back(fate);
      }
    }
    out = std::move(next);
  }
  return out;
}

// Each change, cut by a fault at each of its writes (the write torn) and at
// each of its syncs (the sync failing), then the power gone with every
// combination of fates for the writes not yet synced: reopening repairs, and
// every slot then holds the layout from before or the one after, never a mix
// or nothing.
void CrashAtEveryStep(const lp::Metadata& before, const std::function<Status(DynamicPartitions&)>& change) {
  auto clean = Device(before);
  MemoryBlockIo* c = clean.get();
  auto d = Open(std::move(clean));
  const uint64_t start_writes = c->writes(), start_syncs = c->syncs();
  ASSERT_TRUE(change(*d).ok());
  const uint64_t writes = c->writes() - start_writes, syncs = c->syncs() - start_syncs;
  const lp::Metadata after = *lp::ReadMetadata(*c, 0);
  ASSERT_FALSE(SameLayout(after, before));
  ASSERT_GT(writes, 1u);
  ASSERT_GT(syncs, 1u);
  struct Fault {
    const char* what;
    uint64_t n;
  };
  std::vector<Fault> faults;
  for (uint64_t n = 1; n <= writes; ++n) faults.push_back({"torn write", n});
  for (uint64_t n = 1; n <= syncs; ++n) faults.push_back({"failed sync", n});
  for (const Fault& fault : faults) {
    auto io = Device(before);
    MemoryBlockIo* raw = io.get();
    auto dp = Open(std::move(io));
    if (fault.what[0] == 't') {
      raw->TearWrite(fault.n);
    } else {
      raw->FailSync(fault.n);
    }
    ::testing::internal::CaptureStderr();
    EXPECT_FALSE(change(*dp).ok()) << fault.what << " " << fault.n;
    (void)::testing::internal::GetCapturedStderr();
    ASSERT_LE(raw->unsynced_writes(), 6u);
    for (const auto& fates : AllFates(raw->unsynced_writes())) {
      SCOPED_TRACE(::testing::Message() << fault.what << " " << fault.n << " of " << (fault.what[0] == 't' ? writes : syncs)
                                        << ", " << raw->unsynced_writes() << " unsynced");
      auto crashed = std::make_unique<MemoryBlockIo>(raw->AfterCrash(fates));
      MemoryBlockIo* medium = crashed.get();
      ::testing::internal::CaptureStderr();
      auto reopened = Open(std::move(crashed));
      (void)::testing::internal::GetCapturedStderr();
      ASSERT_NE(reopened, nullptr);
      EXPECT_TRUE(reopened->has_metadata());
      auto state = lp::InspectSuper(*medium);
      ASSERT_TRUE(state.ok());
      for (uint32_t slot = 0; slot < 2; ++slot) {
        EXPECT_TRUE(state->slots[slot][0].status.ok() && state->slots[slot][1].status.ok()) << "slot " << slot;
        auto m = lp::ReadMetadata(*medium, slot);
        ASSERT_TRUE(m.ok()) << m.status().ToString();
        EXPECT_TRUE(SameLayout(*m, before) || SameLayout(*m, after)) << "slot " << slot;
      }
    }
  }
}

TEST(DynamicPartitionsTest, EveryChangeSurvivesACrashAtEveryWriteAndSync) {
  const lp::Metadata base = Layout({3 * kMiB, kMiB, 2 * kMiB, kMiB});
  const std::vector<uint8_t> empty = EmptyImage(Layout({0, 0, 0, 0}));
  struct Case {
    const char* name;
    std::function<Status(DynamicPartitions&)> change;
  } cases[] = {
      {"update-super", [&](DynamicPartitions& d) { return d.UpdateSuper(empty, false, "_a"); }},
      {"update-super wipe", [&](DynamicPartitions& d) { return d.UpdateSuper(empty, true, "_a"); }},
      {"create", [](DynamicPartitions& d) { return d.Create("odm_a", 2 * kMiB); }},
      {"grow", [](DynamicPartitions& d) { return d.Resize("vendor_a", 3 * kMiB); }},
      {"shrink", [](DynamicPartitions& d) { return d.Resize("system_a", kMiB); }},
      {"delete", [](DynamicPartitions& d) { return d.Delete("system_b"); }},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    CrashAtEveryStep(base, c.change);
    if (HasFatalFailure()) return;
  }
}

}  // namespace
}  // namespace flashpipe::fastboot
