// Target: a regular file or a block device opened for direct, exclusive
// writing, with the geometry that decides request sizes and alignment, and an
// optional window (a partition) outside which nothing may be written.
//
//   auto t = Target::Open("/dev/loop3", {.force = false});
//   t->CheckRange(off, len)   // every op is checked against the window
//
// Block devices: opened O_RDWR|O_DIRECT|O_EXCL (refused when mounted or in use
// unless force), never created: a missing /dev path is an error, not a new
// file. Regular files: created if asked (O_EXCL|O_NOFOLLOW: never through a
// symlink, so a dangling link is refused rather than followed), O_DIRECT when
// the filesystem allows it (tmpfs does not: then buffered, and geometry says
// so). Adopt() wraps a file someone else created (an AtomicFile's temporary
// file) the same way.
// Geometry: BLKSSZGET, BLKPBSZGET, BLKIOOPT, queue/max_sectors_kb,
// max_segments and max_segment_size, statx STATX_DIOALIGN; files use 4096
// unless statx says otherwise.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "base/status.h"
#include "base/unique_fd.h"
#include "io/io_queue.h"

namespace flashpipe::io {

struct Geometry {
  uint64_t size = 0;                // bytes of the whole file or device
  uint32_t logical_block = 512;     // smallest addressable unit
  uint32_t physical_block = 4096;   // write unit that avoids read-modify-write
  uint32_t mem_align = 4096;        // O_DIRECT buffer alignment
  uint32_t offset_align = 4096;     // O_DIRECT offset/length alignment we use
  uint64_t max_request = 1 << 20;   // largest single request (max_sectors_kb)
  uint64_t optimal_io = 0;          // BLKIOOPT, 0 if unknown
  // Block devices: the longest read or write the block layer takes as one
  // bio, counting every 4 KiB page as a segment of its own (max_sectors_kb,
  // max_segments, max_segment_size); 0 if unknown. Longer ones are split.
  uint64_t max_unsplit = 0;
  bool block_device = false;
  bool direct = true;               // opened with O_DIRECT
};

struct TargetOptions {
  bool force = false;         // skip O_EXCL refusal on block devices
  bool create = false;        // regular files: create if missing
  uint64_t truncate_to = 0;   // regular files: set size first (0 = leave)
  bool read_only = false;     // for verify-only or bench read tests
  uint64_t window_offset = 0; // partition start (bytes)
  uint64_t window_size = 0;   // partition size; 0 = to the end
};

// A path under /dev (but not /dev/shm): a missing one is a device that is not
// there (unplugged card, typo), never a file to create on the devtmpfs.
bool IsDevicePath(const std::string& path);

// The refusal of a block device that is in use (EBUSY on open). With `force`
// no O_EXCL was asked for, so the kernel itself refuses writes to it: the
// message then says what to do instead of suggesting --force.
Status DeviceBusy(const std::string& path, const std::string& what, bool force);

enum class Backend { kAuto, kUring, kThreads, kSync };
Result<Backend> ParseBackend(std::string_view name);  // auto|io_uring|threads|sync

class Target {
 public:
  static Result<std::unique_ptr<Target>> Open(const std::string& path, const TargetOptions& options);
  // A regular file opened read-write by the caller: O_DIRECT is switched on
  // where the filesystem allows it; truncate_to and the window apply as in
  // Open. `name` is used in messages.
  static Result<std::unique_ptr<Target>> Adopt(UniqueFd fd, std::string name, const TargetOptions& options);
  // A target over an fd someone else opened (tests, bench).
  static std::unique_ptr<Target> FromFd(UniqueFd fd, std::string name, Geometry geometry,
                                        uint64_t window_offset = 0, uint64_t window_size = 0);

  const std::string& path() const { return path_; }
  int fd() const { return fd_.get(); }
  const Geometry& geometry() const { return geometry_; }
  uint64_t window_offset() const { return window_offset_; }
  uint64_t window_size() const { return window_size_; }
  // Opened with truncate_to: the old content was dropped, so every byte reads
  // back as zero until written (the writer may leave zero ranges as holes).
  bool fresh() const { return fresh_; }
  // Regular files: drops the content and sets the size (fresh() after it);
  // the window becomes the whole file.
  Status Truncate(uint64_t size);
  // Sets the window to [offset, offset + size) of the whole file or device
  // (absolute offsets; size 0: to the end). Refused, leaving the window as
  // it was, when it runs past the end.
  Status SetWindow(uint64_t offset, uint64_t size);
  // OK when [offset, offset+length) lies inside the window (offsets are
  // relative to the window). The error names the target and the range.
  Status CheckRange(uint64_t offset, uint64_t length) const;
  // A queue of the chosen backend on this target. kAuto probes io_uring once
  // per process and falls back to threads on ENOSYS/EPERM/EINVAL.
  Result<std::unique_ptr<IoQueue>> MakeQueue(Backend backend, unsigned depth) const;

 private:
  Target() = default;
  Status Setup(const TargetOptions& options, bool block_device);
  std::string path_;
  UniqueFd fd_;
  Geometry geometry_;
  uint64_t window_offset_ = 0;
  uint64_t window_size_ = 0;
  bool fresh_ = false;
};

}  // namespace flashpipe::io
