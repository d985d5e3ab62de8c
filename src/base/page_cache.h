// PageCache: how much of a regular file's range the page cache already holds
// (cachestat(2) where the kernel has it, else mincore on a read-only mapping:
// nothing is read or faulted in either way).
//
// A reader that bypasses the cache (O_DIRECT) goes to the device for bytes
// the kernel already has in memory: an image just made by mkfs or copied in
// is read back from disk at the disk's speed, where a buffered read is a copy
// from memory. ReadSource (output/) asks before it reads a file and reads it
// buffered when most of its stored bytes are cached; sparse::ReadAhead asks
// for each piece it is about to read.
#pragma once

#include <cstdint>

#include "base/status.h"

namespace flashpipe {

// Bytes of [offset, offset + length) of the file `fd` that are in the page
// cache, in whole pages.
Result<uint64_t> CachedBytes(int fd, uint64_t offset, uint64_t length);

// True when at least half of what the file stores in the range (st_blocks,
// an estimate for a range smaller than the file; a block device: the whole
// range) is cached; false on any
// error (then the caller keeps direct I/O, which is always correct).
bool MostlyCached(int fd, uint64_t offset, uint64_t length);

}  // namespace flashpipe
