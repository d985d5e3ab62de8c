// ExtentMap: where each byte of an image lands on a device. An image is
// written into a window; the window is a list of extents, each a device
// range, taken in order: image bytes [0, e0.length) go to extent 0, the next
// e1.length bytes to extent 1, and so on. A partition is one extent; a
// logical partition of an Android super is its LINEAR extents.
//
// Split() cuts an image range at extent boundaries and hands out device
// ranges, each lying inside the one extent it maps to: no piece crosses an
// extent's end, and a range past the last extent is refused before any piece
// is handed out. Create() checks the extents against the device: inside it,
// not overlapping each other, and on `align` boundaries (so every piece of an
// aligned request stays aligned for O_DIRECT). Value type.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace flashpipe::io {

struct DeviceExtent {
  uint64_t device_offset = 0;
  uint64_t length = 0;
  bool operator==(const DeviceExtent&) const = default;
};

class ExtentMap {
 public:
  ExtentMap() = default;
  // `name` names the device in errors; `device_size` bounds the extents.
  static Result<ExtentMap> Create(std::string_view name, std::vector<DeviceExtent> extents, uint64_t device_size,
                                  uint64_t align);
  // A single range (the classic window), not checked.
  static ExtentMap Single(uint64_t device_offset, uint64_t length);

  uint64_t size() const { return size_; }  // image bytes the extents hold
  const std::vector<DeviceExtent>& extents() const { return extents_; }
  // Device offset of image byte `image_offset`. REQUIRES: < size().
  uint64_t DeviceOffset(uint64_t image_offset) const;

  // Calls f(device_offset, offset_in_range, length) for each piece of
  // [begin, begin + length), in image order; stops at f's first error.
  template <typename F>
  Status Split(uint64_t begin, uint64_t length, F&& f) const {
    if (begin > size_ || length > size_ - begin) {
      return NoSpace(fmt::format("{} bytes at image offset 0x{:x} run past the {} bytes of the window's extents",
                                 length, begin, size_));
    }
    size_t i = Find(begin);
    for (uint64_t done = 0; done < length; ++i) {
      const uint64_t in = begin + done - starts_[i];
      const uint64_t n = std::min(length - done, extents_[i].length - in);
      FP_RETURN_IF_ERROR(f(extents_[i].device_offset + in, done, n));
      done += n;
    }
    return Status::Ok();
  }

 private:
  size_t Find(uint64_t image_offset) const;  // index of the extent holding it

  std::vector<DeviceExtent> extents_;
  std::vector<uint64_t> starts_;  // image offset of each extent
  uint64_t size_ = 0;
};

}  // namespace flashpipe::io
