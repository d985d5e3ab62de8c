// Image kind detection by magic bytes, never by file name: a sparse image, one
// of five compressed stream formats, or else raw bytes.
//
//   ImageKind k = DetectKind(first_bytes);   // 6 bytes are enough
//
// A compressed stream's content (sparse or raw) is detected again after
// decompression by the caller.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

namespace flashpipe::input {

enum class ImageKind : uint8_t { kRaw, kSparse, kGzip, kXz, kZstd, kBzip2, kLz4 };

// Bytes DetectKind needs to be sure; fewer (a tiny file) means kRaw unless a
// shorter magic matches.
inline constexpr size_t kDetectBytes = 6;

ImageKind DetectKind(std::span<const uint8_t> head);
std::string_view KindName(ImageKind kind);  // "raw", "sparse", "gzip", ...
bool IsCompressed(ImageKind kind);

}  // namespace flashpipe::input
