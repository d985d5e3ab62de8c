// Builder: edits liblp metadata -- groups, partitions and the extents that
// give partitions their space -- and exports it for the writer.
//
// Allocation is first-fit in block device order (the super first), in the
// free space between existing LINEAR extents, which is everything from a
// device's first_logical_sector to its end. A free region starts at an
// aligned byte (offset % alignment == alignment_offset % alignment; the
// logical block size when alignment is 0) and is used in whole logical
// blocks. Growing first takes the unaligned space right after a partition's
// last extent, so repeated small growth does not waste it; a grown partition
// may end up with several extents (fragmentation). Shrinking drops space from
// the end; deleting frees all of it. A group with a maximum_size limits the
// LINEAR bytes of its partitions. Every refusal leaves the builder unchanged
// and says why: "not enough free space for partition system: 8388608 more
// bytes needed, 4194304 free".
//
// alignment_offset: current liblp (Android 11 on) stores it but ignores it
// when allocating; flashpipe honours it as the geometry field describes. With
// the default offset 0 (every real device) both give the same layout.
//
// Names (partitions, groups, block devices) are 1 to 36 characters of
// [A-Za-z0-9_-], unique: they become file names in `lp unpack`.
// Value type; thread-compatible.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "lp/metadata.h"

namespace flashpipe::lp {

struct BlockDeviceSpec {
  std::string name = "super";
  uint64_t size = 0;
  uint32_t alignment = kDefaultAlignment;  // bytes; 0: the logical block size
  uint32_t alignment_offset = 0;
};

struct LayoutSpec {
  std::vector<BlockDeviceSpec> devices;  // [0] holds the metadata
  uint32_t metadata_max_size = 65536;    // rounded up to 512
  uint32_t metadata_slot_count = 2;
  uint32_t logical_block_size = 4096;
};

struct Partition {
  std::string name;
  std::string group;
  uint32_t attributes = 0;
  std::vector<ExtentEntry> extents;  // in partition order
  uint64_t size() const;             // bytes, LINEAR and ZERO
  uint64_t bytes_on_disk() const;    // LINEAR only
};

struct Group {
  std::string name;
  uint64_t maximum_size = 0;  // 0: no limit
  uint32_t flags = 0;
};

// Free sectors [start, end) of block device `device`.
struct Interval {
  uint32_t device = 0;
  uint64_t start = 0, end = 0;
  uint64_t sectors() const { return end - start; }
  bool operator==(const Interval&) const = default;
};

class Builder {
 public:
  // A new, empty layout with the group "default" (no limit).
  static Result<Builder> New(const LayoutSpec& spec);
  // The layout `m` describes. REQUIRES: m passed the reader's checks.
  static Result<Builder> FromMetadata(const Metadata& m);

  Status AddGroup(const std::string& name, uint64_t maximum_size);
  // Fails if a partition still belongs to it.
  Status RemoveGroup(std::string_view name);
  // Fails if the group already holds more than `maximum_size`.
  Status ResizeGroup(std::string_view name, uint64_t maximum_size);
  // An empty partition (no extents).
  Status AddPartition(const std::string& name, const std::string& group, uint32_t attributes);
  Status RemovePartition(std::string_view name);
  // Rounds `size` up to whole logical blocks, then grows or shrinks.
  Status ResizePartition(std::string_view name, uint64_t size);
  // Carries partition `p` of `from` over with its extents as they are (what
  // fastboot's update-super does with the other slot's partitions): into an
  // empty partition of that name, or a new one in the group of the same
  // name. Refused when the partition here already has space, the group does
  // not exist or cannot hold it, or an extent is outside its device or
  // overlaps space already allocated. REQUIRES: from passed the reader's checks.
  Status ImportPartition(const Metadata& from, const PartitionEntry& p);
  // Sets header flags (kHeaderFlagVirtualAb); needs the 10.2 header.
  void SetHeaderFlags(uint32_t flags);

  const Partition* FindPartition(std::string_view name) const;
  const Group* FindGroup(std::string_view name) const;
  const std::vector<Partition>& partitions() const { return partitions_; }
  const std::vector<Group>& groups() const { return groups_; }
  const std::vector<BlockDeviceEntry>& block_devices() const { return devices_; }
  const Geometry& geometry() const { return geometry_; }
  std::vector<Interval> FreeRegions() const;
  uint64_t GroupUsage(std::string_view group) const;  // LINEAR bytes
  uint64_t AllocatableSpace() const;                  // bytes after first_logical_sector

  // The metadata to write; checked as the writer checks it (it fits
  // metadata_max_size, it reads back).
  Result<Metadata> Export() const;

 private:
  Builder() = default;
  Partition* Find(std::string_view name);
  Group* MutableGroup(std::string_view name);
  uint64_t AlignSector(uint32_t device, uint64_t sector) const;
  bool IsAllocated(uint32_t device, uint64_t start, uint64_t end) const;
  Status Grow(Partition* p, uint64_t size);
  Status CheckImportedExtent(std::string_view name, const ExtentEntry& e) const;

  Geometry geometry_;
  uint16_t minor_version_ = 0;
  uint32_t header_flags_ = 0;
  std::vector<BlockDeviceEntry> devices_;
  std::vector<Group> groups_;
  std::vector<Partition> partitions_;
};

// The rule for names above; `what` ("partition") names the kind in errors.
Status CheckName(std::string_view what, std::string_view name);

}  // namespace flashpipe::lp
