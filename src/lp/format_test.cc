#include "lp/format.h"

#include <gtest/gtest.h>

#include <vector>

#include "lp/lp_test_util.h"

namespace flashpipe::lp {
namespace {

using test::Get;

// Field positions as metadata_format.h documents them; a field in the wrong
// place would still round-trip through our own parser, so pin them here.
TEST(LpFormatTest, GeometryFieldsSitWhereLiblpPutsThem) {
  Geometry g;
  g.checksum.fill(0xcc);
  g.metadata_max_size = 0x11223344;
  g.metadata_slot_count = 3;
  g.logical_block_size = 4096;
  std::vector<uint8_t> b(kGeometrySize);
  SerializeGeometry(g, b);
  EXPECT_EQ(Get<uint32_t>(b, 0), 0x616c4467u);
  EXPECT_EQ(Get<uint32_t>(b, 4), 52u);
  EXPECT_EQ(b[8], 0xcc);
  EXPECT_EQ(b[39], 0xcc);
  EXPECT_EQ(Get<uint32_t>(b, 40), 0x11223344u);
  EXPECT_EQ(Get<uint32_t>(b, 44), 3u);
  EXPECT_EQ(Get<uint32_t>(b, 48), 4096u);
  EXPECT_EQ(ParseGeometry(b), g);
}

TEST(LpFormatTest, HeaderFieldsSitWhereLiblpPutsThem) {
  Header h;
  h.minor_version = 2;
  h.header_size = kHeaderSizeV1_2;
  h.tables_size = 0xabcd;
  h.partitions = {1, 2, 52};
  h.extents = {3, 4, 24};
  h.groups = {5, 6, 48};
  h.block_devices = {7, 8, 64};
  h.flags = 0x55;
  h.reserved[123] = 9;
  std::vector<uint8_t> b(kHeaderSizeV1_2);
  SerializeHeader(h, b);
  EXPECT_EQ(Get<uint32_t>(b, 0), 0x414C5030u);
  EXPECT_EQ(Get<uint16_t>(b, 4), 10);
  EXPECT_EQ(Get<uint16_t>(b, 6), 2);
  EXPECT_EQ(Get<uint32_t>(b, 8), 256u);
  EXPECT_EQ(Get<uint32_t>(b, 44), 0xabcdu);
  EXPECT_EQ(Get<uint32_t>(b, 80), 1u);
  EXPECT_EQ(Get<uint32_t>(b, 92 + 4), 4u);
  EXPECT_EQ(Get<uint32_t>(b, 104 + 8), 48u);
  EXPECT_EQ(Get<uint32_t>(b, 116), 7u);
  EXPECT_EQ(Get<uint32_t>(b, 128), 0x55u);
  EXPECT_EQ(b[255], 9);
  Header back = ParseHeader(b, kHeaderSizeV1_2);
  EXPECT_EQ(back.flags, 0x55u);
  EXPECT_EQ(back.block_devices.num_entries, 8u);
  // A 10.0 header is 128 bytes: no flags.
  EXPECT_EQ(ParseHeader(b, kHeaderSizeV1_0).flags, 0u);
}

TEST(LpFormatTest, EntriesSitWhereLiblpPutsThem) {
  std::vector<uint8_t> p(kPartitionEntrySize);
  SerializePartition({"system_a", 1, 2, 3, 4}, p);
  EXPECT_EQ(std::string(reinterpret_cast<char*>(p.data())), "system_a");
  EXPECT_EQ(p[35], 0);
  EXPECT_EQ(Get<uint32_t>(p, 36), 1u);
  EXPECT_EQ(Get<uint32_t>(p, 48), 4u);
  EXPECT_EQ(ParsePartition(p), (PartitionEntry{"system_a", 1, 2, 3, 4}));

  std::vector<uint8_t> e(kExtentEntrySize);
  SerializeExtent({0x1000, kTargetZero, 0x2000, 5}, e);
  EXPECT_EQ(Get<uint64_t>(e, 0), 0x1000u);
  EXPECT_EQ(Get<uint32_t>(e, 8), 1u);
  EXPECT_EQ(Get<uint64_t>(e, 12), 0x2000u);
  EXPECT_EQ(Get<uint32_t>(e, 20), 5u);

  std::vector<uint8_t> g(kGroupEntrySize);
  SerializeGroup({"main", 1, 0x123456789}, g);
  EXPECT_EQ(Get<uint32_t>(g, 36), 1u);
  EXPECT_EQ(Get<uint64_t>(g, 40), 0x123456789u);

  std::vector<uint8_t> d(kBlockDeviceEntrySize);
  SerializeBlockDevice({2048, 1 << 20, 512, 1 << 30, "super", 1}, d);
  EXPECT_EQ(Get<uint64_t>(d, 0), 2048u);
  EXPECT_EQ(Get<uint32_t>(d, 8), 1u << 20);
  EXPECT_EQ(Get<uint32_t>(d, 12), 512u);
  EXPECT_EQ(Get<uint64_t>(d, 16), 1u << 30);
  EXPECT_EQ(std::string(reinterpret_cast<char*>(d.data() + 24)), "super");
  EXPECT_EQ(Get<uint32_t>(d, 60), 1u);
}

TEST(LpFormatTest, FullLengthNamesHaveNoTerminator) {
  std::vector<uint8_t> p(kPartitionEntrySize);
  const std::string name(36, 'x');
  SerializePartition({name, 0, 0, 0, 0}, p);
  EXPECT_EQ(ParsePartition(p).name, name);
}

TEST(LpFormatTest, CopiesLieWhereLiblpLooks) {
  Geometry g;
  g.metadata_max_size = 65536;
  g.metadata_slot_count = 3;
  EXPECT_EQ(PrimaryMetadataOffset(g, 0), 12288u);
  EXPECT_EQ(PrimaryMetadataOffset(g, 2), 12288u + 2 * 65536);
  EXPECT_EQ(BackupMetadataOffset(g, 0), 12288u + 3 * 65536);
  EXPECT_EQ(BackupMetadataOffset(g, 1), 12288u + 4 * 65536);
  EXPECT_EQ(TotalMetadataSize(g), 4096u + 2 * (4096 + 3 * 65536));
}

}  // namespace
}  // namespace flashpipe::lp
