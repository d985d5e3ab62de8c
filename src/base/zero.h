// IsAllZero: whether every byte of `bytes` is zero (true when empty). Stops
// at the first non-zero byte, so a data block costs a few bytes to reject.
#pragma once

#include <cstdint>
#include <cstring>
#include <span>

namespace flashpipe {

inline bool IsAllZero(std::span<const uint8_t> bytes) {
  return bytes.empty() || (bytes[0] == 0 && std::memcmp(bytes.data(), bytes.data() + 1, bytes.size() - 1) == 0);
}

}  // namespace flashpipe
