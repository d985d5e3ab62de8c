// The liblp ("logical partitions") metadata format of Android's `super`
// partition: constants, the on-disk structs and where each copy lives. The
// rules flashpipe enforces are in docs/lp_format.md (the field tables are
// there too); this file only names the fields. Every field is little-endian; structs are parsed and serialized
// field by field (base/endian.h), never by casting a byte pointer.
//
// Layout of a super partition (byte offsets):
//   0                   4096 reserved bytes (zeros)
//   4096                geometry, primary copy (4096 bytes, 52 used)
//   8192                geometry, backup copy
//   12288 + max * s     metadata of slot s, primary copy (max = metadata_max_size)
//   12288 + max * (n+s) metadata of slot s, backup copy (n = metadata_slot_count)
//   first_logical_sector * 512 ... logical partitions' extents
// A super_empty.img is one geometry block followed by one metadata copy.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>

namespace flashpipe::lp {

inline constexpr uint32_t kGeometryMagic = 0x616c4467;
inline constexpr uint32_t kHeaderMagic = 0x414C5030;
inline constexpr uint16_t kMajorVersion = 10;
inline constexpr uint16_t kMinorVersionMax = 2;
inline constexpr uint16_t kMinorVersionForUpdatedAttr = 1;   // UPDATED, DISABLED
inline constexpr uint16_t kMinorVersionForExpandedHeader = 2;

inline constexpr uint32_t kSectorSize = 512;
inline constexpr uint64_t kReservedBytes = 4096;
inline constexpr uint64_t kGeometryBlockSize = 4096;  // each geometry copy's space
inline constexpr uint32_t kDefaultAlignment = 1 << 20;
inline constexpr const char* kDefaultGroup = "default";

// Sizes of the serialized structs.
inline constexpr uint32_t kGeometrySize = 52;
inline constexpr uint32_t kHeaderSizeV1_0 = 128;
inline constexpr uint32_t kHeaderSizeV1_2 = 256;
inline constexpr uint32_t kPartitionEntrySize = 52;
inline constexpr uint32_t kExtentEntrySize = 24;
inline constexpr uint32_t kGroupEntrySize = 48;
inline constexpr uint32_t kBlockDeviceEntrySize = 64;
inline constexpr size_t kNameSize = 36;

// LpMetadataPartition::attributes.
inline constexpr uint32_t kAttrReadonly = 1u << 0;
inline constexpr uint32_t kAttrSlotSuffixed = 1u << 1;
inline constexpr uint32_t kAttrUpdated = 1u << 2;
inline constexpr uint32_t kAttrDisabled = 1u << 3;
inline constexpr uint32_t kAttrMaskV0 = kAttrReadonly | kAttrSlotSuffixed;
inline constexpr uint32_t kAttrMaskV1 = kAttrUpdated | kAttrDisabled;
// Header flags (informational, any value accepted).
inline constexpr uint32_t kHeaderFlagVirtualAb = 1u << 0;
inline constexpr uint32_t kHeaderFlagOverlaysActive = 1u << 1;
// Group and block device flags.
inline constexpr uint32_t kGroupSlotSuffixed = 1u << 0;
inline constexpr uint32_t kBlockDeviceSlotSuffixed = 1u << 0;

enum TargetType : uint32_t {
  kTargetLinear = 0,  // sectors of a block device
  kTargetZero = 1,    // reads as zeros, stores nothing
};

using Sha256 = std::array<uint8_t, 32>;

struct Geometry {
  uint32_t magic = kGeometryMagic;
  uint32_t struct_size = kGeometrySize;
  Sha256 checksum{};
  uint32_t metadata_max_size = 0;
  uint32_t metadata_slot_count = 0;
  uint32_t logical_block_size = 0;
  bool operator==(const Geometry&) const = default;
};

struct TableDescriptor {
  uint32_t offset = 0;  // from the end of the header
  uint32_t num_entries = 0;
  uint32_t entry_size = 0;
};

struct Header {
  uint32_t magic = kHeaderMagic;
  uint16_t major_version = kMajorVersion;
  uint16_t minor_version = 0;
  uint32_t header_size = kHeaderSizeV1_0;
  Sha256 header_checksum{};
  uint32_t tables_size = 0;
  Sha256 tables_checksum{};
  TableDescriptor partitions, extents, groups, block_devices;
  // Version 10.2 and later (header_size 256); zero otherwise.
  uint32_t flags = 0;
  std::array<uint8_t, 124> reserved{};
};

struct PartitionEntry {
  std::string name;  // at most 36 bytes on disk, zero-padded
  uint32_t attributes = 0;
  uint32_t first_extent_index = 0;
  uint32_t num_extents = 0;
  uint32_t group_index = 0;
  bool operator==(const PartitionEntry&) const = default;
};

struct ExtentEntry {
  uint64_t num_sectors = 0;
  uint32_t target_type = kTargetLinear;
  uint64_t target_data = 0;    // LINEAR: first sector on the block device
  uint32_t target_source = 0;  // LINEAR: index into block_devices
  bool operator==(const ExtentEntry&) const = default;
};

struct GroupEntry {
  std::string name;
  uint32_t flags = 0;
  uint64_t maximum_size = 0;  // bytes; 0 = no limit
  bool operator==(const GroupEntry&) const = default;
};

struct BlockDeviceEntry {
  uint64_t first_logical_sector = 0;
  uint32_t alignment = 0;
  uint32_t alignment_offset = 0;
  uint64_t size = 0;  // bytes
  std::string partition_name;
  uint32_t flags = 0;
  bool operator==(const BlockDeviceEntry&) const = default;
};

// Field-by-field codecs. Parse* REQUIRE bytes.size() >= the struct's size and
// do no validation (reader.h does). Serialize* write exactly the struct's
// size (the header: header_size bytes, 128 or 256); names longer than 36
// bytes are cut (the builder never makes one).
Geometry ParseGeometry(std::span<const uint8_t> bytes);
Header ParseHeader(std::span<const uint8_t> bytes, uint32_t header_size);
PartitionEntry ParsePartition(std::span<const uint8_t> bytes);
ExtentEntry ParseExtent(std::span<const uint8_t> bytes);
GroupEntry ParseGroup(std::span<const uint8_t> bytes);
BlockDeviceEntry ParseBlockDevice(std::span<const uint8_t> bytes);
void SerializeGeometry(const Geometry& g, std::span<uint8_t> out);
void SerializeHeader(const Header& h, std::span<uint8_t> out);
void SerializePartition(const PartitionEntry& p, std::span<uint8_t> out);
void SerializeExtent(const ExtentEntry& e, std::span<uint8_t> out);
void SerializeGroup(const GroupEntry& g, std::span<uint8_t> out);
void SerializeBlockDevice(const BlockDeviceEntry& b, std::span<uint8_t> out);

// Byte offsets of each copy (see the layout above).
inline constexpr uint64_t kPrimaryGeometryOffset = kReservedBytes;
inline constexpr uint64_t kBackupGeometryOffset = kReservedBytes + kGeometryBlockSize;
uint64_t PrimaryMetadataOffset(const Geometry& g, uint32_t slot);
uint64_t BackupMetadataOffset(const Geometry& g, uint32_t slot);
// Reserved bytes, both geometry copies and every metadata copy.
uint64_t TotalMetadataSize(const Geometry& g);

// SHA-256 of `data`.
Sha256 ComputeSha256(std::span<const uint8_t> data);

}  // namespace flashpipe::lp
