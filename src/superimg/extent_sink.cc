#include "superimg/extent_sink.h"

#include <fcntl.h>

#include <algorithm>

#include "base/crc32.h"
#include "base/fd_io.h"

namespace flashpipe::superimg {
namespace {
constexpr size_t kBuffer = size_t{1} << 20;
// Reads ahead of the one in progress are asked of the kernel in steps of
// this much, so the disk keeps reading while a piece is classified and
// written out (a single pread at a time would leave it idle in between).
constexpr uint64_t kReadAhead = uint64_t{16} << 20;
}  // namespace

std::vector<Piece> PiecesOf(const lp::Metadata& m, const lp::PartitionEntry& p) {
  std::vector<Piece> out;
  uint64_t at = 0;
  for (const auto& e : lp::ExtentsOf(m, p)) {
    out.push_back({at, e.target_data * lp::kSectorSize, e.num_sectors * lp::kSectorSize});
    at += e.num_sectors * lp::kSectorSize;
  }
  return out;
}

ExtentSink::ExtentSink(std::string what, std::vector<Piece> pieces, sparse::Sink* out)
    : what_(std::move(what)), pieces_(std::move(pieces)), out_(out) {
  for (const auto& p : pieces_) capacity_ += p.length;
}

ExtentSink::~ExtentSink() = default;

template <typename F>
Status ExtentSink::Map(uint64_t offset, uint64_t length, F f) {
  if (offset > capacity_ || length > capacity_ - offset) {
    return NoSpace(fmt::format("{}: {} bytes at image byte 0x{:x} run past the partition's {} bytes", what_, length,
                               offset, capacity_));
  }
  if (length == 0) return Status::Ok();
  auto it = std::upper_bound(pieces_.begin(), pieces_.end(), offset,
                             [](uint64_t o, const Piece& p) { return o < p.image_offset; });
  uint64_t done = 0;
  for (--it; done < length; ++it) {
    const uint64_t at = offset + done - it->image_offset;
    const uint64_t n = std::min(length - done, it->length - at);
    FP_RETURN_IF_ERROR(f(it->device_offset + at, done, n));
    done += n;
  }
  return Status::Ok();
}

Status ExtentSink::OnHeader(const sparse::FileHeader& h) {
  if (h.image_size() <= capacity_) return Status::Ok();
  return NoSpace(fmt::format("{}: the image expands to {} bytes, the partition holds {}", what_, h.image_size(),
                             capacity_));
}

Status ExtentSink::OnRaw(uint64_t offset, std::span<const uint8_t> data) {
  return Map(offset, data.size(), [&](uint64_t dev, uint64_t from, uint64_t n) {
    return out_->OnRaw(dev, data.subspan(from, n));
  });
}

Status ExtentSink::OnFill(uint64_t offset, uint64_t length, uint32_t pattern) {
  // Extents are whole sectors, so a fill that starts and ends on 4-byte
  // boundaries is cut on them, and each piece starts with the pattern.
  if (offset % 4 != 0 || length % 4 != 0) {
    return InvalidArgument(fmt::format("{}: a FILL of {} bytes at image byte 0x{:x} is not 4-byte aligned", what_,
                                       length, offset));
  }
  return Map(offset, length, [&](uint64_t dev, uint64_t, uint64_t n) { return out_->OnFill(dev, n, pattern); });
}

Status ExtentSink::OnSkip(uint64_t offset, uint64_t length) {
  return Map(offset, length, [&](uint64_t dev, uint64_t, uint64_t n) { return out_->OnSkip(dev, n); });
}

Result<uint32_t> ExtentSink::RawFromFd(uint64_t out_offset, int fd, uint64_t in_offset, uint64_t n) {
  if (!buf_) buf_.reset(new uint8_t[kBuffer]);
  uint32_t crc = 0;
  for (uint64_t done = 0; done < n;) {
    const size_t want = static_cast<size_t>(std::min<uint64_t>(kBuffer, n - done));
    ReadAhead(fd, in_offset + done, in_offset + n);
    FP_RETURN_IF_ERROR(PreadExact(fd, {buf_.get(), want}, in_offset + done, what_));
    crc = Crc32Update(crc, buf_.get(), want);
    FP_RETURN_IF_ERROR(OnRaw(out_offset + done, {buf_.get(), want}));
    done += want;
  }
  return crc;
}

void ExtentSink::ReadAhead(int fd, uint64_t pos, uint64_t end) {
  if (fd != ahead_fd_ || pos < ahead_from_ || pos > ahead_to_) {
    ahead_fd_ = fd;
    ahead_from_ = ahead_to_ = pos;
  }
  if (ahead_to_ - pos >= kReadAhead / 2 || ahead_to_ >= end) return;
  const uint64_t to = std::min(end, ahead_to_ + kReadAhead);
  // Advice only: a failure costs speed, never correctness.
  (void)::posix_fadvise(fd, static_cast<off_t>(ahead_to_), static_cast<off_t>(to - ahead_to_), POSIX_FADV_WILLNEED);
  ahead_from_ = pos;
  ahead_to_ = to;
}

}  // namespace flashpipe::superimg
