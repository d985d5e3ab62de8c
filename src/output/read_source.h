// ReadSource: what `flashpipe read` reads, opened and checked before any
// output exists.
//
//   spec      a block device, a regular file, or DEVICE:NAME, the GPT
//             partition NAME of a device or of a disk image file (a path that
//             exists as given is never split at its ':')
//   offset    where to start inside it: a multiple of the logical block with
//             O_DIRECT (512 on most devices)
//   length    how much (unset: to the end); on a block device a multiple of
//             the logical block. A source shorter than offset + length is
//             refused, saying how long it is.
// The target's window is exactly the range, so no request can leave it (nor
// the partition). A file is read with O_DIRECT unless the page cache already
// holds most of what it stores in the range (io/page_cache.h: an image just
// made or copied in), or `buffered` asks; then it is read buffered.
//
// In use: a block device is opened read-only (O_DIRECT) and also claimed
// with O_RDONLY|O_EXCL for as long as the ReadSource lives, so it cannot be
// mounted or opened exclusively for writing (flashpipe write, bmaptool copy,
// mkfs) while it is read. When the claim fails, the device (or one of its
// partitions) is either mounted, and is read with a warning (a read-write
// mount may change underneath, so the image may be inconsistent), or held by
// another program (a writer, or a device-mapper/RAID holder), and is refused
// unless `force`.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/file_id.h"
#include "base/status.h"
#include "base/unique_fd.h"
#include "io/device_users.h"
#include "io/target.h"

namespace flashpipe::output {

struct SourceRequest {
  std::string spec;
  uint64_t offset = 0;
  std::optional<uint64_t> length;
  bool force = false;
  bool buffered = false;  // a file: read through the page cache, whether it holds the file or not
};

struct ReadSource {
  std::string path;       // the device or file
  std::string partition;  // the GPT name, or empty
  uint64_t start = 0;     // absolute byte offset of the range in `path`
  uint64_t length = 0;
  bool block_device = false;
  bool cached = false;    // a file mostly in the page cache: read buffered, not O_DIRECT
  FileId id;
  std::unique_ptr<io::Target> target;  // read-only, window = the range
  UniqueFd claim;                      // O_EXCL claim while reading (block devices)
  std::vector<std::string> warnings;

  std::string Describe() const;  // "/dev/loop0 partition 'boot' (bytes 0x100000+1048576)"
};

Result<ReadSource> OpenSource(const SourceRequest& request);

// What `read` says about a mounted device (io::UseOfBlockDevice): "/dev/sdb
// is mounted at /mnt (read-only)", or "/dev/sdb has mounted partitions:
// /dev/sdb1 at /boot (read-only), ..."; a read-write mount adds why that
// matters. `use` has at least one mount.
std::string MountWarning(const std::string& path, const io::BlockUse& use);

}  // namespace flashpipe::output
