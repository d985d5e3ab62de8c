#include "input/compare_sink.h"

#include <unistd.h>

#include <cstring>

#include "base/endian.h"
#include "base/fd_io.h"
#include "base/zero.h"

namespace flashpipe::input {
namespace {

constexpr size_t kBuffer = 4 << 20;

}  // namespace

CompareSink::CompareSink(const io::Target* target)
    : target_(target), buf_(kBuffer + 2 * 65536, std::max<uint32_t>(target->geometry().mem_align, 4096)) {}

template <typename Check>
Status CompareSink::ReadBack(uint64_t offset, uint64_t length, Check check) {
  const io::Geometry& g = target_->geometry();
  uint64_t align = g.direct ? std::max<uint64_t>(g.offset_align, 512) : 1;
  while (length > 0) {
    uint64_t n = std::min<uint64_t>(length, kBuffer);
    uint64_t abs = target_->window_offset() + offset;
    uint64_t start = abs / align * align;
    uint64_t end = (abs + n + align - 1) / align * align;
    FP_ASSIGN_OR_RETURN(uint64_t got, PreadUpTo(target_->fd(), {buf_.data(), end - start}, start, target_->path()));
    if (start + got < abs + n) {
      return Mismatch(fmt::format("{}: ends at byte {:#x}, inside the image (which goes on to byte {:#x} or beyond)",
                                 target_->path(), start + got, abs + n));
    }
    FP_RETURN_IF_ERROR(check(std::span<const uint8_t>(buf_.data() + (abs - start), n), offset));
    compared_ += n;
    offset += n;
    length -= n;
  }
  return Status::Ok();
}

static Status Differs(const io::Target* t, uint64_t at, uint8_t want, uint8_t got) {
  return flashpipe::Mismatch(fmt::format("{}: differs from the image at byte {:#x} (image {:#04x}, target {:#04x})", t->path(),
                             at, want, got));
}

Status CompareSink::OnRaw(uint64_t offset, std::span<const uint8_t> data) {
  return ReadBack(offset, data.size(), [&](std::span<const uint8_t> got, uint64_t at) {
    const uint8_t* want = data.data() + (at - offset);
    if (std::memcmp(got.data(), want, got.size()) == 0) return Status::Ok();
    size_t i = 0;
    while (got[i] == want[i]) ++i;
    return Differs(target_, at + i, want[i], got[i]);
  });
}

Status CompareSink::OnFill(uint64_t offset, uint64_t length, uint32_t pattern) {
  uint8_t p[4];
  StoreLE<uint32_t>(p, pattern);
  return ReadBack(offset, length, [&](std::span<const uint8_t> got, uint64_t at) {
    if (pattern == 0 && IsAllZero(got)) {
      return Status::Ok();
    }
    for (size_t i = 0; i < got.size(); ++i) {
      uint8_t want = p[(at + i - offset) % 4];
      if (got[i] != want) return Differs(target_, at + i, want, got[i]);
    }
    return Status::Ok();
  });
}

}  // namespace flashpipe::input
