#include "sparse/writer.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <vector>

#include "base/endian.h"
#include "base/fd_io.h"

namespace flashpipe::sparse {
namespace {

constexpr size_t kStageSize = size_t{1} << 20;
// Payloads below this are copied into the staging buffer; larger ones are
// written from the caller's memory.
constexpr size_t kDirectThreshold = 64 << 10;

}  // namespace

Status Output::WriteAt(uint64_t, std::span<const uint8_t>) {
  return Internal("WriteAt on an output that cannot seek");
}

Status Output::CopyFrom(int in_fd, uint64_t in_offset, uint64_t len, std::string_view in_name) {
  std::vector<uint8_t> buf(std::min<uint64_t>(len, 4 << 20));
  while (len > 0) {
    size_t n = static_cast<size_t>(std::min<uint64_t>(len, buf.size()));
    FP_RETURN_IF_ERROR(PreadExact(in_fd, {buf.data(), n}, in_offset, in_name));
    FP_RETURN_IF_ERROR(Write({buf.data(), n}));
    in_offset += n;
    len -= n;
  }
  return Status::Ok();
}

std::optional<PatchableFd> ProbePatchable(int fd) {
  struct stat st;
  off_t pos = ::lseek(fd, 0, SEEK_CUR);
  int flags = ::fcntl(fd, F_GETFL);
  if (pos < 0 || flags < 0 || (flags & O_APPEND) != 0 || ::fstat(fd, &st) != 0) return std::nullopt;
  if (!S_ISREG(st.st_mode) && !S_ISBLK(st.st_mode)) return std::nullopt;
  return PatchableFd{.base = static_cast<uint64_t>(pos), .regular = S_ISREG(st.st_mode)};
}

FdOutput::FdOutput(int fd, std::string name) : fd_(fd), name_(std::move(name)) {
  if (auto p = ProbePatchable(fd)) {
    seekable_ = true;
    regular_ = p->regular;
    base_ = p->base;
  }
}

void WritebackKicker::Wrote(uint64_t end) {
  constexpr uint64_t kKick = uint64_t{32} << 20;
  if (end < from_) from_ = 0;  // a new overlay pass starts over
  if (end - from_ < kKick) return;
  ::sync_file_range(fd_, static_cast<off_t>(from_), static_cast<off_t>(end - from_), SYNC_FILE_RANGE_WRITE);
  from_ = end;
}

Status FdOutput::Advance(uint64_t n) {
  pos_ += n;
  if (regular_ && pos_ - writeback_from_ >= (uint64_t{32} << 20)) {
    ::sync_file_range(fd_, static_cast<off_t>(base_ + writeback_from_), static_cast<off_t>(pos_ - writeback_from_),
                      SYNC_FILE_RANGE_WRITE);
    writeback_from_ = pos_;
  }
  return Status::Ok();
}

Status FdOutput::Write(std::span<const uint8_t> a, std::span<const uint8_t> b) {
  iovec iov[2] = {{const_cast<uint8_t*>(a.data()), a.size()}, {const_cast<uint8_t*>(b.data()), b.size()}};
  int first = 0;
  while (first < 2) {
    if (iov[first].iov_len == 0) {
      ++first;
      continue;
    }
    ssize_t n = RetryOnEintr([&] { return ::writev(fd_, iov + first, 2 - first); });
    if (n < 0) return ErrnoError(fmt::format("write {} at byte 0x{:x}", name_, pos_));
    if (n == 0) return IoError(fmt::format("write {} at byte 0x{:x}: wrote 0 bytes", name_, pos_), EIO);
    FP_RETURN_IF_ERROR(Advance(static_cast<uint64_t>(n)));
    for (size_t left = static_cast<size_t>(n); left > 0 && first < 2;) {
      size_t k = std::min(left, iov[first].iov_len);
      iov[first].iov_base = static_cast<uint8_t*>(iov[first].iov_base) + k;
      iov[first].iov_len -= k;
      left -= k;
      if (iov[first].iov_len == 0) ++first;
    }
  }
  return Status::Ok();
}

Status FdOutput::WriteAt(uint64_t offset, std::span<const uint8_t> data) {
  if (!seekable_) return Output::WriteAt(offset, data);
  return PwriteAll(fd_, data, base_ + offset, name_);
}

Status FdOutput::CopyFrom(int in_fd, uint64_t in_offset, uint64_t len, std::string_view in_name) {
  // copy_file_range moves the bytes inside the kernel (reflinks on some
  // filesystems); fall back to pread + write where it is not supported.
  while (seekable_ && len > 0) {
    loff_t in_off = static_cast<loff_t>(in_offset);
    ssize_t n = RetryOnEintr([&] { return ::copy_file_range(in_fd, &in_off, fd_, nullptr, len, 0); });
    if (n <= 0) break;  // EXDEV, EINVAL, ENOSYS... or a short source: use the slow path
    in_offset += static_cast<uint64_t>(n);
    len -= static_cast<uint64_t>(n);
    FP_RETURN_IF_ERROR(Advance(static_cast<uint64_t>(n)));
  }
  return len == 0 ? Status::Ok() : Output::CopyFrom(in_fd, in_offset, len, in_name);
}

Status CallbackOutput::Write(std::span<const uint8_t> a, std::span<const uint8_t> b) {
  if (!a.empty()) FP_RETURN_IF_ERROR(fn_(a));
  if (!b.empty()) FP_RETURN_IF_ERROR(fn_(b));
  return Status::Ok();
}

ChunkWriter::ChunkWriter(Output* out, uint32_t blk_sz)
    : out_(out), blk_sz_(blk_sz), buf_(new uint8_t[kStageSize]) {}

ChunkWriter::~ChunkWriter() = default;

Status ChunkWriter::Stage(std::span<const uint8_t> data) {
  if (staged_ + data.size() > kStageSize) FP_RETURN_IF_ERROR(Flush());
  std::memcpy(buf_.get() + staged_, data.data(), data.size());
  staged_ += data.size();
  return Status::Ok();
}

Status ChunkWriter::Flush() {
  if (staged_ == 0) return Status::Ok();
  FP_RETURN_IF_ERROR(out_->Write({buf_.get(), staged_}));
  flushed_ += staged_;
  staged_ = 0;
  return Status::Ok();
}

Status ChunkWriter::FileHeader(uint32_t total_blks, uint32_t total_chunks) {
  sparse::FileHeader h;
  h.blk_sz = blk_sz_;
  h.total_blks = total_blks;
  h.total_chunks = total_chunks;
  uint8_t b[kFileHeaderSize];
  SerializeFileHeader(h, b);
  return Stage(b);
}

Status ChunkWriter::ChunkHeader(uint16_t type, uint32_t blocks, uint32_t payload) {
  uint8_t b[kChunkHeaderSize];
  SerializeChunkHeader({type, 0, blocks, kChunkHeaderSize + payload}, b);
  ++chunks_;
  return Stage(b);
}

Status ChunkWriter::Fill(uint32_t blocks, uint32_t pattern) {
  FP_RETURN_IF_ERROR(ChunkHeader(kChunkFill, blocks, 4));
  uint8_t p[4];
  StoreLE<uint32_t>(p, pattern);
  return Stage(p);
}

Status ChunkWriter::DontCare(uint32_t blocks) { return ChunkHeader(kChunkDontCare, blocks, 0); }

Status ChunkWriter::Crc32(uint32_t value) {
  FP_RETURN_IF_ERROR(ChunkHeader(kChunkCrc32, 0, 4));
  uint8_t p[4];
  StoreLE<uint32_t>(p, value);
  return Stage(p);
}

Status ChunkWriter::RawHeader(uint32_t blocks) {
  uint64_t payload = uint64_t{blocks} * blk_sz_;
  if (payload > UINT32_MAX - kChunkHeaderSize)
    return Internal(fmt::format("RAW chunk of {} blocks does not fit total_sz", blocks));
  return ChunkHeader(kChunkRaw, blocks, static_cast<uint32_t>(payload));
}

Status ChunkWriter::RawData(std::span<const uint8_t> data) {
  if (data.size() < kDirectThreshold) return Stage(data);
  FP_RETURN_IF_ERROR(out_->Write({buf_.get(), staged_}, data));
  flushed_ += staged_ + data.size();
  staged_ = 0;
  return Status::Ok();
}

Status ChunkWriter::RawFrom(int fd, uint64_t offset, uint64_t len, std::string_view name) {
  FP_RETURN_IF_ERROR(Flush());
  FP_RETURN_IF_ERROR(out_->CopyFrom(fd, offset, len, name));
  flushed_ += len;
  return Status::Ok();
}

Status ChunkWriter::Patch(uint64_t offset, std::span<const uint8_t> data) {
  if (offset >= flushed_) {
    std::memcpy(buf_.get() + (offset - flushed_), data.data(), data.size());
    return Status::Ok();
  }
  if (!out_->seekable()) return Internal("patching a sparse header on an output that cannot seek");
  return out_->WriteAt(offset, data);
}

Status ChunkWriter::PatchRawHeader(uint64_t header_offset, uint32_t blocks) {
  uint8_t b[kChunkHeaderSize];
  SerializeChunkHeader({kChunkRaw, 0, blocks, static_cast<uint32_t>(kChunkHeaderSize + uint64_t{blocks} * blk_sz_)},
                       b);
  return Patch(header_offset, b);
}

Status ChunkWriter::PatchFileHeader(uint32_t total_blks, uint32_t total_chunks) {
  uint8_t b[8];
  StoreLE<uint32_t>(b, total_blks);
  StoreLE<uint32_t>(b + 4, total_chunks);
  return Patch(16, b);
}

}  // namespace flashpipe::sparse
