// Compressors for tests that feed compressed images to the input layer: one
// gzip member (zlib), one xz stream (liblzma), one zstd frame (libzstd, with
// or without the content size in its header), one bzip2 stream, one lz4
// frame (with or without the content size). Header-only; an empty vector
// means the library refused.
#pragma once

#include <bzlib.h>
#include <lz4frame.h>
#include <lzma.h>
#include <zlib.h>
#include <zstd.h>

#include <cstdint>
#include <span>
#include <vector>

namespace flashpipe::testing {

inline std::vector<uint8_t> Gzip(std::span<const uint8_t> in, int level = 1) {
  z_stream z{};
  if (deflateInit2(&z, level, Z_DEFLATED, 31, 8, Z_DEFAULT_STRATEGY) != Z_OK) return {};
  std::vector<uint8_t> out(deflateBound(&z, in.size()) + 64);
  z.next_in = const_cast<Bytef*>(in.data());
  z.avail_in = static_cast<uInt>(in.size());
  z.next_out = out.data();
  z.avail_out = static_cast<uInt>(out.size());
  int r = deflate(&z, Z_FINISH);
  out.resize(r == Z_STREAM_END ? z.total_out : 0);
  deflateEnd(&z);
  return out;
}

inline std::vector<uint8_t> Xz(std::span<const uint8_t> in) {
  std::vector<uint8_t> out(lzma_stream_buffer_bound(in.size()));
  size_t pos = 0;
  if (lzma_easy_buffer_encode(1, LZMA_CHECK_CRC64, nullptr, in.data(), in.size(), out.data(), &pos, out.size()) !=
      LZMA_OK) {
    return {};
  }
  out.resize(pos);
  return out;
}

// `record_size`: the frame header says how many bytes it expands to (as
// `zstd FILE` writes it); false: unknown, as when zstd compresses a pipe.
inline std::vector<uint8_t> Zstd(std::span<const uint8_t> in, bool record_size = true) {
  std::vector<uint8_t> out(ZSTD_compressBound(in.size()));
  ZSTD_CCtx* c = ZSTD_createCCtx();
  ZSTD_CCtx_setParameter(c, ZSTD_c_checksumFlag, 1);
  ZSTD_CCtx_setParameter(c, ZSTD_c_contentSizeFlag, record_size ? 1 : 0);
  size_t n = ZSTD_compress2(c, out.data(), out.size(), in.data(), in.size());
  ZSTD_freeCCtx(c);
  if (ZSTD_isError(n)) return {};
  out.resize(n);
  return out;
}

inline std::vector<uint8_t> Bzip2(std::span<const uint8_t> in) {
  std::vector<uint8_t> out(in.size() + in.size() / 100 + 1024);
  unsigned n = static_cast<unsigned>(out.size());
  if (BZ2_bzBuffToBuffCompress(reinterpret_cast<char*>(out.data()), &n,
                               const_cast<char*>(reinterpret_cast<const char*>(in.data())),
                               static_cast<unsigned>(in.size()), 1, 0, 0) != BZ_OK) {
    return {};
  }
  out.resize(n);
  return out;
}

inline std::vector<uint8_t> Lz4(std::span<const uint8_t> in, bool record_size = false) {
  LZ4F_preferences_t prefs{};
  prefs.frameInfo.contentChecksumFlag = LZ4F_contentChecksumEnabled;
  if (record_size) prefs.frameInfo.contentSize = in.size();
  std::vector<uint8_t> out(LZ4F_compressFrameBound(in.size(), &prefs));
  size_t n = LZ4F_compressFrame(out.data(), out.size(), in.data(), in.size(), &prefs);
  if (LZ4F_isError(n)) return {};
  out.resize(n);
  return out;
}

}  // namespace flashpipe::testing
