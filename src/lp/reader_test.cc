#include "lp/reader.h"

#include <gtest/gtest.h>

#include <functional>

#include "lp/lp_test_util.h"
#include "lp/writer.h"
#include "testing/memory_block_io.h"

namespace flashpipe::lp {
namespace {

using test::EntryOffset;
using test::Get;
using test::Put;
using test::Resign;
using test::ResignGeometry;

// The sample as a super_empty.img: geometry at 0, metadata at 0x1000 with
// tables partitions (3 x 52 at +128), extents (2 x 24), groups (2 x 48),
// block devices (1 x 64): tables_size 364.
std::vector<uint8_t> EmptyImage() {
  auto img = SerializeEmptyImage(test::SampleMetadata());
  EXPECT_TRUE(img.ok()) << img.status().ToString();
  return std::move(img).value();
}

constexpr uint64_t kMeta = 0x1000;

std::string ErrorOf(const std::vector<uint8_t>& img) {
  auto m = ParseEmptyImage(img);
  return m.ok() ? "OK" : m.status().message();
}

TEST(LpReaderTest, SampleReadsBack) {
  auto m = ParseEmptyImage(EmptyImage());
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  ASSERT_EQ(m->partitions.size(), 3u);
  EXPECT_EQ(m->partitions[0].name, "system");
  EXPECT_EQ(PartitionSize(*m, m->partitions[0]), 8u << 20);
  EXPECT_EQ(m->extents[0].target_data, 2048u);  // first MiB after the metadata area
  EXPECT_EQ(m->extents[1].target_data, 2048u + 16384);
  EXPECT_EQ(m->groups[1].name, "main");
  EXPECT_EQ(m->block_devices[0].first_logical_sector, 2048u);
  EXPECT_EQ(m->header.tables_size, 364u);
}

struct Corruption {
  const char* name;
  std::function<void(std::vector<uint8_t>&)> apply;
  const char* error;
};

// Each mutation breaks exactly one rule; the checksums are signed again
// unless the checksum is the rule under test.
const Corruption kCorruptions[] = {
    {"geometry magic", [](auto& b) { Put<uint32_t>(b, 0, 0x12345678); },
     "geometry at byte 0x0: bad magic 0x12345678 (expected 0x616c4467)"},
    {"geometry struct_size", [](auto& b) { Put<uint32_t>(b, 4, 60); ResignGeometry(b, 0); },
     "geometry at byte 0x0: struct_size 60 != 52"},
    {"geometry checksum", [](auto& b) { b[44] ^= 1; }, "geometry at byte 0x0: SHA-256 checksum mismatch"},
    {"slot count", [](auto& b) { Put<uint32_t>(b, 44, 0); ResignGeometry(b, 0); },
     "geometry at byte 0x0: metadata_slot_count is 0"},
    {"max size", [](auto& b) { Put<uint32_t>(b, 40, 4000); ResignGeometry(b, 0); },
     "geometry at byte 0x0: metadata_max_size 4000 is not a non-zero multiple of 512"},
    {"logical block size", [](auto& b) { Put<uint32_t>(b, 48, 100); ResignGeometry(b, 0); },
     "geometry at byte 0x0: logical_block_size 100 is not a non-zero multiple of 512"},
    {"metadata area overflow",
     [](auto& b) { Put<uint32_t>(b, 40, 0xfffffe00); Put<uint32_t>(b, 44, 0xffffffff); ResignGeometry(b, 0); },
     "geometry at byte 0x0: metadata_slot_count 4294967295 x metadata_max_size 4294966784 is too large"},
    {"truncated header", [](auto& b) { b.resize(kMeta + 100); },
     "metadata at byte 0x1000: truncated: the header needs 128 bytes, 100 available"},
    {"header magic", [](auto& b) { Put<uint32_t>(b, kMeta, 0); },
     "metadata at byte 0x1000: bad magic 0x00000000 (expected 0x414c5030)"},
    {"major version", [](auto& b) { Put<uint16_t>(b, kMeta + 4, 11); Resign(b, kMeta); },
     "metadata at byte 0x1000: version 11.0 unsupported (flashpipe reads 10.0 to 10.2)"},
    {"minor version", [](auto& b) { Put<uint16_t>(b, kMeta + 6, 3); Resign(b, kMeta); },
     "metadata at byte 0x1000: version 10.3 unsupported (flashpipe reads 10.0 to 10.2)"},
    {"header_size for 10.0", [](auto& b) { Put<uint32_t>(b, kMeta + 8, 256); Resign(b, kMeta); },
     "metadata at byte 0x1000: header_size 256 != 128 for version 10.0"},
    {"header_size for 10.2", [](auto& b) { Put<uint16_t>(b, kMeta + 6, 2); Resign(b, kMeta); },
     "metadata at byte 0x1000: header_size 128 != 256 for version 10.2"},
    {"header checksum", [](auto& b) { b[kMeta + 81] ^= 1; },
     "metadata at byte 0x1000: header SHA-256 checksum mismatch"},
    {"tables larger than a slot", [](auto& b) { Put<uint32_t>(b, kMeta + 44, 4096); Resign(b, kMeta); },
     "metadata at byte 0x1000: header_size 128 + tables_size 4096 exceed metadata_max_size 4096"},
    {"table bounds", [](auto& b) { Put<uint32_t>(b, kMeta + 84, 100); Resign(b, kMeta); },
     "metadata at byte 0x1000: partitions table (offset 0, 100 entries of 52 bytes) runs past tables_size 364"},
    {"table offset", [](auto& b) { Put<uint32_t>(b, kMeta + 116, 365); Resign(b, kMeta); },
     "metadata at byte 0x1000: block_devices table (offset 365, 1 entries of 64 bytes) runs past tables_size 364"},
    {"entry size", [](auto& b) { Put<uint32_t>(b, kMeta + 112, 40); Resign(b, kMeta); },
     "metadata at byte 0x1000: groups entry_size 40 != 48"},
    {"tables checksum", [](auto& b) { b[kMeta + 128 + 3] ^= 1; },
     "metadata at byte 0x1000: tables SHA-256 checksum mismatch"},
    {"truncated tables", [](auto& b) { b.resize(kMeta + 128 + 100); },
     "metadata at byte 0x1000: truncated: the tables need 364 bytes, 100 available"},
    {"no block device", [](auto& b) { Put<uint32_t>(b, kMeta + 120, 0); Resign(b, kMeta); },
     "metadata at byte 0x1000: no block devices (the first must be the super partition)"},
    {"first sector in the metadata area",
     [](auto& b) { Put<uint64_t>(b, EntryOffset(b, kMeta, 116, 0), 10); Resign(b, kMeta); },
     "metadata at byte 0x1000: block device 0 (byte 0x11ac): first_logical_sector 10 (byte 0x1400) lies inside "
     "the metadata area, which ends at byte 0x7000"},
    {"first sector past the end",
     [](auto& b) { Put<uint64_t>(b, EntryOffset(b, kMeta, 116, 0), 200000); Resign(b, kMeta); },
     "metadata at byte 0x1000: block device 0 (byte 0x11ac): first_logical_sector 200000 is past its size 67108864"},
    {"empty name", [](auto& b) { b[EntryOffset(b, kMeta, 80, 2)] = 0; Resign(b, kMeta); },
     "metadata at byte 0x1000: partition 2 (byte 0x10e8): the name is empty"},
    {"duplicate name",
     [](auto& b) {
       std::copy_n("system", 7, b.begin() + static_cast<std::ptrdiff_t>(EntryOffset(b, kMeta, 80, 1)));
       Resign(b, kMeta);
     },
     "metadata at byte 0x1000: partition 1 (byte 0x10b4): name \"system\" is also partition 0's"},
    {"attribute of a later version",
     [](auto& b) { Put<uint32_t>(b, EntryOffset(b, kMeta, 80, 0) + 36, kAttrReadonly | kAttrUpdated); Resign(b, kMeta); },
     "metadata at byte 0x1000: partition 0 (byte 0x1080): attributes 0x5 have bits outside 0x3 (version 10.0)"},
    {"extent list",
     [](auto& b) { Put<uint32_t>(b, EntryOffset(b, kMeta, 80, 1) + 44, 5); Resign(b, kMeta); },
     "metadata at byte 0x1000: partition 1 (byte 0x10b4): extents 1 + 5 run past the 2 extents"},
    {"group index",
     [](auto& b) { Put<uint32_t>(b, EntryOffset(b, kMeta, 80, 0) + 48, 7); Resign(b, kMeta); },
     "metadata at byte 0x1000: partition 0 (byte 0x1080): group_index 7 >= 2 groups"},
    {"shared extent",
     [](auto& b) { Put<uint32_t>(b, EntryOffset(b, kMeta, 80, 1) + 40, 0); Resign(b, kMeta); },
     "metadata at byte 0x1000: partition 1 (byte 0x10b4): extent 0 is also partition 0's"},
    {"target type",
     [](auto& b) { Put<uint32_t>(b, EntryOffset(b, kMeta, 92, 0) + 8, 5); Resign(b, kMeta); },
     "metadata at byte 0x1000: extent 0 (byte 0x111c): target_type 5 is neither LINEAR (0) nor ZERO (1)"},
    {"target source",
     [](auto& b) { Put<uint32_t>(b, EntryOffset(b, kMeta, 92, 1) + 20, 3); Resign(b, kMeta); },
     "metadata at byte 0x1000: extent 1 (byte 0x1134): block device 3 >= 1 block devices"},
    {"extent past the device",
     [](auto& b) { Put<uint64_t>(b, EntryOffset(b, kMeta, 92, 1) + 12, 131000); Resign(b, kMeta); },
     "metadata at byte 0x1000: extent 1 (byte 0x1134): 8192 sectors at sector 131000 lie outside block device "
     "\"super\" (sectors 2048 to 131072)"},
    {"extent in the metadata area",
     [](auto& b) { Put<uint64_t>(b, EntryOffset(b, kMeta, 92, 0) + 12, 8); Resign(b, kMeta); },
     "metadata at byte 0x1000: extent 0 (byte 0x111c): 16384 sectors at sector 8 lie outside block device "
     "\"super\" (sectors 2048 to 131072)"},
    {"overlapping extents",
     [](auto& b) { Put<uint64_t>(b, EntryOffset(b, kMeta, 92, 1) + 12, 2148); Resign(b, kMeta); },
     "metadata at byte 0x1000: extents 0 and 1 overlap on block device \"super\" at sector 2148"},
};

TEST(LpReaderTest, EveryCorruptionIsRefusedWithItsReason) {
  for (const auto& c : kCorruptions) {
    std::vector<uint8_t> img = EmptyImage();
    c.apply(img);
    EXPECT_EQ(ErrorOf(img), c.error) << c.name;
  }
}

TEST(LpReaderTest, UpdatedAttributeIsValidFromVersion10_1) {
  std::vector<uint8_t> img = EmptyImage();
  Put<uint16_t>(img, kMeta + 6, 1);
  Put<uint32_t>(img, EntryOffset(img, kMeta, 80, 0) + 36, kAttrUpdated);
  Resign(img, kMeta);
  auto m = ParseEmptyImage(img);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ(m->partitions[0].attributes, kAttrUpdated);
}

TEST(LpReaderTest, ExpandedHeaderKeepsItsFlags) {
  Builder b = test::SampleBuilder();
  b.SetHeaderFlags(kHeaderFlagVirtualAb);
  auto m = b.Export();
  ASSERT_TRUE(m.ok());
  auto img = SerializeEmptyImage(*m);
  ASSERT_TRUE(img.ok());
  EXPECT_EQ(Get<uint32_t>(*img, kMeta + 8), 256u);
  auto back = ParseEmptyImage(*img);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->header.minor_version, 2);
  EXPECT_EQ(back->header.flags, kHeaderFlagVirtualAb);
}

// A super in memory with the sample flashed into both slots.
testing::MemoryBlockIo FlashedSuper() {
  testing::MemoryBlockIo dev(64 << 20, "super");
  Status s = FlashMetadata(dev, test::SampleMetadata());
  EXPECT_TRUE(s.ok()) << s.ToString();
  return dev.AfterCrash(true);
}

TEST(LpReaderTest, FallsBackToTheBackupCopy) {
  testing::MemoryBlockIo dev = FlashedSuper();
  dev.Poke(0x3000 + 20, 0xff);  // slot 0 primary header
  auto m = ReadMetadata(dev, 0);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ(m->partitions.size(), 3u);
  auto st = InspectSuper(dev);
  ASSERT_TRUE(st.ok());
  ASSERT_EQ(st->slots.size(), 2u);
  EXPECT_EQ(st->slots[0][0].status.message(), "slot 0 primary metadata at byte 0x3000: header SHA-256 checksum mismatch");
  EXPECT_TRUE(st->slots[0][1].status.ok());
  EXPECT_TRUE(st->slots[1][0].status.ok());
}

TEST(LpReaderTest, BothCopiesBadNamesBoth) {
  testing::MemoryBlockIo dev = FlashedSuper();
  dev.Poke(0x3000 + 20, 0xff);
  dev.Poke(0x5000, 0);
  auto m = ReadMetadata(dev, 0);
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().message(),
            "no valid copy of the slot 0 metadata: slot 0 primary metadata at byte 0x3000: header SHA-256 checksum "
            "mismatch; slot 0 backup metadata at byte 0x5000: bad magic 0x414c5000 (expected 0x414c5030)");
  EXPECT_TRUE(ReadMetadata(dev, 1).ok());  // the other slot is intact
}

TEST(LpReaderTest, GeometryFallsBackThenFails) {
  testing::MemoryBlockIo dev = FlashedSuper();
  dev.Poke(0x1000 + 41, 0x7f);
  EXPECT_TRUE(ReadMetadata(dev, 0).ok());
  dev.Poke(0x2000, 0);
  auto m = ReadMetadata(dev, 0);
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().message(),
            "no valid copy of the geometry: geometry at byte 0x1000: SHA-256 checksum mismatch; geometry at byte "
            "0x2000: bad magic 0x616c4400 (expected 0x616c4467)");
}

TEST(LpReaderTest, SlotOutOfRange) {
  testing::MemoryBlockIo dev = FlashedSuper();
  auto m = ReadMetadata(dev, 2);
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().message(), "slot 2 does not exist: the geometry has 2");
}

TEST(LpReaderTest, DeviceTooSmallForItsMetadata) {
  testing::MemoryBlockIo full = FlashedSuper();
  std::vector<uint8_t> bytes = full.bytes();
  bytes.resize(0x3000 + 200);  // cut inside slot 0's tables
  testing::MemoryBlockIo dev(bytes, "cut");
  auto m = ReadMetadataCopy(dev, *ReadGeometry(dev), 0, Copy::kPrimary);
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().message(),
            "slot 0 primary metadata at byte 0x3000: truncated: the tables need 364 bytes, 72 available");
}

// Found by lp_metadata_fuzzer: a device that ends inside the backup geometry
// made InspectSuper fail instead of reporting the copies it cannot hold.
TEST(LpReaderTest, AShortDeviceIsReportedCopyByCopy) {
  std::vector<uint8_t> bytes = FlashedSuper().bytes();
  bytes.resize(0x1400);
  testing::MemoryBlockIo dev(bytes, "short");
  auto st = InspectSuper(dev);
  ASSERT_TRUE(st.ok()) << st.status().ToString();
  EXPECT_TRUE(st->geometry[0].status.ok());
  EXPECT_EQ(st->geometry[1].status.message(), "geometry at byte 0x2000: truncated: the device ends at byte 0x1400");
  ASSERT_EQ(st->slots.size(), 2u);
  EXPECT_EQ(st->slots[1][0].status.message(),
            "slot 1 primary metadata at byte 0x4000: truncated: the header needs 128 bytes, 0 available");
  EXPECT_EQ(RepairMetadata(dev).status().message(), "short of 5120 bytes is too small to hold both geometry copies");
}

// Found by lp_metadata_fuzzer: a geometry signed again with 2^32-1 slots made
// InspectSuper keep a report per slot until memory ran out.
TEST(LpReaderTest, AForgedSlotCountIsInspectedUpToTheCap) {
  std::vector<uint8_t> bytes = FlashedSuper().bytes();
  for (uint64_t at : {kPrimaryGeometryOffset, kBackupGeometryOffset}) {
    std::vector<uint8_t> block(bytes.begin() + at, bytes.begin() + at + kGeometryBlockSize);
    Put<uint32_t>(block, 44, 0xffffffff);
    ResignGeometry(block, 0);
    std::copy(block.begin(), block.end(), bytes.begin() + at);
  }
  testing::MemoryBlockIo dev(bytes, "forged");
  auto st = InspectSuper(dev);
  ASSERT_TRUE(st.ok()) << st.status().ToString();
  ASSERT_TRUE(st->in_use.has_value());
  EXPECT_EQ(st->in_use->metadata_slot_count, 0xffffffffu);
  EXPECT_EQ(st->slots.size(), kMaxInspectedSlots);
}

}  // namespace
}  // namespace flashpipe::lp
