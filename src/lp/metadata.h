// Metadata: one slot's liblp metadata as flashpipe holds it in memory, the
// geometry it was read with included. Tables keep their on-disk order and
// indices (a partition's extents are extents[first_extent_index ..
// + num_extents), its group is groups[group_index]). What reader.h returns
// has passed every check of docs/lp_format.md; builder.h makes new ones.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "lp/format.h"

namespace flashpipe::lp {

struct Metadata {
  Geometry geometry;
  Header header;
  std::vector<PartitionEntry> partitions;
  std::vector<ExtentEntry> extents;
  std::vector<GroupEntry> groups;
  std::vector<BlockDeviceEntry> block_devices;  // [0] is the super partition
};

// nullptr when there is no partition of that name.
const PartitionEntry* FindPartition(const Metadata& m, std::string_view name);
// The partition's extents. REQUIRES: m passed the reader's checks.
std::span<const ExtentEntry> ExtentsOf(const Metadata& m, const PartitionEntry& p);
// Size in bytes (LINEAR and ZERO extents).
uint64_t PartitionSize(const Metadata& m, const PartitionEntry& p);
// Attribute bits as lpdump names them.
std::string AttributeNames(uint32_t attributes);  // "readonly,updated" or "none"

}  // namespace flashpipe::lp
