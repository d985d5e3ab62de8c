#include "output/raw_output.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/fd_io.h"

namespace flashpipe::output {
namespace {

// The output file's geometry: 4 KiB blocks; O_DIRECT when the filesystem
// takes it (tmpfs before 6.6 does not: then the writes are buffered).
Result<io::Geometry> PrepareFile(int fd, const std::string& name, uint64_t length) {
  struct stat st;
  if (::fstat(fd, &st) != 0) return ErrnoError(fmt::format("stat {}", name));
  if (!S_ISREG(st.st_mode) || st.st_size != 0) return Internal(fmt::format("{}: not a new, empty file", name));
  if (::ftruncate(fd, static_cast<off_t>(length)) != 0) {
    return ErrnoError(fmt::format("{}: cannot set the size to {}", name, length));
  }
  io::Geometry g;
  g.size = length;
  g.logical_block = 4096;
  g.physical_block = 4096;
  g.offset_align = 4096;
  g.block_device = false;
  int flags = ::fcntl(fd, F_GETFL);
  g.direct = flags >= 0 && ::fcntl(fd, F_SETFL, flags | O_DIRECT) == 0;
  return g;
}

}  // namespace

RawFileOutput::~RawFileOutput() = default;

Result<std::unique_ptr<RawFileOutput>> RawFileOutput::Create(int fd, std::string name, uint64_t length,
                                                             const QueueOptions& options) {
  FP_ASSIGN_OR_RETURN(io::Geometry g, PrepareFile(fd, name, length));
  UniqueFd own(::fcntl(fd, F_DUPFD_CLOEXEC, 0));
  if (!own.valid()) return ErrnoError(fmt::format("dup {}", name));
  auto out = std::unique_ptr<RawFileOutput>(new RawFileOutput());
  out->target_ = io::Target::FromFd(std::move(own), name, g);
  FP_ASSIGN_OR_RETURN(out->queue_, out->target_->MakeQueue(options.backend, options.queue_depth));
  io::Device d = io::DeviceFor(*out->target_, out->queue_.get());
  d.reads_zero = true;  // sized from empty: every byte reads zero until written
  io::WriterOptions wo;
  wo.request_size = options.request_size;
  wo.queue_depth = options.queue_depth;
  FP_ASSIGN_OR_RETURN(out->writer_, io::ImageWriter::Create({d}, wo));
  return out;
}

Status RawFileOutput::OnData(uint64_t offset, std::span<const uint8_t> data) { return writer_->OnRaw(offset, data); }

Status RawFileOutput::OnZeros(uint64_t offset, uint64_t length, ZeroKind) {
  uint64_t fill = length & ~uint64_t{3};  // fills are whole words; a short tail goes as data
  if (fill > 0) FP_RETURN_IF_ERROR(writer_->OnFill(offset, fill, 0));
  if (fill < length) FP_RETURN_IF_ERROR(writer_->OnRaw(offset + fill, ZeroBuffer().first(length - fill)));
  return Status::Ok();
}

Status RawFileOutput::Finish(uint64_t) { return writer_->Finish(); }

Status StreamOutput::OnData(uint64_t, std::span<const uint8_t> data) {
  FP_RETURN_IF_ERROR(WriteAll(fd_, data, name_, pos_));
  pos_ += data.size();
  return Status::Ok();
}

Status StreamOutput::OnZeros(uint64_t, uint64_t length, ZeroKind) {
  while (length > 0) {
    auto zeros = ZeroBuffer().first(std::min<uint64_t>(length, ZeroBuffer().size()));
    FP_RETURN_IF_ERROR(WriteAll(fd_, zeros, name_, pos_));
    pos_ += zeros.size();
    length -= zeros.size();
  }
  return Status::Ok();
}

}  // namespace flashpipe::output
