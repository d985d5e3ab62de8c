#include "output/read_source.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/fd_io.h"
#include "base/units.h"
#include "io/target_spec.h"
#include "base/page_cache.h"

namespace flashpipe::output {
namespace {

using Resolved = io::TargetSpec;

// SPEC as a path, else DEVICE:NAME (io/target_spec.h); a file or a device.
Result<Resolved> Resolve(const std::string& spec) {
  Resolved r = io::ParseTargetSpec(spec);
  if (!r.exists) return NotFound(fmt::format("{}: no such file or device (nor DEVICE:PARTITION)", spec));
  if (!S_ISBLK(r.st.st_mode) && !S_ISREG(r.st.st_mode)) {
    return InvalidArgument(fmt::format("{}: not a block device or a regular file", r.path));
  }
  return r;
}

}  // namespace

std::string MountWarning(const std::string& path, const io::BlockUse& use) {
  std::vector<std::string> where;
  bool whole = true;
  for (const io::MountInfo& m : use.mounts) {
    whole = whole && !m.partition;
    where.push_back(fmt::format("{} at {} ({})", m.source, m.point, m.read_write ? "read-write" : "read-only"));
  }
  const bool rw = use.mounted_read_write();
  std::string what = whole ? fmt::format("{} is mounted at {}", path, use.mounts.front().point)
                           : fmt::format("{} has mounted partitions: {}", path, fmt::join(where, ", "));
  if (whole) what += rw ? " (read-write)" : " (read-only)";
  if (!rw) return what;
  return what + ": files may change while they are read, so the image may be inconsistent (unmount it or "
                "remount it read-only first)";
}

namespace {

// Claims the device (O_EXCL) or says why it may or may not be read without.
Status Claim(const Resolved& r, bool force, ReadSource* src) {
  src->claim = UniqueFd(::open(r.path.c_str(), O_RDONLY | O_EXCL | O_CLOEXEC));
  if (src->claim.valid()) return Status::Ok();
  if (errno != EBUSY) return ErrnoError(fmt::format("cannot open {}", r.path));
  io::BlockUse use = io::UseOfBlockDevice(r.st.st_rdev);
  if (!use.mounts.empty()) {
    src->warnings.push_back(MountWarning(r.path, use));
    return Status::Ok();
  }
  if (force) {
    src->warnings.push_back(fmt::format("{} is held by another program; reading it anyway (--force)", r.path));
    return Status::Ok();
  }
  std::string holders = use.holders.empty() ? "" : fmt::format(" (holders: {})", fmt::join(use.holders, ", "));
  return Busy(fmt::format("{} is held exclusively by another program{}: a writer such as flashpipe write or "
                          "bmaptool copy, or a device-mapper/RAID device on top of it; --force reads it anyway",
                          r.path, holders));
}

Status CheckAlignment(const ReadSource& s, const SourceRequest& req, const io::Geometry& g) {
  if (!g.direct) return Status::Ok();
  uint64_t lb = g.logical_block;
  if (s.start % lb != 0) {
    return InvalidArgument(fmt::format("--offset {} is not a multiple of the {}-byte logical block of {} "
                                       "(O_DIRECT reads need it)", req.offset, lb, s.path));
  }
  if (g.block_device && s.length % lb != 0) {
    return InvalidArgument(fmt::format("--length {} is not a multiple of the {}-byte logical block of {}",
                                       s.length, lb, s.path));
  }
  return Status::Ok();
}

// Start and length from the request, inside `within`.
Status PlaceRange(const SourceRequest& req, const io::ByteRange& within, const std::string& what, ReadSource* s) {
  FP_ASSIGN_OR_RETURN(io::ByteRange w, io::PlaceWindow(within, {req.offset, req.length},
                                                       {.what = what, .size_flag = "--length", .verb = "read"}));
  s->start = w.offset;
  s->length = w.size;
  return Status::Ok();
}

}  // namespace

std::string ReadSource::Describe() const {
  std::string what = partition.empty() ? path : fmt::format("{} partition '{}'", path, partition);
  return fmt::format("{} (bytes 0x{:x}+{})", what, start, length);
}

Result<ReadSource> OpenSource(const SourceRequest& req) {
  FP_ASSIGN_OR_RETURN(Resolved r, Resolve(req.spec));
  ReadSource s;
  s.path = r.path;
  s.partition = r.partition;
  s.block_device = S_ISBLK(r.st.st_mode);
  if (s.block_device) FP_RETURN_IF_ERROR(Claim(r, req.force, &s));
  FP_ASSIGN_OR_RETURN(auto whole, io::Target::Open(r.path, {.read_only = true}));
  const io::Geometry& g = whole->geometry();
  io::ByteRange within{0, g.size};
  std::string what = r.path;
  if (!r.partition.empty()) {
    FP_ASSIGN_OR_RETURN(within, io::FindGptPartition(r.path, r.partition, g));
    what = fmt::format("partition '{}' of {}", r.partition, r.path);
  }
  FP_RETURN_IF_ERROR(PlaceRange(req, within, what, &s));
  FP_RETURN_IF_ERROR(CheckAlignment(s, req, g));
  FP_ASSIGN_OR_RETURN(s.id, FileIdOfFd(whole->fd(), r.path));
  UniqueFd fd(::fcntl(whole->fd(), F_DUPFD_CLOEXEC, 0));
  if (!fd.valid()) return ErrnoError(fmt::format("dup {}", r.path));
  io::Geometry geometry = g;
  if (!s.block_device && g.direct && (req.buffered || MostlyCached(fd.get(), s.start, s.length))) {
    int fl = ::fcntl(fd.get(), F_GETFL);
    if (fl >= 0 && ::fcntl(fd.get(), F_SETFL, fl & ~O_DIRECT) == 0) {
      geometry.direct = false;
      s.cached = true;
    }
  }
  s.target = io::Target::FromFd(std::move(fd), r.path, geometry, s.start, s.length);
  return s;
}

}  // namespace flashpipe::output
