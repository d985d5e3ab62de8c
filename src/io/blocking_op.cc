// RunOpBlocking: one IoOp with plain system calls, short transfers finished.
#include <fcntl.h>
#include <linux/falloc.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>

#include "base/aligned_buffer.h"
#include "base/fd_io.h"
#include "io/queues.h"

namespace flashpipe::io {
namespace {

const char* OpName(OpKind kind) {
  switch (kind) {
    case OpKind::kWrite: return "write";
    case OpKind::kRead: return "read";
    case OpKind::kZeroOut: return "zeroout";
    case OpKind::kDiscard: return "discard";
    case OpKind::kPunchHole: return "punch-hole";
  }
  return "op";
}

bool IsBlockDevice(int fd) {
  struct stat st;
  return fstat(fd, &st) == 0 && S_ISBLK(st.st_mode);
}

// Reads past the end of a regular file come back as zeros.
Status Transfer(int fd, const IoOp& op) {
  std::string range = fmt::format("0x{:x}+{}", op.offset, op.length);
  if (op.kind == OpKind::kWrite) return PwriteAll(fd, {op.buf, op.length}, op.offset, range);
  FP_ASSIGN_OR_RETURN(size_t got, PreadUpTo(fd, {op.buf, op.length}, op.offset, range));
  std::memset(op.buf + got, 0, op.length - got);
  return Status::Ok();
}

Status RangeIoctl(int fd, const IoOp& op, unsigned long request) {
  uint64_t range[2] = {op.offset, op.length};
  if (ioctl(fd, request, range) != 0) return ErrnoError(DescribeOp(op) + " failed");
  return Status::Ok();
}

Status WriteZeros(int fd, const IoOp& op) {
  static const AlignedBuffer zeros(1 << 20);
  for (uint64_t done = 0; done < op.length;) {
    IoOp piece{OpKind::kWrite, op.offset + done, std::min<uint64_t>(zeros.size(), op.length - done),
               const_cast<uint8_t*>(zeros.data()), -1, op.tag};
    FP_RETURN_IF_ERROR(Transfer(fd, piece));
    done += piece.length;
  }
  return Status::Ok();
}

// Files: a hole (or zeroed extents) where the filesystem can, real zeros
// where it cannot (vfat, some FUSE filesystems).
Status ZeroFileRange(int fd, const IoOp& op, bool punch) {
  auto range = [&](int mode) {
    return fallocate(fd, mode | FALLOC_FL_KEEP_SIZE, static_cast<off_t>(op.offset),
                     static_cast<off_t>(op.length)) == 0;
  };
  if (punch && range(FALLOC_FL_PUNCH_HOLE)) return Status::Ok();
  if (punch && errno != EOPNOTSUPP) return ErrnoError(DescribeOp(op) + " failed");
  if (range(FALLOC_FL_ZERO_RANGE)) return Status::Ok();
  if (errno != EOPNOTSUPP) return ErrnoError(DescribeOp(op) + " failed");
  return WriteZeros(fd, op);
}

}  // namespace

std::string DescribeOp(const IoOp& op) {
  return fmt::format("{} 0x{:x}+{}", OpName(op.kind), op.offset, op.length);
}

Status RunOpBlocking(int fd, const IoOp& op) {
  switch (op.kind) {
    case OpKind::kWrite:
    case OpKind::kRead:
      return Transfer(fd, op);
    case OpKind::kZeroOut:
      if (IsBlockDevice(fd)) return RangeIoctl(fd, op, BLKZEROOUT);
      return ZeroFileRange(fd, op, /*punch=*/false);
    case OpKind::kDiscard:
      if (IsBlockDevice(fd)) return RangeIoctl(fd, op, BLKDISCARD);
      return Status::Ok();  // files: DONT_CARE content may stay as it is
    case OpKind::kPunchHole:
      if (IsBlockDevice(fd)) return RangeIoctl(fd, op, BLKZEROOUT);
      return ZeroFileRange(fd, op, /*punch=*/true);
  }
  return Internal("unknown op kind");
}

}  // namespace flashpipe::io
