// The expanded size of a compressed image, from what its container records,
// known before a byte is decompressed, so that an image too big for a device
// is refused before the device is touched:
//
//   container  where                               gives
//   xz         the index (seekable file)           exact size
//   zstd       every frame header (seekable file)  exact size, when each frame
//                                                  records its content size
//   zstd, lz4  the first frame header (any stream) a lower bound
//   gzip       the last member's ISIZE (seekable)  a lower bound: ISIZE is the
//                                                  size mod 2^32, only a hint
//   bzip2      nothing
// What a container claims is checked again by its decoder (liblzma and
// libzstd fail on a frame or index whose recorded size is wrong), so a wrong
// claim ends the write with an error, never with a wrong image. A container
// that cannot be read here is simply of unknown size: the decoder reports
// what is wrong with it.
#pragma once

#include <cstdint>
#include <optional>
#include <span>

#include "input/detect.h"

namespace flashpipe::input {

struct SizeHint {
  std::optional<uint64_t> exact;
  uint64_t at_least = 0;  // == *exact when exact is known
};

// From the first bytes of a stream (ZSTD_FRAMEHEADERSIZE_MAX = 18 are enough).
SizeHint SizeFromHead(ImageKind kind, std::span<const uint8_t> head);

// From a seekable file holding the compressed stream in [start, start + size).
SizeHint SizeFromFile(ImageKind kind, int fd, uint64_t start, uint64_t size);

}  // namespace flashpipe::input
