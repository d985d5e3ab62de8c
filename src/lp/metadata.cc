#include "lp/metadata.h"

namespace flashpipe::lp {

const PartitionEntry* FindPartition(const Metadata& m, std::string_view name) {
  for (const auto& p : m.partitions) {
    if (p.name == name) return &p;
  }
  return nullptr;
}

std::span<const ExtentEntry> ExtentsOf(const Metadata& m, const PartitionEntry& p) {
  return std::span<const ExtentEntry>(m.extents).subspan(p.first_extent_index, p.num_extents);
}

uint64_t PartitionSize(const Metadata& m, const PartitionEntry& p) {
  uint64_t sectors = 0;
  for (const auto& e : ExtentsOf(m, p)) sectors += e.num_sectors;
  return sectors * kSectorSize;
}

std::string AttributeNames(uint32_t attributes) {
  static constexpr struct {
    uint32_t bit;
    const char* name;
  } kNames[] = {{kAttrReadonly, "readonly"},
                {kAttrSlotSuffixed, "slot-suffixed"},
                {kAttrUpdated, "updated"},
                {kAttrDisabled, "disabled"}};
  std::string out;
  for (const auto& n : kNames) {
    if ((attributes & n.bit) == 0) continue;
    if (!out.empty()) out += ',';
    out += n.name;
  }
  return out.empty() ? "none" : out;
}

}  // namespace flashpipe::lp
