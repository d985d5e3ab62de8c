// EncodingSink: a Sink that writes the image it is given as one sparse image.
//
// Whoever produces events (a decoder, a raw file source, several images laid
// side by side into one super image) delivers them in increasing offset
// order; a gap between two events, and whatever is left at Finish(), becomes
// DONT_CARE. The blocks are classified by a BlockClassifier
// (block_classifier.h: data blocks RAW, uniform blocks FILL, zeros
// included, skipped blocks DONT_CARE, partial blocks put together);
// adjacent blocks of one kind merge into one chunk (RAW chunks up to
// 64 MiB). An event that goes backwards or past the image is an error.
//
// RAW chunk headers and the file header's chunk count are patched once known,
// so the Output must be seekable (a file). Memory: the ChunkWriter's 1 MiB
// staging buffer and one block, whatever the image size.
#pragma once

#include <cstdint>
#include <memory>
#include <span>

#include "base/status.h"
#include "sparse/block_classifier.h"
#include "sparse/sink.h"
#include "sparse/writer.h"

namespace flashpipe::sparse {

class EncodingSink : public Sink {
 public:
  // `image_size`: the expanded size, a non-zero multiple of blk_sz of at
  // most 2^32-1 blocks. Writes the file header at once.
  static Result<std::unique_ptr<EncodingSink>> Create(Output* out, uint32_t blk_sz, uint64_t image_size);
  ~EncodingSink() override;

  Status OnRaw(uint64_t offset, std::span<const uint8_t> data) override { return blocks_.OnRaw(offset, data); }
  Status OnFill(uint64_t offset, uint64_t length, uint32_t pattern) override {
    return blocks_.OnFill(offset, length, pattern);
  }
  Status OnSkip(uint64_t offset, uint64_t length) override { return blocks_.OnSkip(offset, length); }
  // Pads to the image size with DONT_CARE, closes the last chunk, patches
  // the file header, flushes.
  Status Finish();

  uint64_t position() const { return blocks_.position(); }  // next offset expected
  uint32_t chunks() const;

 private:
  class Runs;
  EncodingSink(Output* out, uint32_t blk_sz, uint64_t image_size);

  uint32_t blk_;
  uint64_t size_;
  std::unique_ptr<ChunkWriter> writer_;
  std::unique_ptr<Runs> runs_;
  BlockClassifier blocks_;
};

}  // namespace flashpipe::sparse
