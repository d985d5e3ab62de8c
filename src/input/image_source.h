// ImageSource: one image to write, whatever its form, delivered to an
// ImageSink as RAW/FILL/SKIP events with image offsets. OpenImage picks the
// form by magic bytes (detect.h), never by file name:
//
//   spec            content                 source
//   file, seekable  sparse                  SparseFileSource: headers fed to the
//                                           decoder, RAW payload zero-copy
//                                           (ImageSink::RawFromFd)
//   file, seekable  raw                     RawFileSource: data extents zero-copy,
//                                           holes (SEEK_HOLE) as zero FILL
//   "-", fifo       sparse or raw           StreamSource over a ByteReader
//   any             gzip/xz/zstd/bzip2/lz4  StreamSource over a DecompressReader
//                                           (its own thread); content detected
//                                           again after decompression
//   "a,b,..."       sparse parts            PartsSource: each part in order,
//                                           later parts overlaying earlier ones
//   with --bmap     raw (any of the above)  BmapSource: mapped ranges only,
//                                           each checksummed
// A raw stream's all-zero runs (>= 64 KiB, 4 KiB aligned) become zero FILL,
// which the writer turns into zeroout or holes (they read back as zeros).
// Run() is called once. Not thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "base/status.h"
#include "input/image_sink.h"
#include "sparse/decoder.h"

namespace flashpipe::input {

class ImageSource {
 public:
  virtual ~ImageSource() = default;
  // "sparse", "raw", "gzip+sparse", "parts(2)+sparse", "raw+bmap", ...
  virtual std::string kind() const = 0;
  // Size of the expanded image when known before Run (sparse header, file
  // size, bmap ImageSize).
  virtual std::optional<uint64_t> known_size() const = 0;
  virtual Status Run(ImageSink* sink) = 0;
  // After Run: the size of the image that was delivered.
  virtual uint64_t image_size() const = 0;
};

struct SourceOptions {
  sparse::DecoderOptions decoder;
  std::string bmap_path;          // raw image + bmap
  bool detect_zeros = true;       // raw streams: zero runs -> zero FILL
  size_t read_size = 1 << 20;     // stream read granularity
};

// `spec`: a path, "-" for stdin, or comma-separated sparse parts.
Result<std::unique_ptr<ImageSource>> OpenImage(const std::string& spec, const SourceOptions& options);

// Emits `data` (image bytes at `offset`) as OnRaw, with 4 KiB-aligned zero
// runs of at least `min_zero_run` bytes as OnFill(.., 0).
Status EmitRawDetectingZeros(ImageSink* sink, uint64_t offset, std::span<const uint8_t> data,
                             uint64_t min_zero_run = 64 << 10);

}  // namespace flashpipe::input
