// Little- and big-endian loads and stores through memcpy, never by casting
// pointers: on-disk and on-wire fields may sit at any alignment.
#pragma once

#include <bit>
#include <cstdint>
#include <cstring>

namespace flashpipe {

template <typename T>
inline T LoadLE(const void* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  static_assert(std::endian::native == std::endian::little, "big-endian hosts unsupported");
  return v;
}

template <typename T>
inline void StoreLE(void* p, T v) {
  static_assert(std::endian::native == std::endian::little, "big-endian hosts unsupported");
  std::memcpy(p, &v, sizeof v);
}

inline uint64_t LoadBE64(const void* p) {
  const auto* b = static_cast<const uint8_t*>(p);
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v = (v << 8) | b[i];
  return v;
}

inline void StoreBE64(void* p, uint64_t v) {
  auto* b = static_cast<uint8_t*>(p);
  for (int i = 7; i >= 0; --i, v >>= 8) b[i] = static_cast<uint8_t>(v);
}

inline uint16_t LoadBE16(const void* p) {
  const auto* b = static_cast<const uint8_t*>(p);
  return static_cast<uint16_t>((b[0] << 8) | b[1]);
}

inline void StoreBE16(void* p, uint16_t v) {
  auto* b = static_cast<uint8_t*>(p);
  b[0] = static_cast<uint8_t>(v >> 8);
  b[1] = static_cast<uint8_t>(v);
}

}  // namespace flashpipe
