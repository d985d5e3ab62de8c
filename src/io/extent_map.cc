#include "io/extent_map.h"

#include <algorithm>

namespace flashpipe::io {

Result<ExtentMap> ExtentMap::Create(std::string_view name, std::vector<DeviceExtent> extents, uint64_t device_size,
                                    uint64_t align) {
  if (extents.empty()) return InvalidArgument(fmt::format("{}: a window of no extents", name));
  for (size_t i = 0; i < extents.size(); ++i) {
    const DeviceExtent& e = extents[i];
    if (e.length == 0 || e.device_offset % align != 0 || e.length % align != 0) {
      return InvalidArgument(fmt::format("{}: extent {} (device offset 0x{:x}, {} bytes) is not whole {}-byte blocks",
                                         name, i, e.device_offset, e.length, align));
    }
    if (e.device_offset > device_size || e.length > device_size - e.device_offset) {
      return NoSpace(fmt::format("{}: extent {} (device offset 0x{:x}, {} bytes) runs past the device's {} bytes",
                                 name, i, e.device_offset, e.length, device_size));
    }
  }
  std::vector<DeviceExtent> sorted = extents;
  std::sort(sorted.begin(), sorted.end(),
            [](const DeviceExtent& a, const DeviceExtent& b) { return a.device_offset < b.device_offset; });
  for (size_t i = 1; i < sorted.size(); ++i) {
    if (sorted[i].device_offset < sorted[i - 1].device_offset + sorted[i - 1].length) {
      return InvalidArgument(fmt::format("{}: extents overlap at device offset 0x{:x}", name, sorted[i].device_offset));
    }
  }
  ExtentMap m;
  for (const auto& e : extents) {
    m.starts_.push_back(m.size_);
    m.size_ += e.length;
  }
  m.extents_ = std::move(extents);
  return m;
}

ExtentMap ExtentMap::Single(uint64_t device_offset, uint64_t length) {
  ExtentMap m;
  m.extents_.push_back({device_offset, length});
  m.starts_.push_back(0);
  m.size_ = length;
  return m;
}

size_t ExtentMap::Find(uint64_t image_offset) const {
  auto it = std::upper_bound(starts_.begin(), starts_.end(), image_offset);
  return static_cast<size_t>(it - starts_.begin()) - 1;
}

uint64_t ExtentMap::DeviceOffset(uint64_t image_offset) const {
  const size_t i = Find(image_offset);
  return extents_[i].device_offset + (image_offset - starts_[i]);
}

}  // namespace flashpipe::io
