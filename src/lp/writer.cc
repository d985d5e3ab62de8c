#include "lp/writer.h"

#include <fmt/ranges.h>

#include <array>

#include "lp/builder.h"
#include "lp/reader.h"

namespace flashpipe::lp {
namespace {

Status NotReadable(const Status& s) {
  return InvalidArgument(fmt::format("refusing to write metadata that would not read back: {}", s.message()));
}

template <typename T, typename Serialize>
void AppendTable(const std::vector<T>& entries, uint32_t entry_size, Serialize serialize, TableDescriptor* t,
                 std::vector<uint8_t>* tables) {
  t->offset = static_cast<uint32_t>(tables->size());
  t->num_entries = static_cast<uint32_t>(entries.size());
  t->entry_size = entry_size;
  for (const T& e : entries) {
    tables->resize(tables->size() + entry_size);
    serialize(e, std::span(*tables).last(entry_size));
  }
}

// One name rule for every metadata flashpipe writes (update-super, lp make,
// lp resize): builder.h's CheckName, 1 to 36 bytes of A-Z a-z 0-9 _ -. A
// longer name would not read back as itself; "../x" or an escape would reach
// a file name (lpunpack's NAME.img, /dev/block/mapper/NAME) or a terminal.
Status CheckNames(const Metadata& m) {
  for (const auto& p : m.partitions) FP_RETURN_IF_ERROR(CheckName("partition", p.name));
  for (const auto& g : m.groups) FP_RETURN_IF_ERROR(CheckName("group", g.name));
  for (const auto& b : m.block_devices) FP_RETURN_IF_ERROR(CheckName("block device", b.partition_name));
  return Status::Ok();
}

bool SameGeometry(const Geometry& a, const Geometry& b) {
  return a.metadata_max_size == b.metadata_max_size && a.metadata_slot_count == b.metadata_slot_count &&
         a.logical_block_size == b.logical_block_size;
}

std::string Describe(const Geometry& g) {
  return fmt::format("{} slots of {} bytes, logical blocks of {}", g.metadata_slot_count, g.metadata_max_size,
                     g.logical_block_size);
}

Status WriteAndSync(BlockIo& io, uint64_t offset, std::span<const uint8_t> bytes) {
  FP_RETURN_IF_ERROR(io.Write(offset, bytes));
  return io.Sync();
}

// The writer touches every slot of a geometry, so it refuses one with more
// slots than real supers have (1 to 3) or a metadata area larger than the
// device: either would make a hostile image cost hours of writes or reads.
Status CheckSlots(BlockIo& io, const Geometry& g) {
  if (g.metadata_slot_count > kMaxInspectedSlots) {
    return InvalidArgument(fmt::format("the geometry has {} metadata slots: more than the {} flashpipe writes",
                                       g.metadata_slot_count, kMaxInspectedSlots));
  }
  if (TotalMetadataSize(g) > io.size()) {
    return NoSpace(fmt::format("{} of {} bytes cannot hold the metadata area of {} bytes", io.name(), io.size(),
                               TotalMetadataSize(g)));
  }
  return Status::Ok();
}

// The metadata area and the super device it describes must lie within io.
Status CheckFits(BlockIo& io, const Metadata& m) {
  FP_RETURN_IF_ERROR(CheckSlots(io, m.geometry));
  if (m.block_devices[0].size > io.size()) {
    return NoSpace(fmt::format("the metadata describes a super of {} bytes; {} has {}", m.block_devices[0].size,
                               io.name(), io.size()));
  }
  return Status::Ok();
}

enum class SlotState { kConsistent, kRepaired, kNoValidCopy };

// Makes both copies of `slot` equal to the valid one (the primary if both
// are valid but differ: it is the one readers take). `*label` names the
// copy rewritten.
Result<SlotState> RepairSlot(BlockIo& io, const Geometry& g, uint32_t slot, std::string* label) {
  std::vector<uint8_t> bytes[2];
  Status states[2];
  for (Copy c : {Copy::kPrimary, Copy::kBackup}) {
    const int i = c == Copy::kPrimary ? 0 : 1;
    auto m = ReadMetadataCopy(io, g, slot, c, &bytes[i]);
    if (!m.ok() && m.status().code() == Code::kIoError) return m.status();
    states[i] = m.status();
  }
  if (states[0].ok()) {
    if (states[1].ok() && bytes[0] == bytes[1]) return SlotState::kConsistent;
    FP_RETURN_IF_ERROR(WriteAndSync(io, BackupMetadataOffset(g, slot), bytes[0]));
    *label = CopyLabel(slot, Copy::kBackup);
    return SlotState::kRepaired;
  }
  if (!states[1].ok()) return SlotState::kNoValidCopy;
  FP_RETURN_IF_ERROR(WriteAndSync(io, PrimaryMetadataOffset(g, slot), bytes[1]));
  *label = CopyLabel(slot, Copy::kPrimary);
  return SlotState::kRepaired;
}

// Geometry copies: the same rule; returns the label of a rewritten copy.
Result<std::string> RepairGeometry(BlockIo& io) {
  const uint64_t offsets[2] = {kPrimaryGeometryOffset, kBackupGeometryOffset};
  std::vector<uint8_t> blocks[2];
  Result<Geometry> parsed[2] = {Corrupt(""), Corrupt("")};
  if (io.size() < kBackupGeometryOffset + kGeometryBlockSize) {
    return Corrupt(fmt::format("{} of {} bytes is too small to hold both geometry copies", io.name(), io.size()));
  }
  for (int i = 0; i < 2; ++i) {
    blocks[i].resize(kGeometryBlockSize);
    FP_RETURN_IF_ERROR(io.Read(offsets[i], blocks[i]));
    parsed[i] = ParseGeometryCopy(blocks[i], offsets[i]);
  }
  if (parsed[0].ok()) {
    if (parsed[1].ok() && *parsed[0] == *parsed[1]) return std::string();
    FP_RETURN_IF_ERROR(WriteAndSync(io, offsets[1], blocks[0]));
    return std::string("geometry backup");
  }
  if (!parsed[1].ok()) {
    return Corrupt(fmt::format("no valid copy of the geometry: {}; {}", parsed[0].status().message(),
                               parsed[1].status().message()));
  }
  FP_RETURN_IF_ERROR(WriteAndSync(io, offsets[0], blocks[1]));
  return std::string("geometry primary");
}

}  // namespace

Result<std::vector<uint8_t>> SerializeGeometry(const Geometry& g) {
  Geometry out = g;
  out.magic = kGeometryMagic;
  out.struct_size = kGeometrySize;
  out.checksum = {};
  std::vector<uint8_t> block(kGeometryBlockSize, 0);
  SerializeGeometry(out, block);
  out.checksum = ComputeSha256(std::span(block).first(kGeometrySize));
  SerializeGeometry(out, block);
  if (auto parsed = ParseGeometryCopy(block, 0); !parsed.ok()) return NotReadable(parsed.status());
  return block;
}

Result<std::vector<uint8_t>> SerializeMetadata(const Metadata& m) {
  FP_RETURN_IF_ERROR(CheckNames(m));
  Header h = m.header;
  h.magic = kHeaderMagic;
  h.major_version = kMajorVersion;
  h.header_size = h.minor_version >= kMinorVersionForExpandedHeader ? kHeaderSizeV1_2 : kHeaderSizeV1_0;
  if (h.header_size < kHeaderSizeV1_2) {
    h.flags = 0;
    h.reserved = {};
  }
  std::vector<uint8_t> tables;
  AppendTable(m.partitions, kPartitionEntrySize, SerializePartition, &h.partitions, &tables);
  AppendTable(m.extents, kExtentEntrySize, SerializeExtent, &h.extents, &tables);
  AppendTable(m.groups, kGroupEntrySize, SerializeGroup, &h.groups, &tables);
  AppendTable(m.block_devices, kBlockDeviceEntrySize, SerializeBlockDevice, &h.block_devices, &tables);
  if (tables.size() > kMaxTablesSize) {
    return InvalidArgument(fmt::format("the tables take {} bytes, more than flashpipe's limit of {}", tables.size(),
                                       kMaxTablesSize));
  }
  h.tables_size = static_cast<uint32_t>(tables.size());
  h.tables_checksum = ComputeSha256(tables);
  h.header_checksum = {};
  std::vector<uint8_t> blob(h.header_size);
  SerializeHeader(h, blob);
  h.header_checksum = ComputeSha256(blob);
  SerializeHeader(h, blob);
  blob.insert(blob.end(), tables.begin(), tables.end());
  if (auto parsed = ParseMetadataCopy(m.geometry, blob, "new metadata", 0); !parsed.ok()) {
    return NotReadable(parsed.status());
  }
  return blob;
}

Result<std::vector<uint8_t>> SerializeEmptyImage(const Metadata& m) {
  FP_ASSIGN_OR_RETURN(std::vector<uint8_t> out, SerializeGeometry(m.geometry));
  FP_ASSIGN_OR_RETURN(std::vector<uint8_t> blob, SerializeMetadata(m));
  out.insert(out.end(), blob.begin(), blob.end());
  return out;
}

Status FlashMetadata(BlockIo& io, const Metadata& m, const FlashOptions& options) {
  FP_ASSIGN_OR_RETURN(std::vector<uint8_t> geometry, SerializeGeometry(m.geometry));
  FP_ASSIGN_OR_RETURN(std::vector<uint8_t> blob, SerializeMetadata(m));
  FP_RETURN_IF_ERROR(CheckFits(io, m));
  if (!options.allow_new_geometry) {
    auto old = ReadGeometry(io);
    if (old.ok() && !SameGeometry(*old, m.geometry)) {
      return InvalidArgument(fmt::format("the new geometry ({}) differs from the one on {} ({})",
                                         Describe(m.geometry), io.name(), Describe(*old)));
    }
  }
  const std::vector<uint8_t> zeros(kReservedBytes, 0);
  FP_RETURN_IF_ERROR(io.Write(0, zeros));
  FP_RETURN_IF_ERROR(WriteAndSync(io, kPrimaryGeometryOffset, geometry));
  FP_RETURN_IF_ERROR(WriteAndSync(io, kBackupGeometryOffset, geometry));
  for (uint32_t slot = 0; slot < m.geometry.metadata_slot_count; ++slot) {
    FP_RETURN_IF_ERROR(WriteAndSync(io, PrimaryMetadataOffset(m.geometry, slot), blob));
    FP_RETURN_IF_ERROR(WriteAndSync(io, BackupMetadataOffset(m.geometry, slot), blob));
  }
  return Status::Ok();
}

Status UpdateMetadata(BlockIo& io, const Metadata& m, uint32_t slot) {
  if (slot >= m.geometry.metadata_slot_count) {
    return InvalidArgument(
        fmt::format("slot {} does not exist: the geometry has {}", slot, m.geometry.metadata_slot_count));
  }
  FP_ASSIGN_OR_RETURN(std::vector<uint8_t> blob, SerializeMetadata(m));
  FP_RETURN_IF_ERROR(CheckFits(io, m));
  FP_ASSIGN_OR_RETURN(Geometry on_disk, ReadGeometry(io));
  if (!SameGeometry(on_disk, m.geometry)) {
    return InvalidArgument(fmt::format("the new geometry ({}) differs from the one on {} ({})",
                                       Describe(m.geometry), io.name(), Describe(on_disk)));
  }
  std::string label;
  FP_ASSIGN_OR_RETURN(SlotState state, RepairSlot(io, on_disk, slot, &label));
  (void)state;  // with no valid copy there is nothing to protect: write both
  FP_RETURN_IF_ERROR(WriteAndSync(io, PrimaryMetadataOffset(on_disk, slot), blob));
  return WriteAndSync(io, BackupMetadataOffset(on_disk, slot), blob);
}

Result<std::vector<std::string>> RepairMetadata(BlockIo& io) {
  std::vector<std::string> repaired;
  FP_ASSIGN_OR_RETURN(std::string geometry, RepairGeometry(io));
  if (!geometry.empty()) repaired.push_back(geometry);
  FP_ASSIGN_OR_RETURN(Geometry g, ReadGeometry(io));
  FP_RETURN_IF_ERROR(CheckSlots(io, g));
  std::vector<uint32_t> lost;
  for (uint32_t slot = 0; slot < g.metadata_slot_count; ++slot) {
    std::string label;
    FP_ASSIGN_OR_RETURN(SlotState state, RepairSlot(io, g, slot, &label));
    if (state == SlotState::kRepaired) repaired.push_back(label);
    if (state == SlotState::kNoValidCopy) lost.push_back(slot);
  }
  if (!lost.empty()) {
    const std::string done = repaired.empty() ? "nothing" : fmt::format("{}", fmt::join(repaired, ", "));
    return Corrupt(fmt::format("{}: no valid copy of slot {} metadata (repaired: {})", io.name(),
                               fmt::join(lost, ", "), done));
  }
  return repaired;
}

}  // namespace flashpipe::lp
