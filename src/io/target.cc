// Target: opening files and block devices for direct writing, and geometry.
#include "io/target.h"

#include <fcntl.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <fstream>

#include "base/write_lock.h"
#include "io/device_users.h"
#include "io/queues.h"

#ifndef STATX_DIOALIGN
#define STATX_DIOALIGN 0x00002000U
#endif

namespace flashpipe::io {
namespace {

// queue/NAME of a whole disk, or of the disk a partition is on; 0 if unknown.
uint64_t QueueLimit(dev_t rdev, const char* name) {
  std::string base = fmt::format("/sys/dev/block/{}:{}", major(rdev), minor(rdev));
  for (const char* dir : {"/queue/", "/../queue/"}) {
    std::ifstream in(base + dir + name);
    uint64_t v = 0;
    if (in >> v && v > 0) return v;
  }
  return 0;
}

// A read or write longer than this is split into several bios. Pages are
// counted as one segment each (they may merge when physically adjacent, which
// nothing promises).
uint64_t MaxUnsplit(dev_t rdev) {
  constexpr uint64_t kPage = 4096;
  uint64_t sectors_kb = QueueLimit(rdev, "max_sectors_kb");
  uint64_t segments = QueueLimit(rdev, "max_segments");
  uint64_t segment_size = QueueLimit(rdev, "max_segment_size");
  if (sectors_kb == 0 || segments == 0 || segment_size == 0) return 0;
  uint64_t per_page = (kPage + segment_size - 1) / segment_size;  // segments one page needs
  return std::min(sectors_kb * 1024, segments / per_page * kPage);
}

// STATX_DIOALIGN (Linux 6.1+): the real O_DIRECT alignment, when reported.
void ApplyDioAlign(int fd, Geometry* g) {
  struct statx stx;
  if (statx(fd, "", AT_EMPTY_PATH, STATX_DIOALIGN, &stx) != 0) return;
  if (!(stx.stx_mask & STATX_DIOALIGN) || stx.stx_dio_offset_align == 0) return;
  g->mem_align = std::max<uint32_t>(stx.stx_dio_mem_align, 512);
  if (!g->block_device) g->logical_block = stx.stx_dio_offset_align;
}

Status BlockGeometry(int fd, const struct stat& st, const std::string& path, Geometry* g) {
  uint64_t size = 0;
  int logical = 0;
  unsigned physical = 0, opt = 0;
  if (ioctl(fd, BLKGETSIZE64, &size) != 0) return ErrnoError(path + ": BLKGETSIZE64 failed");
  if (ioctl(fd, BLKSSZGET, &logical) != 0) return ErrnoError(path + ": BLKSSZGET failed");
  if (ioctl(fd, BLKPBSZGET, &physical) != 0) physical = static_cast<unsigned>(logical);
  if (ioctl(fd, BLKIOOPT, &opt) != 0) opt = 0;
  g->size = size;
  g->block_device = true;
  g->logical_block = static_cast<uint32_t>(logical);
  g->physical_block = std::max<uint32_t>(physical, g->logical_block);
  g->offset_align = std::max<uint32_t>(g->physical_block, 4096);
  g->optimal_io = opt;
  if (uint64_t kb = QueueLimit(st.st_rdev, "max_sectors_kb")) g->max_request = kb * 1024;
  g->max_unsplit = MaxUnsplit(st.st_rdev);
  g->mem_align = 4096;
  return Status::Ok();
}

void FileGeometry(const struct stat& st, Geometry* g) {
  g->size = static_cast<uint64_t>(st.st_size);
  g->block_device = false;
  g->logical_block = 4096;
  g->physical_block = 4096;
  g->offset_align = 4096;
  g->mem_align = 4096;
  g->max_request = 1 << 20;
}

Result<UniqueFd> OpenFd(const std::string& path, int flags, bool force, bool* direct) {
  int fd = open(path.c_str(), flags | O_DIRECT | O_CLOEXEC, 0644);
  if (fd < 0 && errno == EINVAL) {  // filesystem without O_DIRECT (tmpfs < 6.6)
    // The refused open has already created a new file: open that one.
    fd = open(path.c_str(), (flags & ~O_EXCL) | O_CLOEXEC, 0644);
    *direct = false;
  }
  if (fd < 0 && errno == EBUSY) {
    struct stat st;
    std::string what = "mounted or opened exclusively";
    if (::stat(path.c_str(), &st) == 0 && S_ISBLK(st.st_mode)) {
      BlockUse use = UseOfBlockDevice(st.st_rdev);
      if (use.in_use()) what = use.Why();
    }
    return DeviceBusy(path, what, force);
  }
  if (fd < 0) return ErrnoError("cannot open " + path);
  return UniqueFd(fd);
}

// O_DIRECT on a descriptor someone else opened; stays buffered where the
// filesystem refuses it.
bool EnableDirect(int fd) {
  int fl = fcntl(fd, F_GETFL);
  return fl >= 0 && ((fl & O_DIRECT) || fcntl(fd, F_SETFL, fl | O_DIRECT) == 0);
}

}  // namespace

bool IsDevicePath(const std::string& path) {
  return path.starts_with("/dev/") && !path.starts_with("/dev/shm/");
}

Status DeviceBusy(const std::string& path, const std::string& what, bool force) {
  if (force) {
    return Busy(fmt::format("{}: device is in use ({}) and the kernel refuses to open it for writing "
                            "even with --force; unmount it or stop what holds it first", path, what));
  }
  return Busy(fmt::format("{}: device is in use ({}); unmount it or stop what holds it, "
                          "or --force to write anyway", path, what));
}

Result<Backend> ParseBackend(std::string_view name) {
  if (name == "auto") return Backend::kAuto;
  if (name == "io_uring" || name == "uring") return Backend::kUring;
  if (name == "threads") return Backend::kThreads;
  if (name == "sync") return Backend::kSync;
  return InvalidArgument(fmt::format("unknown I/O backend '{}' (auto, io_uring, threads, sync)", name));
}

Result<std::unique_ptr<Target>> Target::Open(const std::string& path, const TargetOptions& options) {
  struct stat st;
  bool exists = stat(path.c_str(), &st) == 0;
  if (!exists && errno != ENOENT) return ErrnoError("cannot stat " + path);
  if (!exists && (IsDevicePath(path) || !options.create))
    return NotFound(path + ": no such file or device");
  if (!exists && lstat(path.c_str(), &st) == 0) {
    return InvalidArgument(path + ": is a symbolic link to a path that does not exist; "
                                  "refusing to create a file through it");
  }
  if (exists && !S_ISREG(st.st_mode) && !S_ISBLK(st.st_mode))
    return InvalidArgument(path + ": not a regular file or block device");
  bool blk = exists && S_ISBLK(st.st_mode);

  int flags = options.read_only ? O_RDONLY : O_RDWR;
  if (blk && !options.force && !options.read_only) flags |= O_EXCL;
  if (!blk && !exists) flags |= O_CREAT | O_EXCL | O_NOFOLLOW;
  auto t = std::unique_ptr<Target>(new Target());
  t->path_ = path;
  FP_ASSIGN_OR_RETURN(t->fd_, OpenFd(path, flags, options.force, &t->geometry_.direct));
  // Before Setup, which may truncate: a second writer changes nothing.
  if (!options.read_only) FP_RETURN_IF_ERROR(LockForWriting(t->fd_.get(), path));
  FP_RETURN_IF_ERROR(t->Setup(options, blk));
  return t;
}

Result<std::unique_ptr<Target>> Target::Adopt(UniqueFd fd, std::string name, const TargetOptions& options) {
  auto t = std::unique_ptr<Target>(new Target());
  t->path_ = std::move(name);
  t->fd_ = std::move(fd);
  t->geometry_.direct = EnableDirect(t->fd_.get());
  FP_RETURN_IF_ERROR(t->Setup(options, false));
  return t;
}

// Size (truncate_to), geometry and window of the opened descriptor.
Status Target::Setup(const TargetOptions& options, bool blk) {
  if (!blk && options.truncate_to > 0 && !options.read_only) FP_RETURN_IF_ERROR(Truncate(options.truncate_to));
  struct stat st;
  if (fstat(fd_.get(), &st) != 0) return ErrnoError("cannot stat " + path_);
  Geometry& g = geometry_;
  if (blk) {
    FP_RETURN_IF_ERROR(BlockGeometry(fd_.get(), st, path_, &g));
  } else {
    FileGeometry(st, &g);
  }
  ApplyDioAlign(fd_.get(), &g);
  return SetWindow(options.window_offset, options.window_size);
}

Status Target::SetWindow(uint64_t offset, uint64_t size) {
  const uint64_t end = geometry_.size;
  if (offset > end || size > end - offset)
    return NoSpace(fmt::format("{}: window 0x{:x}+{} lies beyond the end (size {})", path_, offset, size, end));
  window_offset_ = offset;
  window_size_ = size ? size : end - offset;
  return Status::Ok();
}

Status Target::Truncate(uint64_t size) {
  if (geometry_.block_device) return InvalidArgument(path_ + ": a block device cannot be truncated");
  // Drop the old content first: a fresh file reads back zeros everywhere,
  // which lets the writer leave zero ranges as holes.
  if (size > static_cast<uint64_t>(INT64_MAX)) {
    return IoError(fmt::format("{}: cannot set size to {}", path_, size), EFBIG);
  }
  if (ftruncate(fd_.get(), 0) != 0 || ftruncate(fd_.get(), static_cast<off_t>(size)) != 0) {
    return ErrnoError(fmt::format("{}: cannot set size to {}", path_, size));
  }
  fresh_ = true;
  geometry_.size = size;
  window_offset_ = 0;
  window_size_ = size;
  return Status::Ok();
}

std::unique_ptr<Target> Target::FromFd(UniqueFd fd, std::string name, Geometry geometry,
                                       uint64_t window_offset, uint64_t window_size) {
  auto t = std::unique_ptr<Target>(new Target());
  t->path_ = std::move(name);
  t->fd_ = std::move(fd);
  t->geometry_ = geometry;
  t->window_offset_ = window_offset;
  t->window_size_ = window_size ? window_size
                    : geometry.size > window_offset ? geometry.size - window_offset : 0;
  return t;
}

Status Target::CheckRange(uint64_t offset, uint64_t length) const {
  if (offset > window_size_ || length > window_size_ - offset)
    return NoSpace(fmt::format("{}: range 0x{:x}+{} is outside the target (size {})", path_,
                               offset, length, window_size_));
  return Status::Ok();
}

Result<std::unique_ptr<IoQueue>> Target::MakeQueue(Backend backend, unsigned depth) const {
  if (depth == 0) depth = 4;
  bool auto_backend = backend == Backend::kAuto;
  if (auto_backend) backend = ProbeUring().ok() ? Backend::kUring : Backend::kThreads;
  switch (backend) {
    case Backend::kUring: {
      auto q = MakeUringQueue(fd_.get(), depth, geometry_.max_unsplit);
      if (q.ok() || !auto_backend) return q;
      return MakeThreadQueue(fd_.get(), depth);  // probe passed, ring setup did not
    }
    case Backend::kThreads: return MakeThreadQueue(fd_.get(), depth);
    case Backend::kSync: return MakeSyncQueue(fd_.get(), depth);
    case Backend::kAuto: break;
  }
  return Internal("unreachable backend");
}

}  // namespace flashpipe::io
