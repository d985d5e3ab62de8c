#include "wire/tcp_frame.h"

#include <fmt/format.h>

#include "base/endian.h"

namespace flashpipe::wire::tcp {
namespace {

bool Digit(uint8_t c) { return c >= '0' && c <= '9'; }

}  // namespace

Result<int> ParseHandshake(std::span<const uint8_t, kHandshakeSize> b) {
  int version = (b[2] - '0') * 10 + (b[3] - '0');
  if (b[0] != 'F' || b[1] != 'B' || !Digit(b[2]) || !Digit(b[3]) || version < 1) {
    return Corrupt(fmt::format("bad handshake {:02x}{:02x}{:02x}{:02x}", b[0], b[1], b[2], b[3]));
  }
  return version;
}

std::array<uint8_t, kFrameHeaderSize> FrameHeader(uint64_t length) {
  std::array<uint8_t, kFrameHeaderSize> h;
  StoreBE64(h.data(), length);
  return h;
}

uint64_t ParseFrameHeader(std::span<const uint8_t, kFrameHeaderSize> bytes) { return LoadBE64(bytes.data()); }

}  // namespace flashpipe::wire::tcp
