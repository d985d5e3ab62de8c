#include "lp/builder.h"

#include <algorithm>
#include <utility>

#include "base/log.h"
#include "lp/reader.h"
#include "lp/writer.h"

namespace flashpipe::lp {
namespace {

// Devices larger than this are refused, so sector arithmetic never overflows.
constexpr uint64_t kMaxDeviceSize = uint64_t{1} << 60;

// The smallest y >= x with y % align == offset % align (align 0: x).
uint64_t AlignUp(uint64_t x, uint64_t align, uint64_t offset) {
  if (align == 0) return x;
  uint64_t y = x - x % align + offset % align;
  return y < x ? y + align : y;
}

bool IsNameChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
}

Status CheckDevice(const BlockDeviceSpec& d, uint32_t block) {
  FP_RETURN_IF_ERROR(CheckName("block device", d.name));
  if (d.size == 0 || d.size % block != 0 || d.size > kMaxDeviceSize) {
    return InvalidArgument(fmt::format("block device {}: size {} is not a non-zero multiple of the logical block "
                                       "size {} (up to 2^60)", d.name, d.size, block));
  }
  if (d.alignment % kSectorSize != 0 || d.alignment_offset % kSectorSize != 0) {
    return InvalidArgument(fmt::format("block device {}: alignment {} and alignment offset {} must be multiples of 512",
                                       d.name, d.alignment, d.alignment_offset));
  }
  return Status::Ok();
}

// The first usable sector of a device: after the metadata area on the super,
// after the first sector (left for an MBR) elsewhere; aligned.
Result<BlockDeviceEntry> MakeDevice(const BlockDeviceSpec& d, const Geometry& g, bool super) {
  BlockDeviceEntry b;
  b.partition_name = d.name;
  b.size = d.size;
  b.alignment = d.alignment;
  b.alignment_offset = d.alignment_offset;
  const uint64_t align = d.alignment != 0 ? d.alignment : g.logical_block_size;
  const uint64_t first = AlignUp(super ? TotalMetadataSize(g) : kSectorSize, align, d.alignment_offset);
  b.first_logical_sector = first / kSectorSize;
  if (first > d.size || d.size - first < g.logical_block_size) {
    return NoSpace(fmt::format("block device {} of {} bytes is too small: logical partitions start at byte {} and "
                               "need at least one block of {}", d.name, d.size, first, g.logical_block_size));
  }
  return b;
}

}  // namespace

Status CheckName(std::string_view what, std::string_view name) {
  if (name.empty() || name.size() > kNameSize || !std::all_of(name.begin(), name.end(), IsNameChar)) {
    return InvalidArgument(
        fmt::format("{} name \"{}\" is not 1 to {} characters of A-Z a-z 0-9 _ -", what, log::Printable(name, 64),
                    kNameSize));
  }
  return Status::Ok();
}

uint64_t Partition::size() const {
  uint64_t sectors = 0;
  for (const auto& e : extents) sectors += e.num_sectors;
  return sectors * kSectorSize;
}

uint64_t Partition::bytes_on_disk() const {
  uint64_t sectors = 0;
  for (const auto& e : extents) sectors += e.target_type == kTargetLinear ? e.num_sectors : 0;
  return sectors * kSectorSize;
}

Result<Builder> Builder::New(const LayoutSpec& spec) {
  const uint32_t block = spec.logical_block_size;
  if (block == 0 || block % kSectorSize != 0) {
    return InvalidArgument(fmt::format("logical block size {} is not a non-zero multiple of 512", block));
  }
  if (spec.metadata_slot_count == 0 || spec.metadata_slot_count > kMaxInspectedSlots) {
    return InvalidArgument(fmt::format("{} metadata slots: give between 1 and {}", spec.metadata_slot_count,
                                       kMaxInspectedSlots));
  }
  if (spec.metadata_max_size < kHeaderSizeV1_2 || spec.metadata_max_size > (1u << 30)) {
    return InvalidArgument(fmt::format("metadata size {} is not between {} and 1 GiB", spec.metadata_max_size,
                                       kHeaderSizeV1_2));
  }
  if (spec.devices.empty()) return InvalidArgument("no block device given");
  Builder b;
  b.geometry_.metadata_max_size = (spec.metadata_max_size + kSectorSize - 1) / kSectorSize * kSectorSize;
  b.geometry_.metadata_slot_count = spec.metadata_slot_count;
  b.geometry_.logical_block_size = block;
  for (size_t i = 0; i < spec.devices.size(); ++i) {
    FP_RETURN_IF_ERROR(CheckDevice(spec.devices[i], block));
    for (size_t j = 0; j < i; ++j) {
      if (spec.devices[j].name == spec.devices[i].name) {
        return InvalidArgument(fmt::format("block device {} is given twice", spec.devices[i].name));
      }
    }
    FP_ASSIGN_OR_RETURN(BlockDeviceEntry d, MakeDevice(spec.devices[i], b.geometry_, i == 0));
    b.devices_.push_back(std::move(d));
  }
  b.groups_.push_back({kDefaultGroup, 0, 0});
  return b;
}

Result<Builder> Builder::FromMetadata(const Metadata& m) {
  Builder b;
  b.geometry_ = m.geometry;
  if (m.header.minor_version >= kMinorVersionForExpandedHeader) {
    b.minor_version_ = kMinorVersionForExpandedHeader;
    b.header_flags_ = m.header.flags;
  }
  b.devices_ = m.block_devices;
  for (const auto& g : m.groups) b.groups_.push_back({g.name, g.maximum_size, g.flags});
  for (const auto& p : m.partitions) {
    if (p.group_index >= m.groups.size() || uint64_t{p.first_extent_index} + p.num_extents > m.extents.size()) {
      return InvalidArgument(fmt::format("partition {}: group or extents out of range", p.name));
    }
    Partition out{p.name, m.groups[p.group_index].name, p.attributes, {}};
    auto extents = ExtentsOf(m, p);
    out.extents.assign(extents.begin(), extents.end());
    b.partitions_.push_back(std::move(out));
  }
  return b;
}

Status Builder::AddGroup(const std::string& name, uint64_t maximum_size) {
  FP_RETURN_IF_ERROR(CheckName("group", name));
  if (FindGroup(name) != nullptr) return InvalidArgument(fmt::format("group {} already exists", name));
  groups_.push_back({name, maximum_size, 0});
  return Status::Ok();
}

Status Builder::RemoveGroup(std::string_view name) {
  auto it = std::find_if(groups_.begin(), groups_.end(), [&](const Group& g) { return g.name == name; });
  if (it == groups_.end()) return NotFound(fmt::format("no group {}", name));
  for (const auto& p : partitions_) {
    if (p.group == name) return InvalidArgument(fmt::format("group {} still holds partition {}", name, p.name));
  }
  groups_.erase(it);
  return Status::Ok();
}

Status Builder::ResizeGroup(std::string_view name, uint64_t maximum_size) {
  Group* g = MutableGroup(name);
  if (g == nullptr) return NotFound(fmt::format("no group {}", name));
  const uint64_t used = GroupUsage(name);
  if (maximum_size != 0 && used > maximum_size) {
    return NoSpace(fmt::format("group {} already holds {} bytes, more than {}", name, used, maximum_size));
  }
  g->maximum_size = maximum_size;
  return Status::Ok();
}

Status Builder::AddPartition(const std::string& name, const std::string& group, uint32_t attributes) {
  FP_RETURN_IF_ERROR(CheckName("partition", name));
  if (FindPartition(name) != nullptr) return InvalidArgument(fmt::format("partition {} already exists", name));
  if (FindGroup(group) == nullptr) return NotFound(fmt::format("partition {}: no group {}", name, group));
  if (attributes & ~(kAttrMaskV0 | kAttrMaskV1)) {
    return InvalidArgument(fmt::format("partition {}: unknown attributes 0x{:x}", name, attributes));
  }
  partitions_.push_back({name, group, attributes, {}});
  return Status::Ok();
}

Status Builder::RemovePartition(std::string_view name) {
  auto it = std::find_if(partitions_.begin(), partitions_.end(), [&](const Partition& p) { return p.name == name; });
  if (it == partitions_.end()) return NotFound(fmt::format("no partition {}", name));
  partitions_.erase(it);
  return Status::Ok();
}

Status Builder::ResizePartition(std::string_view name, uint64_t size) {
  Partition* p = Find(name);
  if (p == nullptr) return NotFound(fmt::format("no partition {}", name));
  const uint64_t block = geometry_.logical_block_size;
  if (size > kMaxDeviceSize) return NoSpace(fmt::format("partition {}: size {} is too large", name, size));
  const uint64_t aligned = (size + block - 1) / block * block;
  if (aligned > p->size()) return Grow(p, aligned);
  uint64_t remove = (p->size() - aligned) / kSectorSize;
  while (remove > 0) {
    ExtentEntry& last = p->extents.back();
    const uint64_t n = std::min(remove, last.num_sectors);
    last.num_sectors -= n;
    remove -= n;
    if (last.num_sectors == 0) p->extents.pop_back();
  }
  return Status::Ok();
}

Status Builder::CheckImportedExtent(std::string_view name, const ExtentEntry& e) const {
  if (e.target_type != kTargetLinear) return Status::Ok();
  if (e.target_source >= devices_.size()) {
    return InvalidArgument(fmt::format("partition {}: extent on block device {}, the new layout has {}", name,
                                       e.target_source, devices_.size()));
  }
  const BlockDeviceEntry& d = devices_[e.target_source];
  const uint64_t end = e.target_data + e.num_sectors;
  if (e.target_data < d.first_logical_sector || end < e.target_data || end > d.size / kSectorSize) {
    return NoSpace(fmt::format("partition {}: sectors {}..{} are outside {}'s logical space {}..{}", name,
                               e.target_data, end, d.partition_name, d.first_logical_sector, d.size / kSectorSize));
  }
  if (IsAllocated(e.target_source, e.target_data, end)) {
    return InvalidArgument(
        fmt::format("partition {}: sectors {}..{} are already allocated in the new layout", name, e.target_data, end));
  }
  return Status::Ok();
}

Status Builder::ImportPartition(const Metadata& from, const PartitionEntry& p) {
  const std::string& group = from.groups[p.group_index].name;
  const Partition* existing = FindPartition(p.name);
  if (existing != nullptr && !existing->extents.empty()) {
    return InvalidArgument(fmt::format("partition {} already has {} bytes in the new layout", p.name,
                                       existing->size()));
  }
  const std::string& into = existing != nullptr ? existing->group : group;
  if (existing == nullptr && FindGroup(group) == nullptr) {
    return NotFound(fmt::format("partition {}: the new layout has no group {}", p.name, group));
  }
  uint64_t bytes = 0;
  for (const ExtentEntry& e : ExtentsOf(from, p)) {
    FP_RETURN_IF_ERROR(CheckImportedExtent(p.name, e));
    bytes += e.target_type == kTargetLinear ? e.num_sectors * kSectorSize : 0;
  }
  if (const Group* g = FindGroup(into); g->maximum_size != 0 && GroupUsage(into) + bytes > g->maximum_size) {
    return NoSpace(fmt::format("partition {}: {} bytes do not fit group {} ({} of {} bytes used)", p.name, bytes,
                               into, GroupUsage(into), g->maximum_size));
  }
  if (existing == nullptr) FP_RETURN_IF_ERROR(AddPartition(p.name, group, p.attributes));
  auto extents = ExtentsOf(from, p);
  Find(p.name)->extents.assign(extents.begin(), extents.end());
  return Status::Ok();
}

void Builder::SetHeaderFlags(uint32_t flags) {
  header_flags_ = flags;
  minor_version_ = std::max(minor_version_, kMinorVersionForExpandedHeader);
}

const Partition* Builder::FindPartition(std::string_view name) const {
  for (const auto& p : partitions_) {
    if (p.name == name) return &p;
  }
  return nullptr;
}

Partition* Builder::Find(std::string_view name) { return const_cast<Partition*>(FindPartition(name)); }

const Group* Builder::FindGroup(std::string_view name) const {
  for (const auto& g : groups_) {
    if (g.name == name) return &g;
  }
  return nullptr;
}

Group* Builder::MutableGroup(std::string_view name) { return const_cast<Group*>(FindGroup(name)); }

uint64_t Builder::GroupUsage(std::string_view group) const {
  uint64_t used = 0;
  for (const auto& p : partitions_) used += p.group == group ? p.bytes_on_disk() : 0;
  return used;
}

uint64_t Builder::AllocatableSpace() const {
  uint64_t total = 0;
  for (const auto& d : devices_) total += d.size - d.first_logical_sector * kSectorSize;
  return total;
}

uint64_t Builder::AlignSector(uint32_t device, uint64_t sector) const {
  const BlockDeviceEntry& d = devices_[device];
  const uint64_t align = d.alignment != 0 ? d.alignment : geometry_.logical_block_size;
  return AlignUp(sector * kSectorSize, align, d.alignment_offset) / kSectorSize;
}

bool Builder::IsAllocated(uint32_t device, uint64_t start, uint64_t end) const {
  for (const auto& p : partitions_) {
    for (const auto& e : p.extents) {
      if (e.target_type == kTargetLinear && e.target_source == device && e.target_data < end &&
          start < e.target_data + e.num_sectors) {
        return true;
      }
    }
  }
  return false;
}

std::vector<Interval> Builder::FreeRegions() const {
  std::vector<Interval> free;
  const uint64_t block_sectors = geometry_.logical_block_size / kSectorSize;
  for (uint32_t dev = 0; dev < devices_.size(); ++dev) {
    std::vector<std::pair<uint64_t, uint64_t>> used;
    for (const auto& p : partitions_) {
      for (const auto& e : p.extents) {
        if (e.target_type == kTargetLinear && e.target_source == dev) {
          used.emplace_back(e.target_data, e.target_data + e.num_sectors);
        }
      }
    }
    used.emplace_back(devices_[dev].size / kSectorSize, devices_[dev].size / kSectorSize);
    std::sort(used.begin(), used.end());
    uint64_t pos = devices_[dev].first_logical_sector;
    for (const auto& [start, end] : used) {
      const uint64_t from = AlignSector(dev, pos);
      if (from < start) {
        const uint64_t len = (start - from) / block_sectors * block_sectors;
        if (len > 0) free.push_back({dev, from, from + len});
      }
      pos = std::max(pos, end);
    }
  }
  return free;
}

Status Builder::Grow(Partition* p, uint64_t size) {
  const uint64_t need_bytes = size - p->size();
  if (const Group* g = FindGroup(p->group); g != nullptr && g->maximum_size != 0) {
    const uint64_t used = GroupUsage(g->name);
    if (used > g->maximum_size || g->maximum_size - used < need_bytes) {
      return NoSpace(fmt::format("partition {}: group {} has {} of its {} bytes free; {} more needed", p->name,
                                 g->name, g->maximum_size - std::min(used, g->maximum_size), g->maximum_size,
                                 need_bytes));
    }
  }
  const uint64_t block_sectors = geometry_.logical_block_size / kSectorSize;
  uint64_t need = need_bytes / kSectorSize;
  std::vector<ExtentEntry> added;
  uint64_t free_sectors = 0;
  // The unaligned space right after the last extent belongs to no free region.
  if (!p->extents.empty() && p->extents.back().target_type == kTargetLinear) {
    const ExtentEntry& last = p->extents.back();
    const uint64_t end = last.target_data + last.num_sectors;
    const uint64_t tail = (AlignSector(last.target_source, end) - end) / block_sectors * block_sectors;
    if (tail > 0 && !IsAllocated(last.target_source, end, end + tail)) {
      const uint64_t n = std::min(need, tail);
      added.push_back({n, kTargetLinear, end, last.target_source});
      need -= n;
      free_sectors += tail;
    }
  }
  for (const Interval& r : FreeRegions()) {
    free_sectors += r.sectors();
    if (need == 0) continue;
    const uint64_t n = std::min(need, r.sectors());
    added.push_back({n, kTargetLinear, r.start, r.device});
    need -= n;
  }
  if (need > 0) {
    return NoSpace(fmt::format("not enough free space for partition {}: {} more bytes needed, {} free", p->name,
                               need_bytes, free_sectors * kSectorSize));
  }
  for (const ExtentEntry& e : added) {
    ExtentEntry* last = p->extents.empty() ? nullptr : &p->extents.back();
    if (last != nullptr && last->target_type == kTargetLinear && last->target_source == e.target_source &&
        last->target_data + last->num_sectors == e.target_data) {
      last->num_sectors += e.num_sectors;
    } else {
      p->extents.push_back(e);
    }
  }
  return Status::Ok();
}

Result<Metadata> Builder::Export() const {
  Metadata m;
  m.geometry = geometry_;
  m.header.minor_version = minor_version_;
  m.header.flags = header_flags_;
  m.block_devices = devices_;
  for (const auto& g : groups_) m.groups.push_back({g.name, g.flags, g.maximum_size});
  for (const auto& p : partitions_) {
    if (p.attributes & kAttrMaskV1) {
      m.header.minor_version = std::max(m.header.minor_version, kMinorVersionForUpdatedAttr);
    }
    auto group = std::find_if(groups_.begin(), groups_.end(), [&](const Group& g) { return g.name == p.group; });
    PartitionEntry e{p.name, p.attributes, static_cast<uint32_t>(m.extents.size()),
                     static_cast<uint32_t>(p.extents.size()), static_cast<uint32_t>(group - groups_.begin())};
    m.partitions.push_back(e);
    m.extents.insert(m.extents.end(), p.extents.begin(), p.extents.end());
  }
  m.header.header_size =
      m.header.minor_version >= kMinorVersionForExpandedHeader ? kHeaderSizeV1_2 : kHeaderSizeV1_0;
  FP_ASSIGN_OR_RETURN(std::vector<uint8_t> blob, SerializeMetadata(m));
  (void)blob;
  return m;
}

}  // namespace flashpipe::lp
