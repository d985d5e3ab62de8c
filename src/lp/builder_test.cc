#include "lp/builder.h"

#include <gtest/gtest.h>

#include "lp/lp_test_util.h"
#include "lp/writer.h"

namespace flashpipe::lp {
namespace {

constexpr uint64_t kMiB = 1 << 20;
constexpr uint64_t kSectorsPerMiB = kMiB / 512;

Builder Empty(uint64_t size, uint32_t alignment, uint32_t offset = 0) {
  LayoutSpec spec;
  spec.devices.push_back({"super", size, alignment, offset});
  spec.metadata_max_size = 4096;
  auto b = Builder::New(spec);
  EXPECT_TRUE(b.ok()) << b.status().ToString();
  return std::move(b).value();
}

std::vector<ExtentEntry> Extents(const Builder& b, const char* name) {
  const Partition* p = b.FindPartition(name);
  EXPECT_NE(p, nullptr) << name;
  return p == nullptr ? std::vector<ExtentEntry>() : p->extents;
}

ExtentEntry Linear(uint64_t sector, uint64_t sectors, uint32_t device = 0) {
  return {sectors, kTargetLinear, sector, device};
}

TEST(LpBuilderTest, FirstLogicalSectorFollowsTheMetadataAligned) {
  EXPECT_EQ(Empty(64 * kMiB, 1 << 20).block_devices()[0].first_logical_sector, 2048u);
  // Alignment 0 means the logical block size: 28672 bytes of metadata area.
  EXPECT_EQ(Empty(64 * kMiB, 0).block_devices()[0].first_logical_sector, 56u);
  // With an offset of 4 KiB the first aligned byte after 28672 is 1 MiB + 4 KiB.
  EXPECT_EQ(Empty(64 * kMiB, 1 << 20, 4096).block_devices()[0].first_logical_sector, 2056u);
}

TEST(LpBuilderTest, PartitionsStartOnAlignedBoundaries) {
  Builder b = Empty(64 * kMiB, 1 << 20);
  ASSERT_TRUE(b.AddPartition("system", "default", 0).ok());
  ASSERT_TRUE(b.AddPartition("vendor", "default", 0).ok());
  ASSERT_TRUE(b.ResizePartition("system", 3 * kMiB + 1).ok());  // rounded up to 4 KiB
  ASSERT_TRUE(b.ResizePartition("vendor", kMiB).ok());
  EXPECT_EQ(Extents(b, "system"), std::vector{Linear(2048, 3 * kSectorsPerMiB + 8)});
  EXPECT_EQ(Extents(b, "vendor"), std::vector{Linear(2048 + 4 * kSectorsPerMiB, kSectorsPerMiB)});
}

TEST(LpBuilderTest, AlignmentOffsetShiftsEveryExtentStart) {
  Builder b = Empty(64 * kMiB, 1 << 20, 8192);
  ASSERT_TRUE(b.AddPartition("a", "default", 0).ok());
  ASSERT_TRUE(b.AddPartition("c", "default", 0).ok());
  ASSERT_TRUE(b.ResizePartition("a", kMiB + 4096).ok());
  ASSERT_TRUE(b.ResizePartition("c", kMiB).ok());
  for (const char* name : {"a", "c"}) {
    for (const auto& e : Extents(b, name)) EXPECT_EQ(e.target_data * 512 % kMiB, 8192u) << name;
  }
  EXPECT_EQ(Extents(b, "c")[0].target_data, (3 * kMiB + 8192) / 512);
}

TEST(LpBuilderTest, GrowingTakesTheUnalignedTailFirst) {
  Builder b = Empty(64 * kMiB, 1 << 20);
  ASSERT_TRUE(b.AddPartition("system", "default", 0).ok());
  ASSERT_TRUE(b.AddPartition("vendor", "default", 0).ok());
  ASSERT_TRUE(b.ResizePartition("system", kMiB + 4096).ok());
  ASSERT_TRUE(b.ResizePartition("vendor", kMiB).ok());
  ASSERT_TRUE(b.ResizePartition("system", kMiB + 8192).ok());
  EXPECT_EQ(Extents(b, "system"), std::vector{Linear(2048, kSectorsPerMiB + 16)});
  // Past the boundary: the rest of that MiB, then space after vendor.
  ASSERT_TRUE(b.ResizePartition("system", 3 * kMiB).ok());
  EXPECT_EQ(Extents(b, "system"),
            (std::vector{Linear(2048, 2 * kSectorsPerMiB), Linear(2048 + 3 * kSectorsPerMiB, kSectorsPerMiB)}));
}

TEST(LpBuilderTest, FreedSpaceIsReusedAndPartitionsFragment) {
  Builder b = Empty(16 * kMiB, 1 << 20);
  for (const char* n : {"a", "b", "c"}) {
    ASSERT_TRUE(b.AddPartition(n, "default", 0).ok());
    ASSERT_TRUE(b.ResizePartition(n, 4 * kMiB).ok());
  }
  ASSERT_TRUE(b.RemovePartition("b").ok());
  ASSERT_TRUE(b.ResizePartition("a", 10 * kMiB).ok());
  EXPECT_EQ(Extents(b, "a"), (std::vector{Linear(2048, 8 * kSectorsPerMiB),  // its own and b's, merged
                                          Linear(2048 + 12 * kSectorsPerMiB, 2 * kSectorsPerMiB)}));
  EXPECT_EQ(b.FreeRegions(), (std::vector<Interval>{{0, 2048 + 14 * kSectorsPerMiB, 32768}}));
  // Shrinking drops the end first: the far extent goes, the first shrinks.
  ASSERT_TRUE(b.ResizePartition("a", 3 * kMiB).ok());
  EXPECT_EQ(Extents(b, "a"), std::vector{Linear(2048, 3 * kSectorsPerMiB)});
  ASSERT_TRUE(b.ResizePartition("a", 0).ok());
  EXPECT_TRUE(Extents(b, "a").empty());
}

TEST(LpBuilderTest, NoRoomIsAClearErrorAndChangesNothing) {
  Builder b = Empty(16 * kMiB, 1 << 20);
  ASSERT_TRUE(b.AddPartition("a", "default", 0).ok());
  ASSERT_TRUE(b.ResizePartition("a", 10 * kMiB).ok());
  Status s = b.ResizePartition("a", 20 * kMiB);
  EXPECT_EQ(s.code(), Code::kNoSpace);
  EXPECT_EQ(s.message(), "not enough free space for partition a: 10485760 more bytes needed, 5242880 free");
  EXPECT_EQ(Extents(b, "a"), std::vector{Linear(2048, 10 * kSectorsPerMiB)});
  ASSERT_TRUE(b.ResizePartition("a", 15 * kMiB).ok());  // exactly what is left
  EXPECT_TRUE(b.FreeRegions().empty());
}

TEST(LpBuilderTest, GroupMaximumSizeLimitsItsPartitions) {
  Builder b = Empty(64 * kMiB, 1 << 20);
  ASSERT_TRUE(b.AddGroup("main", 6 * kMiB).ok());
  ASSERT_TRUE(b.AddPartition("system", "main", 0).ok());
  ASSERT_TRUE(b.AddPartition("vendor", "main", 0).ok());
  ASSERT_TRUE(b.AddPartition("other", "default", 0).ok());
  ASSERT_TRUE(b.ResizePartition("system", 4 * kMiB).ok());
  Status s = b.ResizePartition("vendor", 3 * kMiB);
  EXPECT_EQ(s.code(), Code::kNoSpace);
  EXPECT_EQ(s.message(), "partition vendor: group main has 2097152 of its 6291456 bytes free; 3145728 more needed");
  EXPECT_TRUE(Extents(b, "vendor").empty());
  EXPECT_TRUE(b.ResizePartition("vendor", 2 * kMiB).ok());
  EXPECT_TRUE(b.ResizePartition("other", 20 * kMiB).ok());  // the default group has no limit
  EXPECT_EQ(b.GroupUsage("main"), 6 * kMiB);
  EXPECT_EQ(b.ResizeGroup("main", 5 * kMiB).message(), "group main already holds 6291456 bytes, more than 5242880");
  EXPECT_EQ(b.RemoveGroup("main").message(), "group main still holds partition system");
}

TEST(LpBuilderTest, SecondBlockDeviceTakesWhatTheFirstCannot) {
  LayoutSpec spec;
  spec.devices.push_back({"super", 4 * kMiB, 1 << 20, 0});
  spec.devices.push_back({"system_b", 4 * kMiB, 1 << 20, 0});
  spec.metadata_max_size = 4096;
  auto b = Builder::New(spec);
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  EXPECT_EQ(b->block_devices()[1].first_logical_sector, 2048u);  // 512 bytes kept for an MBR, aligned
  ASSERT_TRUE(b->AddPartition("system", "default", 0).ok());
  ASSERT_TRUE(b->ResizePartition("system", 5 * kMiB).ok());
  EXPECT_EQ(Extents(*b, "system"), (std::vector{Linear(2048, 3 * kSectorsPerMiB), Linear(2048, 2 * kSectorsPerMiB, 1)}));
  auto m = b->Export();
  ASSERT_TRUE(m.ok()) << m.status().ToString();
}

TEST(LpBuilderTest, RefusesBadLayoutsAndNames) {
  LayoutSpec spec;
  spec.devices.push_back({"super", 16384, 4096, 0});
  spec.metadata_max_size = 4096;
  EXPECT_EQ(Builder::New(spec).status().message(),
            "block device super of 16384 bytes is too small: logical partitions start at byte 28672 and need at "
            "least one block of 4096");
  spec.devices[0] = {"super", 64 * kMiB + 512, 4096, 0};
  EXPECT_EQ(Builder::New(spec).status().message(),
            "block device super: size 67109376 is not a non-zero multiple of the logical block size 4096 (up to 2^60)");
  spec.devices[0] = {"../super", 64 * kMiB, 4096, 0};
  EXPECT_EQ(Builder::New(spec).status().message(),
            "block device name \"../super\" is not 1 to 36 characters of A-Z a-z 0-9 _ -");
  Builder b = Empty(64 * kMiB, 4096);
  EXPECT_EQ(b.AddPartition("sys/tem", "default", 0).message(),
            "partition name \"sys/tem\" is not 1 to 36 characters of A-Z a-z 0-9 _ -");
  EXPECT_EQ(b.AddPartition(std::string(37, 'a'), "default", 0).code(), Code::kInvalidArgument);
  EXPECT_EQ(b.AddPartition("system", "nogroup", 0).message(), "partition system: no group nogroup");
  ASSERT_TRUE(b.AddPartition("system", "default", 0).ok());
  EXPECT_EQ(b.AddPartition("system", "default", 0).message(), "partition system already exists");
  EXPECT_EQ(b.AddGroup("default", 0).message(), "group default already exists");
  EXPECT_EQ(b.ResizePartition("nope", 1).message(), "no partition nope");
}

TEST(LpBuilderTest, SizesRoundUpToLogicalBlocks) {
  Builder b = Empty(64 * kMiB, 4096);
  ASSERT_TRUE(b.AddPartition("tiny", "default", 0).ok());
  ASSERT_TRUE(b.ResizePartition("tiny", 1).ok());
  EXPECT_EQ(b.FindPartition("tiny")->size(), 4096u);
}

TEST(LpBuilderTest, MetadataRoundTripsThroughTheBuilder) {
  Metadata m = test::SampleMetadata();
  auto b = Builder::FromMetadata(m);
  ASSERT_TRUE(b.ok());
  auto back = b->Export();
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(*SerializeMetadata(*back), *SerializeMetadata(m));
}

TEST(LpBuilderTest, ZeroExtentsCountInSizeNotOnDisk) {
  Metadata m = test::SampleMetadata();
  m.extents.push_back({2048, kTargetZero, 0, 0});
  m.partitions[2].first_extent_index = 2;
  m.partitions[2].num_extents = 1;
  auto b = Builder::FromMetadata(m);
  ASSERT_TRUE(b.ok());
  const Partition* p = b->FindPartition("product");
  EXPECT_EQ(p->size(), kMiB);
  EXPECT_EQ(p->bytes_on_disk(), 0u);
  ASSERT_TRUE(b->ResizePartition("product", 2 * kMiB).ok());  // LINEAR after the ZERO extent
  ASSERT_EQ(p->extents.size(), 2u);
  EXPECT_EQ(p->extents[1].target_type, kTargetLinear);
  EXPECT_TRUE(b->Export().ok());
}

TEST(LpBuilderTest, NewerAttributesRaiseTheMinorVersion) {
  Builder b = Empty(64 * kMiB, 4096);
  ASSERT_TRUE(b.AddPartition("system", "default", kAttrReadonly).ok());
  EXPECT_EQ(b.Export()->header.minor_version, 0);
  ASSERT_TRUE(b.AddPartition("vendor", "default", kAttrUpdated).ok());
  EXPECT_EQ(b.Export()->header.minor_version, 1);
  b.SetHeaderFlags(kHeaderFlagVirtualAb);
  EXPECT_EQ(b.Export()->header.minor_version, 2);
  EXPECT_EQ(b.Export()->header.header_size, kHeaderSizeV1_2);
}

}  // namespace
}  // namespace flashpipe::lp
