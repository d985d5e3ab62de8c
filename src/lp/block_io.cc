#include "lp/block_io.h"

#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/fd_io.h"

namespace flashpipe::lp {

Status CheckRange(std::string_view name, uint64_t size, uint64_t offset, uint64_t len) {
  if (offset <= size && len <= size - offset) return Status::Ok();
  return InvalidArgument(
      fmt::format("{}: {} bytes at byte 0x{:x} are outside its {} bytes", name, len, offset, size));
}

FdBlockIo::FdBlockIo(int fd, std::string name, uint64_t base, uint64_t size, bool writable)
    : fd_(fd), name_(std::move(name)), base_(base), size_(size), writable_(writable) {}

Result<FdBlockIo> FdBlockIo::Whole(int fd, std::string name, bool writable) {
  struct stat st;
  if (::fstat(fd, &st) != 0) return ErrnoError(fmt::format("stat {}", name));
  uint64_t size = static_cast<uint64_t>(st.st_size);
  if (S_ISBLK(st.st_mode) && ::ioctl(fd, BLKGETSIZE64, &size) != 0) {
    return ErrnoError(fmt::format("size of {}", name));
  }
  if (!S_ISBLK(st.st_mode) && !S_ISREG(st.st_mode)) {
    return InvalidArgument(fmt::format("{} is neither a regular file nor a block device", name));
  }
  return FdBlockIo(fd, std::move(name), 0, size, writable);
}

Status FdBlockIo::Read(uint64_t offset, std::span<uint8_t> out) {
  FP_RETURN_IF_ERROR(CheckRange(name_, size_, offset, out.size()));
  return PreadExact(fd_, out, base_ + offset, name_);
}

Status FdBlockIo::Write(uint64_t offset, std::span<const uint8_t> data) {
  if (!writable_) return Internal(fmt::format("{} is open read-only", name_));
  FP_RETURN_IF_ERROR(CheckRange(name_, size_, offset, data.size()));
  return PwriteAll(fd_, data, base_ + offset, name_);
}

Status FdBlockIo::Sync() {
  if (!writable_) return Internal(fmt::format("{} is open read-only", name_));
  if (::fdatasync(fd_) != 0) return ErrnoError(fmt::format("fdatasync {}", name_));
  return Status::Ok();
}

}  // namespace flashpipe::lp
