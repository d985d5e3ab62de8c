#include "input/detect.h"

#include <algorithm>
#include <array>


namespace flashpipe::input {
namespace {

struct Magic {
  ImageKind kind;
  std::array<uint8_t, 6> bytes;
  size_t size;
};

// The sparse magic 0xED26FF3A is stored little-endian.
constexpr Magic kMagics[] = {
    {ImageKind::kSparse, {0x3A, 0xFF, 0x26, 0xED}, 4},
    {ImageKind::kXz, {0xFD, '7', 'z', 'X', 'Z', 0x00}, 6},
    {ImageKind::kZstd, {0x28, 0xB5, 0x2F, 0xFD}, 4},
    {ImageKind::kLz4, {0x04, 0x22, 0x4D, 0x18}, 4},
};

// RFC 1952: the magic, CM 8 (deflate, the only method there is) and FLG
// with its reserved bits clear. Two bytes alone are 1 raw image in 65536
// (random data: a raw image that starts 1F 8B was taken for gzip).
bool IsGzip(std::span<const uint8_t> head) {
  return head.size() >= 4 && head[0] == 0x1F && head[1] == 0x8B && head[2] == 8 && (head[3] & 0xE0) == 0;
}

bool IsBzip2(std::span<const uint8_t> head) {
  return head.size() >= 4 && head[0] == 'B' && head[1] == 'Z' && head[2] == 'h' &&
         head[3] >= '1' && head[3] <= '9';
}

}  // namespace

ImageKind DetectKind(std::span<const uint8_t> head) {
  for (const Magic& m : kMagics) {
    if (head.size() >= m.size && std::equal(m.bytes.begin(), m.bytes.begin() + m.size, head.begin())) {
      return m.kind;
    }
  }
  if (IsGzip(head)) return ImageKind::kGzip;
  return IsBzip2(head) ? ImageKind::kBzip2 : ImageKind::kRaw;
}

std::string_view KindName(ImageKind kind) {
  static constexpr std::string_view kNames[] = {"raw", "sparse", "gzip", "xz", "zstd", "bzip2", "lz4"};
  return kNames[static_cast<size_t>(kind)];
}

bool IsCompressed(ImageKind kind) {
  return kind != ImageKind::kRaw && kind != ImageKind::kSparse;
}

}  // namespace flashpipe::input
