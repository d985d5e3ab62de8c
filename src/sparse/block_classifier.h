// BlockClassifier: the image as whole blocks of three kinds, whatever the
// events it is given look like.
//
// Events (RAW/FILL/SKIP with byte offsets, as a Sink gets them) arrive in
// increasing offset order; a gap between two events is SKIP. Each block of
// blk_sz bytes is told to a BlockSink as data (its bytes), uniform (its
// 32-bit words all equal: zeros included) or undefined (skipped), in order,
// as soon as it is whole: RAW bytes block by block with the encoder's test
// (IsUniformBlock), FILL as uniform, SKIP as undefined. Events need not
// start or end on block boundaries: a block that several events share is
// put together in a one-block buffer (a skipped part of it reads as zeros)
// and classified whole; a block that holds no RAW or FILL byte is undefined.
// An event that goes backwards or past `limit` is an error, never silently
// reordered. Runs of whole blocks inside one event are passed on in one
// call (data: a span of the caller's bytes, valid during the call).
//
// Memory: one block. EncodingSink (img2simg of pieces) and the host's
// image records (host/record_sink.h) stand on it.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "base/status.h"

namespace flashpipe::sparse {

class BlockSink {
 public:
  virtual ~BlockSink() = default;
  // Whole blocks of data (a multiple of blk_sz bytes, not uniform).
  virtual Status OnDataBlocks(std::span<const uint8_t> blocks) = 0;
  virtual Status OnUniformBlocks(uint64_t blocks, uint32_t pattern) = 0;
  virtual Status OnUndefinedBlocks(uint64_t blocks) = 0;
};

class BlockClassifier {
 public:
  // REQUIRES: blk_sz a non-zero multiple of 4. `limit`: no event may end
  // past it (UINT64_MAX: no limit).
  BlockClassifier(BlockSink* out, uint32_t blk_sz, uint64_t limit);

  Status OnRaw(uint64_t offset, std::span<const uint8_t> data);
  Status OnFill(uint64_t offset, uint64_t length, uint32_t pattern);
  Status OnSkip(uint64_t offset, uint64_t length);
  // Skips from position() to `end` (>= position()), then completes a block
  // left partly filled with zeros (position() becomes `end` rounded up to a
  // block): it is data or uniform if it held any RAW or FILL byte. The end
  // of an image whose size is not a multiple of blk_sz.
  Status SkipTo(uint64_t end);

  uint64_t position() const { return pos_; }  // the next offset expected
  uint32_t blk_sz() const { return blk_; }

 private:
  Status Check(uint64_t offset, uint64_t length) const;
  Status Advance(uint64_t offset, uint64_t length);
  Status Skip(uint64_t length);  // from pos_
  // Puts `n` bytes into the shared block; `fill(dst, n)` writes them.
  template <typename F>
  Status Partial(uint64_t n, bool data, F fill);
  Status FlushPartial();
  Status RawBlocks(std::span<const uint8_t> blocks);

  BlockSink* out_;
  uint32_t blk_;
  uint64_t limit_;
  uint64_t pos_ = 0;
  std::vector<uint8_t> partial_;  // the block at pos_ rounded down, so far
  size_t partial_len_ = 0;
  bool partial_data_ = false;     // holds RAW or FILL bytes, not only skipped ones
};

}  // namespace flashpipe::sparse
