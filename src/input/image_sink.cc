#include "input/image_sink.h"

#include <unistd.h>

#include <vector>

#include "base/crc32.h"
#include "base/fd_io.h"
#include "base/units.h"

namespace flashpipe::input {

Result<uint32_t> ImageSink::RawFromFd(uint64_t out_offset, int fd, uint64_t in_offset, uint64_t n) {
  std::vector<uint8_t> buf(std::min<uint64_t>(n, 1 << 20));
  uint32_t crc = 0;
  uint64_t done = 0;
  while (done < n) {
    size_t want = static_cast<size_t>(std::min<uint64_t>(buf.size(), n - done));
    FP_ASSIGN_OR_RETURN(size_t r, PreadUpTo(fd, std::span(buf).first(want), in_offset + done, "the image"));
    if (r == 0) return Corrupt(fmt::format("input ends at byte {}, {} bytes short", in_offset + done, n - done));
    std::span<const uint8_t> got(buf.data(), r);
    crc = Crc32Update(crc, got.data(), got.size());
    FP_RETURN_IF_ERROR(OnRaw(out_offset + done, got));
    done += got.size();
  }
  return crc;
}

Status CheckFits(uint64_t image_size, uint64_t capacity, std::string_view what, bool lower_bound) {
  if (capacity == 0 || image_size <= capacity) return Status::Ok();
  return NoSpace(fmt::format("image of {}{} bytes ({}) does not fit {} of {} bytes ({}); nothing written",
                             lower_bound ? "at least " : "", image_size, FormatBytes(image_size), what, capacity,
                             FormatBytes(capacity)));
}

Status WriterSink::OnHeader(const sparse::FileHeader& header) {
  FP_RETURN_IF_ERROR(CheckFits(header.image_size(), capacity_, "the smallest target"));
  return writer_->OnHeader(header);
}

}  // namespace flashpipe::input
