#include "sparse/expand.h"

#include <fcntl.h>
#include <linux/falloc.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <vector>

#include "base/endian.h"
#include "base/unique_fd.h"
#include "sparse/decode_fd.h"

namespace flashpipe::sparse {
namespace {

constexpr size_t kPatternBuffer = size_t{1} << 20;

Status PwriteFull(int fd, std::span<const uint8_t> data, uint64_t offset, std::string_view name) {
  while (!data.empty()) {
    ssize_t n = ::pwrite(fd, data.data(), data.size(), static_cast<off_t>(offset));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return ErrnoError(fmt::format("write {} at byte 0x{:x}", name, offset));
    data = data.subspan(static_cast<size_t>(n));
    offset += static_cast<uint64_t>(n);
  }
  return Status::Ok();
}

Status WriteFull(int fd, std::span<const uint8_t> data, uint64_t offset, std::string_view name) {
  while (!data.empty()) {
    ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return ErrnoError(fmt::format("write {} at byte 0x{:x}", name, offset));
    data = data.subspan(static_cast<size_t>(n));
    offset += static_cast<uint64_t>(n);
  }
  return Status::Ok();
}

}  // namespace

FdImageSink::FdImageSink(int fd, std::string name, Kind kind, uint64_t capacity)
    : fd_(fd), name_(std::move(name)), kind_(kind), capacity_(capacity), writeback_(fd) {}

Status FdImageSink::OnHeader(const FileHeader& h) {
  if (kind_ == Kind::kDevice && capacity_ > 0 && h.image_size() > capacity_) {
    return NoSpace(fmt::format("image of {} bytes does not fit {} ({} bytes)", h.image_size(), name_, capacity_));
  }
  if (kind_ == Kind::kStream && stream_pos_ > 0) {
    return InvalidArgument(fmt::format("{} is a stream: only one image can be written to it", name_));
  }
  image_size_ = std::max(image_size_, h.image_size());
  return Status::Ok();
}

Status FdImageSink::WriteAt(uint64_t offset, std::span<const uint8_t> data) {
  if (kind_ != Kind::kStream) {
    FP_RETURN_IF_ERROR(PwriteFull(fd_, data, offset, name_));
    if (kind_ == Kind::kFile) writeback_.Wrote(offset + data.size());
    return Status::Ok();
  }
  if (offset != stream_pos_) return Internal(fmt::format("{}: out-of-order write at 0x{:x}", name_, offset));
  stream_pos_ += data.size();
  return WriteFull(fd_, data, offset, name_);
}

Status FdImageSink::OnRaw(uint64_t offset, std::span<const uint8_t> data) { return WriteAt(offset, data); }

Status FdImageSink::WritePattern(uint64_t offset, uint64_t length, uint32_t pattern) {
  std::vector<uint8_t> buf(static_cast<size_t>(std::min<uint64_t>(length, kPatternBuffer)));
  for (size_t i = 0; i < buf.size(); i += 4) StoreLE<uint32_t>(buf.data() + i, pattern);
  while (length > 0) {
    size_t n = static_cast<size_t>(std::min<uint64_t>(length, buf.size()));
    FP_RETURN_IF_ERROR(WriteAt(offset, {buf.data(), n}));
    offset += n;
    length -= n;
  }
  return Status::Ok();
}

Status FdImageSink::OnFill(uint64_t offset, uint64_t length, uint32_t pattern) {
  if (pattern == 0 && kind_ == Kind::kFile && punch_ok_) {
    if (::fallocate(fd_, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, static_cast<off_t>(offset),
                    static_cast<off_t>(length)) == 0) {
      return Status::Ok();
    }
    if (errno != EOPNOTSUPP && errno != ENOSYS) {
      return ErrnoError(fmt::format("punch hole in {} at byte 0x{:x}", name_, offset));
    }
    punch_ok_ = false;
  }
  return WritePattern(offset, length, pattern);
}

Status FdImageSink::OnSkip(uint64_t offset, uint64_t length) {
  // A regular file keeps what an earlier image put there (a fresh file: a
  // hole); so does a device. A stream cannot skip: zeros.
  if (kind_ == Kind::kStream) return WritePattern(offset, length, 0);
  return Status::Ok();
}

namespace {

Result<UniqueFd> OpenInput(const std::string& path) {
  if (path == "-") return UniqueFd(::dup(STDIN_FILENO));
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) return ErrnoError(fmt::format("open {}", path));
  return fd;
}

Status DecodeAll(std::span<const std::string> inputs, FdImageSink& sink, DecoderOptions options) {
  for (const std::string& in : inputs) {
    FP_ASSIGN_OR_RETURN(UniqueFd fd, OpenInput(in));
    std::string name = in == "-" ? "stdin" : in;
    Status s = DecodeFd(fd.get(), sink, options, name);
    if (!s.ok()) return s.code() == Code::kCorrupt ? s.WithContext(name) : s;
  }
  return Status::Ok();
}

Status ExpandToStream(std::span<const std::string> inputs, DecoderOptions options) {
  if (inputs.size() != 1) return InvalidArgument("writing to stdout takes exactly one input");
  FdImageSink sink(STDOUT_FILENO, "stdout", FdImageSink::Kind::kStream);
  return DecodeAll(inputs, sink, options);
}

Status ExpandToDevice(std::span<const std::string> inputs, const std::string& output, DecoderOptions options) {
  UniqueFd fd(::open(output.c_str(), O_WRONLY | O_CLOEXEC));
  if (!fd.valid()) return ErrnoError(fmt::format("open {}", output));
  uint64_t capacity = 0;
  if (::ioctl(fd.get(), BLKGETSIZE64, &capacity) != 0) return ErrnoError(fmt::format("size of {}", output));
  FdImageSink sink(fd.get(), output, FdImageSink::Kind::kDevice, capacity);
  FP_RETURN_IF_ERROR(DecodeAll(inputs, sink, options));
  if (::fsync(fd.get()) != 0) return ErrnoError(fmt::format("fsync {}", output));
  if (fd.Close() != 0) return ErrnoError(fmt::format("close {}", output));
  return Status::Ok();
}

Status ExpandToFile(std::span<const std::string> inputs, const std::string& output, DecoderOptions options) {
  std::string tmp = output + ".XXXXXX";
  UniqueFd fd(::mkostemp(tmp.data(), O_CLOEXEC));
  if (!fd.valid()) return ErrnoError(fmt::format("create a temporary file next to {}", output));
  auto fail = [&](Status s) {
    ::unlink(tmp.c_str());
    return s;
  };
  mode_t mask = ::umask(0);
  ::umask(mask);
  if (::fchmod(fd.get(), 0666 & ~mask) != 0) return fail(ErrnoError(fmt::format("chmod {}", tmp)));
  FdImageSink sink(fd.get(), output, FdImageSink::Kind::kFile);
  Status s = DecodeAll(inputs, sink, options);
  if (!s.ok()) return fail(s);
  if (::ftruncate(fd.get(), static_cast<off_t>(sink.image_size())) != 0)
    return fail(ErrnoError(fmt::format("truncate {}", tmp)));
  if (::fsync(fd.get()) != 0) return fail(ErrnoError(fmt::format("fsync {}", tmp)));
  if (fd.Close() != 0) return fail(ErrnoError(fmt::format("close {}", tmp)));
  if (::rename(tmp.c_str(), output.c_str()) != 0)
    return fail(ErrnoError(fmt::format("rename {} to {}", tmp, output)));
  return Status::Ok();
}

}  // namespace

Status ExpandToPath(std::span<const std::string> inputs, const std::string& output, DecoderOptions options) {
  if (inputs.empty()) return InvalidArgument("no input");
  if (std::count(inputs.begin(), inputs.end(), "-") > 1) return InvalidArgument("stdin can be read only once");
  if (output == "-") return ExpandToStream(inputs, options);
  struct stat st;
  if (::stat(output.c_str(), &st) == 0) {
    if (S_ISBLK(st.st_mode)) return ExpandToDevice(inputs, output, options);
    if (!S_ISREG(st.st_mode)) {
      UniqueFd fd(::open(output.c_str(), O_WRONLY | O_CLOEXEC));
      if (!fd.valid()) return ErrnoError(fmt::format("open {}", output));
      if (inputs.size() != 1) return InvalidArgument(fmt::format("{} is a stream: it takes one input", output));
      FdImageSink sink(fd.get(), output, FdImageSink::Kind::kStream);
      return DecodeAll(inputs, sink, options);
    }
  }
  return ExpandToFile(inputs, output, options);
}

}  // namespace flashpipe::sparse
