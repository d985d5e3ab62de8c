// update-super's plan (PlanUpdateSuper) and the builder step under it
// (ImportPartition): what is kept of the device's metadata, what is refused
// and why, on an A/B layout as `lp make` and AOSP's super_empty.img have it.
#include "lp/update_super.h"

#include <gtest/gtest.h>

#include "lp/builder.h"
#include "lp/writer.h"

namespace flashpipe::lp {
namespace {

constexpr uint64_t kMiB = 1 << 20;
constexpr uint64_t kSuper = 64 * kMiB;

// An A/B layout: groups main_a/main_b (24 MiB each), system_a/b, vendor_a/b;
// `sizes` gives system_a, vendor_a, system_b, vendor_b (0: no extents).
Metadata AbLayout(std::array<uint64_t, 4> sizes, uint64_t super_size = kSuper, uint32_t slots = 2) {
  LayoutSpec spec;
  spec.devices.push_back({"super", super_size, 1 << 20, 0});
  spec.metadata_max_size = 8192;
  spec.metadata_slot_count = slots;
  auto b = Builder::New(spec);
  EXPECT_TRUE(b.ok()) << b.status().ToString();
  const char* names[] = {"system_a", "vendor_a", "system_b", "vendor_b"};
  EXPECT_TRUE(b->AddGroup("main_a", 24 * kMiB).ok());
  EXPECT_TRUE(b->AddGroup("main_b", 24 * kMiB).ok());
  for (int i = 0; i < 4; ++i) EXPECT_TRUE(b->AddPartition(names[i], i < 2 ? "main_a" : "main_b", kAttrReadonly).ok());
  for (int i = 0; i < 4; ++i) EXPECT_TRUE(b->ResizePartition(names[i], sizes[i]).ok()) << names[i];
  auto m = b->Export();
  EXPECT_TRUE(m.ok()) << m.status().ToString();
  return *m;
}

SuperTarget Target(const Metadata& m) { return {"super", kSuper, m.geometry}; }

std::vector<ExtentEntry> ExtentsNamed(const Metadata& m, const char* name) {
  const PartitionEntry* p = FindPartition(m, name);
  EXPECT_NE(p, nullptr) << name;
  if (p == nullptr) return {};
  auto e = ExtentsOf(m, *p);
  return {e.begin(), e.end()};
}

TEST(LpUpdateSuperTest, KeepsTheOtherSlotsPartitionsWithTheirExtents) {
  Metadata device = AbLayout({8 * kMiB, 4 * kMiB, 6 * kMiB, 2 * kMiB});
  Metadata empty = AbLayout({0, 0, 0, 0});
  auto plan = PlanUpdateSuper(Target(device), empty, &device, "_a", false);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_FALSE(plan->flash);
  EXPECT_EQ(plan->kept, (std::vector<std::string>{"system_b", "vendor_b"}));
  EXPECT_EQ(ExtentsNamed(plan->metadata, "system_b"), ExtentsNamed(device, "system_b"));
  EXPECT_EQ(ExtentsNamed(plan->metadata, "vendor_b"), ExtentsNamed(device, "vendor_b"));
  EXPECT_TRUE(ExtentsNamed(plan->metadata, "system_a").empty());  // the current slot starts empty
  EXPECT_TRUE(ExtentsNamed(plan->metadata, "vendor_a").empty());
  // On slot b it is the other way round.
  auto on_b = PlanUpdateSuper(Target(device), empty, &device, "_b", false);
  ASSERT_TRUE(on_b.ok());
  EXPECT_EQ(on_b->kept, (std::vector<std::string>{"system_a", "vendor_a"}));
  EXPECT_EQ(ExtentsNamed(on_b->metadata, "system_a"), ExtentsNamed(device, "system_a"));
}

TEST(LpUpdateSuperTest, WipeOrUnreadableMetadataTakesTheImageWhole) {
  Metadata device = AbLayout({8 * kMiB, 4 * kMiB, 6 * kMiB, 2 * kMiB});
  Metadata empty = AbLayout({0, 0, 0, 0});
  for (const Metadata* old : std::initializer_list<const Metadata*>{&device, nullptr}) {
    auto plan = PlanUpdateSuper(Target(device), empty, old, "_a", /*wipe=*/old != nullptr);
    ASSERT_TRUE(plan.ok()) << plan.status().ToString();
    EXPECT_TRUE(plan->flash);
    EXPECT_TRUE(plan->kept.empty());
    EXPECT_EQ(plan->metadata.partitions, empty.partitions);
    EXPECT_TRUE(plan->metadata.extents.empty());
  }
}

TEST(LpUpdateSuperTest, WithoutSlotsEveryPartitionIsKeptButScratchAndCow) {
  LayoutSpec spec;
  spec.devices.push_back({"super", kSuper, 1 << 20, 0});
  spec.metadata_max_size = 8192;
  spec.metadata_slot_count = 1;
  auto b = Builder::New(spec);
  ASSERT_TRUE(b.ok());
  ASSERT_TRUE(b->AddGroup("cow", 0).ok());
  for (auto [name, group] : {std::pair{"system", "default"}, {"scratch", "default"}, {"system_cow", "cow"}}) {
    ASSERT_TRUE(b->AddPartition(name, group, 0).ok());
    ASSERT_TRUE(b->ResizePartition(name, 2 * kMiB).ok());
  }
  auto device = b->Export();
  ASSERT_TRUE(device.ok());
  auto e = Builder::New(spec);
  ASSERT_TRUE(e.ok());
  ASSERT_TRUE(e->AddGroup("cow", 0).ok());
  auto empty = e->Export();
  ASSERT_TRUE(empty.ok());
  auto plan = PlanUpdateSuper({"super", kSuper, device->geometry}, *empty, &*device, "", false);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->kept, std::vector<std::string>{"system"});
  EXPECT_EQ(ExtentsNamed(plan->metadata, "system"), ExtentsNamed(*device, "system"));
  EXPECT_EQ(FindPartition(plan->metadata, "scratch"), nullptr);
}

TEST(LpUpdateSuperTest, AnImageForAnotherDeviceIsRefused) {
  Metadata device = AbLayout({8 * kMiB, 0, 0, 0});
  Metadata empty = AbLayout({0, 0, 0, 0});
  auto refused = [&](const SuperTarget& t, const Metadata& in) {
    auto plan = PlanUpdateSuper(t, in, &device, "_a", /*wipe=*/true);
    EXPECT_FALSE(plan.ok());
    return plan.ok() ? std::string() : plan.status().message();
  };
  EXPECT_EQ(refused({"super", 2 * kSuper, device.geometry}, empty),
            "super_empty.img is for a super of 67108864 bytes, 'super' has 134217728");
  EXPECT_EQ(refused({"main", kSuper, device.geometry}, empty),
            "super_empty.img is for block device 'super', the super partition here is 'main'");
  Metadata three = AbLayout({0, 0, 0, 0}, kSuper, 3);
  EXPECT_EQ(refused(Target(device), three),
            "super_empty.img's geometry (3 slots of 8192 bytes, 4096-byte blocks) differs from the device's "
            "(2 slots of 8192 bytes, 4096-byte blocks)");
  // Without a valid geometry on the device any geometry goes (a blank super).
  EXPECT_TRUE(PlanUpdateSuper({"super", kSuper, std::nullopt}, three, nullptr, "_a", false).ok());
}

TEST(LpUpdateSuperTest, AKeptPartitionThatDoesNotFitAsksForWipe) {
  Metadata device = AbLayout({8 * kMiB, 0, 20 * kMiB, 0});
  // The new layout's main_b holds only 16 MiB: system_b's 20 MiB do not fit.
  LayoutSpec spec;
  spec.devices.push_back({"super", kSuper, 1 << 20, 0});
  spec.metadata_max_size = 8192;
  auto b = Builder::New(spec);
  ASSERT_TRUE(b.ok());
  ASSERT_TRUE(b->AddGroup("main_a", 24 * kMiB).ok());
  ASSERT_TRUE(b->AddGroup("main_b", 16 * kMiB).ok());
  auto small = b->Export();
  ASSERT_TRUE(small.ok());
  auto plan = PlanUpdateSuper(Target(device), *small, &device, "_a", false);
  ASSERT_FALSE(plan.ok());
  EXPECT_EQ(plan.status().code(), Code::kNoSpace);
  EXPECT_EQ(plan.status().message(),
            "cannot keep system_b: partition system_b: 20971520 bytes do not fit group main_b (0 of 16777216 bytes "
            "used); use update-super:super:wipe");
  // A layout without the group at all.
  auto c = Builder::New(spec);
  ASSERT_TRUE(c.ok());
  auto bare = c->Export();
  ASSERT_TRUE(bare.ok());
  plan = PlanUpdateSuper(Target(device), *bare, &device, "_a", false);
  ASSERT_FALSE(plan.ok());
  EXPECT_EQ(plan.status().message(),
            "cannot keep system_b: partition system_b: the new layout has no group main_b; use update-super:super:wipe");
}

TEST(LpBuilderImportTest, RefusesSpaceAlreadyTakenAndLeavesTheBuilderAsItWas) {
  Metadata device = AbLayout({8 * kMiB, 0, 6 * kMiB, 0});
  // The new layout already put system_a where the device has system_b.
  auto b = Builder::FromMetadata(AbLayout({0, 0, 0, 0}));
  ASSERT_TRUE(b.ok());
  ASSERT_TRUE(b->ResizePartition("system_a", 16 * kMiB).ok());
  Status st = b->ImportPartition(device, *FindPartition(device, "system_b"));
  EXPECT_EQ(st.code(), Code::kInvalidArgument);
  EXPECT_NE(st.message().find("already allocated in the new layout"), std::string::npos) << st.message();
  EXPECT_TRUE(b->FindPartition("system_b")->extents.empty());
  // A partition that already has space here is not overwritten.
  st = b->ImportPartition(device, *FindPartition(device, "system_a"));
  EXPECT_EQ(st.message(), "partition system_a already has 16777216 bytes in the new layout");
  // A partition the new layout lacks is added to its group.
  auto fresh = Builder::FromMetadata(AbLayout({0, 0, 0, 0}));
  ASSERT_TRUE(fresh.ok());
  ASSERT_TRUE(fresh->RemovePartition("system_b").ok());
  ASSERT_TRUE(fresh->ImportPartition(device, *FindPartition(device, "system_b")).ok());
  EXPECT_EQ(fresh->FindPartition("system_b")->group, "main_b");
  EXPECT_EQ(fresh->FindPartition("system_b")->attributes, kAttrReadonly);
  EXPECT_EQ(fresh->FindPartition("system_b")->size(), 6 * kMiB);
  EXPECT_TRUE(fresh->Export().ok());
}

}  // namespace
}  // namespace flashpipe::lp
