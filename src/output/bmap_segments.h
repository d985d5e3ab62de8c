// Segments of an image file that can be mapped independently, so that
// `bmap create` reads and hashes them on several threads at once.
//
// A block map's range hash runs front to back over the range, so a range
// cannot be split between threads; a hole can never be inside a range
// (range_mapper.h), so a cut at a 4 KiB block that the file does not store
// at all separates ranges whatever the bytes around it hold. SplitAtHoles
// picks such cuts (SEEK_DATA/SEEK_HOLE) that share the stored bytes out as
// evenly as the holes allow; a file without holes, or a filesystem without
// SEEK_DATA, is one segment. Every cut is a multiple of 4 KiB.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace flashpipe::output {

struct Segment {
  uint64_t start = 0, end = 0;  // [start, end) of the image
  uint64_t stored = 0;          // bytes in it that the file stores
};

// At most `n` segments covering the image [0, length), which is the file
// `fd`'s bytes [offset, offset + length), in order; offsets in the image.
Result<std::vector<Segment>> SplitAtHoles(int fd, uint64_t offset, uint64_t length, unsigned n,
                                          std::string_view name);

}  // namespace flashpipe::output
