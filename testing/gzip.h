// Gzip(bytes): a gzip member of `bytes` (zlib, level 1), for tests that feed
// compressed images to the input layer.
#pragma once

#include <zlib.h>

#include <cstdint>
#include <span>
#include <vector>

namespace flashpipe::testing {

inline std::vector<uint8_t> Gzip(std::span<const uint8_t> in) {
  std::vector<uint8_t> out(compressBound(in.size()) + 64);
  z_stream z{};
  deflateInit2(&z, 1, Z_DEFLATED, 31, 8, Z_DEFAULT_STRATEGY);
  z.next_in = const_cast<Bytef*>(in.data());
  z.avail_in = static_cast<uInt>(in.size());
  z.next_out = out.data();
  z.avail_out = static_cast<uInt>(out.size());
  deflate(&z, Z_FINISH);
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

}  // namespace flashpipe::testing
