// RunOpBlocking: one IoOp with plain system calls, short transfers finished.
#include <fcntl.h>
#include <linux/falloc.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>

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

Status Transfer(int fd, const IoOp& op) {
  uint64_t done = 0;
  while (done < op.length) {
    ssize_t n = op.kind == OpKind::kWrite
                    ? pwrite(fd, op.buf + done, op.length - done, op.offset + done)
                    : pread(fd, op.buf + done, op.length - done, op.offset + done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return ErrnoError(DescribeOp(op) + " failed at byte 0x" + fmt::format("{:x}", op.offset + done));
    if (n == 0 && op.kind == OpKind::kRead) {  // end of a regular file
      std::memset(op.buf + done, 0, op.length - done);
      return Status::Ok();
    }
    if (n == 0) return NoSpace(DescribeOp(op) + ": no progress at byte 0x" + fmt::format("{:x}", op.offset + done));
    done += static_cast<uint64_t>(n);
  }
  return Status::Ok();
}

Status RangeIoctl(int fd, const IoOp& op, unsigned long request) {
  uint64_t range[2] = {op.offset, op.length};
  if (ioctl(fd, request, range) != 0) return ErrnoError(DescribeOp(op) + " failed");
  return Status::Ok();
}

Status Fallocate(int fd, const IoOp& op, int mode) {
  if (fallocate(fd, mode, static_cast<off_t>(op.offset), static_cast<off_t>(op.length)) != 0)
    return ErrnoError(DescribeOp(op) + " failed");
  return Status::Ok();
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
      return Fallocate(fd, op, FALLOC_FL_ZERO_RANGE | FALLOC_FL_KEEP_SIZE);
    case OpKind::kDiscard:
      if (IsBlockDevice(fd)) return RangeIoctl(fd, op, BLKDISCARD);
      return Status::Ok();  // files: DONT_CARE content may stay as it is
    case OpKind::kPunchHole:
      return Fallocate(fd, op, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE);
  }
  return Internal("unknown op kind");
}

}  // namespace flashpipe::io
