// Codec: one streaming decompressor (gzip, xz, zstd, bzip2, lz4 frame),
// behind one small interface so that the decompression thread
// (decompress_reader.h) and the tests drive all five the same way.
//
// Every format may hold several concatenated members/streams/frames (pigz,
// `cat a.gz b.gz`, pzstd, multi-stream bzip2); all are decoded in order. The
// stream is complete only at a member boundary: input that ends anywhere else
// is reported as truncated by the caller.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>

#include "base/status.h"
#include "input/detect.h"

namespace flashpipe::input {

struct CodecStep {
  size_t consumed = 0;
  size_t produced = 0;
};

class Codec {
 public:
  virtual ~Codec() = default;
  // Decompresses from `in` into `out`. Progress may be zero only when `in` is
  // empty or `out` is full, or when the codec needs more input than `in`.
  // Corrupt data is a kCorrupt error with the library's words only ("incorrect
  // data check"): the caller adds the stream's name and the offsets.
  virtual Result<CodecStep> Step(std::span<const uint8_t> in, std::span<uint8_t> out) = 0;
  // True when everything consumed so far forms complete members and all their
  // output was returned.
  virtual bool AtBoundary() const = 0;
  // Called once when the input has ended, with room in `out`; returns bytes
  // produced (xz needs this to finish its last stream). Default: nothing.
  virtual Result<size_t> Finish(std::span<uint8_t> /*out*/) { return size_t{0}; }
};

// REQUIRES: IsCompressed(kind).
Result<std::unique_ptr<Codec>> MakeCodec(ImageKind kind);

}  // namespace flashpipe::input
