#include "lp/reader.h"

#include <algorithm>
#include <cstring>
#include <map>

#include "base/endian.h"

namespace flashpipe::lp {
namespace {

Status GeometryError(uint64_t where, const std::string& what) {
  return Corrupt(fmt::format("geometry at byte 0x{:x}: {}", where, what));
}

uint32_t ExpectedHeaderSize(uint16_t minor) {
  return minor >= kMinorVersionForExpandedHeader ? kHeaderSizeV1_2 : kHeaderSizeV1_0;
}

struct TableRule {
  const char* name;
  TableDescriptor Header::*table;
  uint32_t entry_size;
};
constexpr TableRule kTables[] = {
    {"partitions", &Header::partitions, kPartitionEntrySize},
    {"extents", &Header::extents, kExtentEntrySize},
    {"groups", &Header::groups, kGroupEntrySize},
    {"block_devices", &Header::block_devices, kBlockDeviceEntrySize},
};

// Checks one metadata copy; every message starts with "LABEL at byte 0x..".
class CopyParser {
 public:
  CopyParser(const Geometry& g, std::string_view label, uint64_t where) : g_(g), label_(label), where_(where) {}

  Result<Header> ParseHeader(std::span<const uint8_t> bytes) {
    if (bytes.size() < kHeaderSizeV1_0) return Truncated("the header needs", kHeaderSizeV1_0, bytes.size());
    const uint32_t magic = LoadLE<uint32_t>(bytes.data());
    if (magic != kHeaderMagic) return Error(fmt::format("bad magic 0x{:08x} (expected 0x{:08x})", magic, kHeaderMagic));
    Header h = lp::ParseHeader(bytes, kHeaderSizeV1_0);
    if (h.major_version != kMajorVersion || h.minor_version > kMinorVersionMax) {
      return Error(fmt::format("version {}.{} unsupported (flashpipe reads {}.0 to {}.{})", h.major_version,
                               h.minor_version, kMajorVersion, kMajorVersion, kMinorVersionMax));
    }
    const uint32_t expected = ExpectedHeaderSize(h.minor_version);
    if (h.header_size != expected) {
      return Error(fmt::format("header_size {} != {} for version {}.{}", h.header_size, expected, h.major_version,
                               h.minor_version));
    }
    if (bytes.size() < h.header_size) return Truncated("the header needs", h.header_size, bytes.size());
    h = lp::ParseHeader(bytes, h.header_size);
    std::vector<uint8_t> zeroed(bytes.begin(), bytes.begin() + h.header_size);
    std::fill(zeroed.begin() + 12, zeroed.begin() + 44, 0);
    if (ComputeSha256(zeroed) != h.header_checksum) return Error("header SHA-256 checksum mismatch");
    FP_RETURN_IF_ERROR(CheckSizes(h));
    return h;
  }

  Result<Metadata> ParseTables(const Header& h, std::span<const uint8_t> tables) {
    if (tables.size() < h.tables_size) return Truncated("the tables need", h.tables_size, tables.size());
    tables = tables.first(h.tables_size);
    if (ComputeSha256(tables) != h.tables_checksum) return Error("tables SHA-256 checksum mismatch");
    Metadata m;
    m.geometry = g_;
    m.header = h;
    ParseEntries(h, tables, &m);
    FP_RETURN_IF_ERROR(CheckBlockDevices(m));
    FP_RETURN_IF_ERROR(CheckPartitions(m));
    FP_RETURN_IF_ERROR(CheckExtents(m));
    return m;
  }

 private:
  Status Error(const std::string& what) const {
    return Corrupt(fmt::format("{} at byte 0x{:x}: {}", label_, where_, what));
  }
  // `what`: "the header needs".
  Status Truncated(const char* what, uint64_t need, uint64_t have) const {
    return Error(fmt::format("truncated: {} {} bytes, {} available", what, need, have));
  }
  // Byte offset of entry i of a table.
  uint64_t EntryAt(const TableDescriptor& t, size_t i) const {
    return where_ + header_size_ + t.offset + uint64_t{t.entry_size} * i;
  }

  Status CheckSizes(const Header& h) {
    header_size_ = h.header_size;
    if (uint64_t{h.header_size} + h.tables_size > g_.metadata_max_size) {
      return Error(fmt::format("header_size {} + tables_size {} exceed metadata_max_size {}", h.header_size,
                               h.tables_size, g_.metadata_max_size));
    }
    if (h.tables_size > kMaxTablesSize) {
      return Error(fmt::format("tables_size {} exceeds flashpipe's limit of {}", h.tables_size, kMaxTablesSize));
    }
    for (const auto& rule : kTables) {
      const TableDescriptor& t = h.*rule.table;
      const uint64_t bytes = uint64_t{t.num_entries} * t.entry_size;
      if (t.offset > h.tables_size || bytes > h.tables_size - t.offset) {
        return Error(fmt::format("{} table (offset {}, {} entries of {} bytes) runs past tables_size {}", rule.name,
                                 t.offset, t.num_entries, t.entry_size, h.tables_size));
      }
      if (t.entry_size != rule.entry_size) {
        return Error(fmt::format("{} entry_size {} != {}", rule.name, t.entry_size, rule.entry_size));
      }
    }
    return Status::Ok();
  }

  template <typename T, typename Parse>
  static void ParseTable(const TableDescriptor& t, std::span<const uint8_t> tables, Parse parse, std::vector<T>* out) {
    out->reserve(t.num_entries);
    for (uint32_t i = 0; i < t.num_entries; ++i) {
      out->push_back(parse(tables.subspan(t.offset + size_t{i} * t.entry_size, t.entry_size)));
    }
  }

  static void ParseEntries(const Header& h, std::span<const uint8_t> tables, Metadata* m) {
    ParseTable(h.partitions, tables, ParsePartition, &m->partitions);
    ParseTable(h.extents, tables, ParseExtent, &m->extents);
    ParseTable(h.groups, tables, ParseGroup, &m->groups);
    ParseTable(h.block_devices, tables, ParseBlockDevice, &m->block_devices);
  }

  Status CheckBlockDevices(const Metadata& m) const {
    if (m.block_devices.empty()) return Error("no block devices (the first must be the super partition)");
    for (size_t i = 0; i < m.block_devices.size(); ++i) {
      const BlockDeviceEntry& b = m.block_devices[i];
      if (b.first_logical_sector > b.size / kSectorSize) {
        return Error(fmt::format("block device {} (byte 0x{:x}): first_logical_sector {} is past its size {}", i,
                                 EntryAt(m.header.block_devices, i), b.first_logical_sector, b.size));
      }
    }
    const uint64_t first_byte = m.block_devices[0].first_logical_sector * kSectorSize;
    if (first_byte < TotalMetadataSize(g_)) {
      return Error(fmt::format(
          "block device 0 (byte 0x{:x}): first_logical_sector {} (byte 0x{:x}) lies inside the metadata area, "
          "which ends at byte 0x{:x}",
          EntryAt(m.header.block_devices, 0), m.block_devices[0].first_logical_sector, first_byte,
          TotalMetadataSize(g_)));
    }
    return Status::Ok();
  }

  Status CheckPartitions(const Metadata& m) const {
    uint32_t valid = kAttrMaskV0;
    if (m.header.minor_version >= kMinorVersionForUpdatedAttr) valid |= kAttrMaskV1;
    std::map<std::string_view, size_t> names;
    std::vector<int64_t> owner(m.extents.size(), -1);
    for (size_t i = 0; i < m.partitions.size(); ++i) {
      const PartitionEntry& p = m.partitions[i];
      auto error = [&](const std::string& what) {
        return Error(fmt::format("partition {} (byte 0x{:x}): {}", i, EntryAt(m.header.partitions, i), what));
      };
      if (p.name.empty()) return error("the name is empty");
      if (auto [it, added] = names.emplace(p.name, i); !added) {
        return error(fmt::format("name \"{}\" is also partition {}'s", p.name, it->second));
      }
      if (p.attributes & ~valid) {
        return error(fmt::format("attributes 0x{:x} have bits outside 0x{:x} (version {}.{})", p.attributes, valid,
                                 m.header.major_version, m.header.minor_version));
      }
      if (uint64_t{p.first_extent_index} + p.num_extents > m.extents.size()) {
        return error(fmt::format("extents {} + {} run past the {} extents", p.first_extent_index, p.num_extents,
                                 m.extents.size()));
      }
      if (p.group_index >= m.groups.size()) {
        return error(fmt::format("group_index {} >= {} groups", p.group_index, m.groups.size()));
      }
      for (uint32_t e = p.first_extent_index; e < p.first_extent_index + p.num_extents; ++e) {
        if (owner[e] >= 0) return error(fmt::format("extent {} is also partition {}'s", e, owner[e]));
        owner[e] = static_cast<int64_t>(i);
      }
    }
    return Status::Ok();
  }

  struct Linear {
    uint32_t device;
    uint64_t start, end;
    size_t index;
    bool operator<(const Linear& o) const { return std::tie(device, start, end) < std::tie(o.device, o.start, o.end); }
  };

  Status CheckExtents(const Metadata& m) const {
    std::vector<Linear> linear;
    for (size_t i = 0; i < m.extents.size(); ++i) {
      const ExtentEntry& e = m.extents[i];
      auto error = [&](const std::string& what) {
        return Error(fmt::format("extent {} (byte 0x{:x}): {}", i, EntryAt(m.header.extents, i), what));
      };
      if (e.target_type == kTargetZero) continue;
      if (e.target_type != kTargetLinear) {
        return error(fmt::format("target_type {} is neither LINEAR (0) nor ZERO (1)", e.target_type));
      }
      if (e.target_source >= m.block_devices.size()) {
        return error(fmt::format("block device {} >= {} block devices", e.target_source, m.block_devices.size()));
      }
      const BlockDeviceEntry& b = m.block_devices[e.target_source];
      const uint64_t last = b.size / kSectorSize;
      if (e.target_data < b.first_logical_sector || e.target_data > last || e.num_sectors > last - e.target_data) {
        return error(fmt::format("{} sectors at sector {} lie outside block device \"{}\" (sectors {} to {})",
                                 e.num_sectors, e.target_data, b.partition_name, b.first_logical_sector, last));
      }
      if (e.num_sectors > 0) linear.push_back({e.target_source, e.target_data, e.target_data + e.num_sectors, i});
    }
    std::sort(linear.begin(), linear.end());
    for (size_t i = 1; i < linear.size(); ++i) {
      const Linear& a = linear[i - 1];
      const Linear& b = linear[i];
      if (a.device == b.device && b.start < a.end) {
        return Error(fmt::format("extents {} and {} overlap on block device \"{}\" at sector {}",
                                 std::min(a.index, b.index), std::max(a.index, b.index),
                                 m.block_devices[a.device].partition_name, b.start));
      }
    }
    return Status::Ok();
  }

  const Geometry& g_;
  std::string_view label_;
  uint64_t where_;
  uint32_t header_size_ = 0;
};

Status CombineCopies(const std::string& what, const Status& primary, const Status& backup) {
  return Status(primary.code() == Code::kIoError ? Code::kIoError : Code::kCorrupt,
                fmt::format("no valid copy of the {}: {}; {}", what, primary.ToString(), backup.ToString()));
}

// One geometry copy read from io; a device too short for it is a corrupt
// copy, not an I/O error.
Result<Geometry> ReadGeometryAt(BlockIo& io, uint64_t offset) {
  if (io.size() < offset + kGeometrySize) {
    return GeometryError(offset, fmt::format("truncated: the device ends at byte 0x{:x}", io.size()));
  }
  std::array<uint8_t, kGeometrySize> block;
  FP_RETURN_IF_ERROR(io.Read(offset, block));
  return ParseGeometryCopy(block, offset);
}

// Reads a metadata copy at `offset`, at most `room` bytes long.
Result<Metadata> ReadCopyAt(BlockIo& io, const Geometry& g, uint64_t offset, uint64_t room, std::string_view label,
                            std::vector<uint8_t>* bytes = nullptr) {
  CopyParser parser(g, label, offset);
  const uint64_t available = offset < io.size() ? std::min(room, io.size() - offset) : 0;
  std::vector<uint8_t> head(static_cast<size_t>(std::min<uint64_t>(available, kHeaderSizeV1_2)));
  if (!head.empty()) FP_RETURN_IF_ERROR(io.Read(offset, head));
  FP_ASSIGN_OR_RETURN(Header h, parser.ParseHeader(head));
  std::vector<uint8_t> tables(static_cast<size_t>(std::min<uint64_t>(h.tables_size, available - h.header_size)));
  FP_RETURN_IF_ERROR(io.Read(offset + h.header_size, tables));
  FP_ASSIGN_OR_RETURN(Metadata m, parser.ParseTables(h, tables));
  if (bytes != nullptr) {
    bytes->assign(head.begin(), head.begin() + h.header_size);
    bytes->insert(bytes->end(), tables.begin(), tables.end());
  }
  return m;
}

}  // namespace

Result<Geometry> ParseGeometryCopy(std::span<const uint8_t> block, uint64_t where) {
  if (block.size() < kGeometrySize) {
    return GeometryError(where, fmt::format("truncated: {} of {} bytes", block.size(), kGeometrySize));
  }
  Geometry g = ParseGeometry(block);
  if (g.magic != kGeometryMagic) {
    return GeometryError(where, fmt::format("bad magic 0x{:08x} (expected 0x{:08x})", g.magic, kGeometryMagic));
  }
  if (g.struct_size != kGeometrySize) {
    return GeometryError(where, fmt::format("struct_size {} != {}", g.struct_size, kGeometrySize));
  }
  std::array<uint8_t, kGeometrySize> zeroed;
  std::memcpy(zeroed.data(), block.data(), kGeometrySize);
  std::fill(zeroed.begin() + 8, zeroed.begin() + 40, 0);
  if (ComputeSha256(zeroed) != g.checksum) return GeometryError(where, "SHA-256 checksum mismatch");
  if (g.metadata_slot_count == 0) return GeometryError(where, "metadata_slot_count is 0");
  if (g.metadata_max_size == 0 || g.metadata_max_size % kSectorSize != 0) {
    return GeometryError(where,
                         fmt::format("metadata_max_size {} is not a non-zero multiple of 512", g.metadata_max_size));
  }
  if (uint64_t{g.metadata_max_size} * g.metadata_slot_count > (uint64_t{1} << 62)) {
    return GeometryError(where, fmt::format("metadata_slot_count {} x metadata_max_size {} is too large",
                                            g.metadata_slot_count, g.metadata_max_size));
  }
  if (g.logical_block_size == 0 || g.logical_block_size % kSectorSize != 0) {
    return GeometryError(where,
                         fmt::format("logical_block_size {} is not a non-zero multiple of 512", g.logical_block_size));
  }
  return g;
}

Result<Metadata> ParseMetadataCopy(const Geometry& g, std::span<const uint8_t> bytes, std::string_view label,
                                   uint64_t where) {
  CopyParser parser(g, label, where);
  FP_ASSIGN_OR_RETURN(Header h, parser.ParseHeader(bytes));
  return parser.ParseTables(h, bytes.subspan(h.header_size));
}

Result<Geometry> ReadGeometry(BlockIo& io) {
  Status reasons[2];
  const uint64_t offsets[2] = {kPrimaryGeometryOffset, kBackupGeometryOffset};
  for (int i = 0; i < 2; ++i) {
    auto g = ReadGeometryAt(io, offsets[i]);
    if (g.ok()) return g;
    reasons[i] = g.status();
  }
  return CombineCopies("geometry", reasons[0], reasons[1]);
}

std::string CopyLabel(uint32_t slot, Copy copy) {
  return fmt::format("slot {} {} metadata", slot, copy == Copy::kPrimary ? "primary" : "backup");
}

Result<Metadata> ReadMetadataCopy(BlockIo& io, const Geometry& g, uint32_t slot, Copy copy,
                                  std::vector<uint8_t>* bytes) {
  if (slot >= g.metadata_slot_count) {
    return InvalidArgument(fmt::format("slot {} does not exist: the geometry has {}", slot, g.metadata_slot_count));
  }
  const uint64_t offset = copy == Copy::kPrimary ? PrimaryMetadataOffset(g, slot) : BackupMetadataOffset(g, slot);
  return ReadCopyAt(io, g, offset, g.metadata_max_size, CopyLabel(slot, copy), bytes);
}

Result<Metadata> ReadMetadata(BlockIo& io, uint32_t slot) {
  FP_ASSIGN_OR_RETURN(Geometry g, ReadGeometry(io));
  auto primary = ReadMetadataCopy(io, g, slot, Copy::kPrimary);
  if (primary.ok() || primary.status().code() == Code::kInvalidArgument) return primary;
  auto backup = ReadMetadataCopy(io, g, slot, Copy::kBackup);
  if (backup.ok()) return backup;
  return CombineCopies(fmt::format("slot {} metadata", slot), primary.status(), backup.status());
}

Result<SuperState> InspectSuper(BlockIo& io) {
  SuperState st;
  const uint64_t offsets[2] = {kPrimaryGeometryOffset, kBackupGeometryOffset};
  for (int i = 0; i < 2; ++i) {
    st.geometry[i].offset = offsets[i];
    auto g = ReadGeometryAt(io, offsets[i]);
    if (!g.ok() && g.status().code() == Code::kIoError) return g.status();
    st.geometry[i].status = g.status();
    if (g.ok() && !st.in_use) st.in_use = *g;
  }
  if (!st.in_use) return st;
  const Geometry& g = *st.in_use;
  // A forged slot count (the geometry's checksum is anyone's to compute)
  // must not make this walk and keep 2^32 slots.
  const uint32_t slots = std::min(g.metadata_slot_count, kMaxInspectedSlots);
  for (uint32_t slot = 0; slot < slots; ++slot) {
    std::array<CopyState, 2> copies;
    for (Copy c : {Copy::kPrimary, Copy::kBackup}) {
      auto m = ReadMetadataCopy(io, g, slot, c);
      if (!m.ok() && m.status().code() == Code::kIoError) return m.status();
      CopyState& cs = copies[c == Copy::kPrimary ? 0 : 1];
      cs.offset = c == Copy::kPrimary ? PrimaryMetadataOffset(g, slot) : BackupMetadataOffset(g, slot);
      cs.status = m.status();
    }
    st.slots.push_back(copies);
  }
  return st;
}

bool HasEmptyImageMagic(std::span<const uint8_t> head) {
  return head.size() >= 4 && LoadLE<uint32_t>(head.data()) == kGeometryMagic;
}

Result<Metadata> ParseEmptyImage(std::span<const uint8_t> bytes) {
  FP_ASSIGN_OR_RETURN(Geometry g, ParseGeometryCopy(bytes, 0));
  if (bytes.size() < kGeometryBlockSize) {
    return Corrupt(fmt::format("metadata at byte 0x{:x}: truncated: the file ends at byte 0x{:x}",
                               kGeometryBlockSize, bytes.size()));
  }
  return ParseMetadataCopy(g, bytes.subspan(kGeometryBlockSize), "metadata", kGeometryBlockSize);
}

Result<Metadata> ReadEmptyImage(BlockIo& io) {
  std::vector<uint8_t> head(static_cast<size_t>(std::min<uint64_t>(kGeometrySize, io.size())));
  FP_RETURN_IF_ERROR(io.Read(0, head));
  FP_ASSIGN_OR_RETURN(Geometry g, ParseGeometryCopy(head, 0));
  if (io.size() < kGeometryBlockSize) {
    return Corrupt(fmt::format("metadata at byte 0x{:x}: truncated: the file ends at byte 0x{:x}",
                               kGeometryBlockSize, io.size()));
  }
  return ReadCopyAt(io, g, kGeometryBlockSize, g.metadata_max_size, "metadata");
}

}  // namespace flashpipe::lp
