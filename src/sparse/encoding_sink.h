// EncodingSink: a Sink that writes the image it is given as one sparse image.
//
// Whoever produces events (a decoder, a raw file source, several images laid
// side by side into one super image) delivers them in increasing offset
// order; a gap between two events, and whatever is left at Finish(), becomes
// DONT_CARE. RAW bytes are classified block by block as the encoder does (a
// block whose 32-bit words are all equal is FILL, zeros included, anything
// else RAW), FILL stays FILL, SKIP becomes DONT_CARE; adjacent blocks of one
// kind merge into one chunk (RAW chunks up to 64 MiB). Events need not start
// or end on block boundaries: a block that several events share is put
// together in a one-block buffer (a skipped part of it reads as zeros) and
// classified whole. An event that goes backwards or past the image is an
// error, never silently reordered.
//
// RAW chunk headers and the file header's chunk count are patched once known,
// so the Output must be seekable (a file). Memory: the ChunkWriter's 1 MiB
// staging buffer and one block, whatever the image size.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "base/status.h"
#include "sparse/sink.h"
#include "sparse/writer.h"

namespace flashpipe::sparse {

class EncodingSink : public Sink {
 public:
  // `image_size`: the expanded size, a non-zero multiple of blk_sz of at
  // most 2^32-1 blocks. Writes the file header at once.
  static Result<std::unique_ptr<EncodingSink>> Create(Output* out, uint32_t blk_sz, uint64_t image_size);
  ~EncodingSink() override;

  Status OnRaw(uint64_t offset, std::span<const uint8_t> data) override;
  Status OnFill(uint64_t offset, uint64_t length, uint32_t pattern) override;
  Status OnSkip(uint64_t offset, uint64_t length) override;
  // Pads to the image size with DONT_CARE, closes the last chunk, patches
  // the file header, flushes.
  Status Finish();

  uint64_t position() const { return pos_; }  // next offset expected
  uint32_t chunks() const;

 private:
  class Runs;
  EncodingSink(Output* out, uint32_t blk_sz, uint64_t image_size);
  // Order and bounds of an event; Advance also skips the gap before it.
  Status Check(uint64_t offset, uint64_t length) const;
  Status Advance(uint64_t offset, uint64_t length);
  Status Skip(uint64_t length);  // from pos_
  // Puts `n` bytes into the shared block; `fill(dst, n)` writes them.
  template <typename F>
  Status Partial(uint64_t n, bool data, F fill);
  Status FlushPartial();
  Status RawBlocks(std::span<const uint8_t> blocks);

  uint32_t blk_;
  uint64_t size_;
  uint64_t pos_ = 0;
  std::vector<uint8_t> partial_;  // the block at pos_ rounded down, so far
  size_t partial_len_ = 0;
  bool partial_data_ = false;     // holds RAW or FILL bytes, not only skipped ones
  std::unique_ptr<ChunkWriter> writer_;
  std::unique_ptr<Runs> runs_;
};

}  // namespace flashpipe::sparse
