// ZeroScan: the reader's pieces (io/image_reader.h) to runs (run_sink.h).
//
// Every 4 KiB block, counted from the image start, is all zero or not, as
// base/zero.h's IsAllZero says: a data block is rejected on its first bytes,
// so the scan costs little beyond the read. Pieces may start and end anywhere
// (hole edges follow the logical block), so a block split between pieces is
// put together in a one-block carry first; a block that is partly a hole and
// partly read counts as read (it is allocated). Adjacent zero runs of one
// kind are merged before they are sent.
//
// Pump drives a reader through a ZeroScan into a sink: the whole read path.
#pragma once

#include <cstdint>
#include <functional>

#include "base/cancel.h"
#include "io/image_reader.h"
#include "output/run_sink.h"

namespace flashpipe::output {

// How the image's bytes were classified; the three add up to its length (a
// block that is partly a hole counts as read).
struct ScanStats {
  uint64_t data_bytes = 0;
  uint64_t zero_bytes = 0;  // read, all zero
  uint64_t hole_bytes = 0;  // not stored by the source file
};

class ZeroScan {
 public:
  // `sink` must outlive the scan; `length` is the image length.
  ZeroScan(RunSink* sink, uint64_t length);
  // The piece's image offset is piece.offset - base. REQUIRES: pieces in
  // order, each starting where the previous one ended.
  Status Piece(const io::ReadPiece& piece, uint64_t base);
  // REQUIRES: all `length` bytes were given. Calls the sink's Finish.
  Status Finish();
  const ScanStats& stats() const { return stats_; }

 private:
  Status Data(uint64_t offset, std::span<const uint8_t> data);
  Status Hole(uint64_t offset, uint64_t length);
  Status Blocks(uint64_t offset, std::span<const uint8_t> data);
  Status Zeros(uint64_t offset, uint64_t length, ZeroKind kind);
  Status SendZeros();
  // Adds bytes (nullptr: zeros of a hole) to the carried block; sends it once whole.
  Status Carry(uint64_t offset, const uint8_t* bytes, uint64_t n);
  uint64_t BlockEnd(uint64_t block_start) const;

  RunSink* sink_;
  uint64_t length_;
  uint64_t pos_ = 0;
  uint8_t carry_[kRunBlock];
  uint64_t carry_len_ = 0;
  bool carry_read_ = false;
  uint64_t zeros_offset_ = 0, zeros_length_ = 0;  // pending zero run
  ZeroKind zeros_kind_ = ZeroKind::kRead;
  ScanStats stats_;
};

// Reads everything `reader` has (its pieces start at `base`) through a
// ZeroScan into `sink`, then finishes the sink. `progress` (optional) gets
// the bytes done after each piece; `cancel` (optional) stops it before the
// next piece with kCancelled.
Result<ScanStats> Pump(io::ImageReader& reader, uint64_t base, uint64_t length, RunSink& sink,
                       const std::function<void(uint64_t)>& progress, const CancelFlag* cancel = nullptr);

}  // namespace flashpipe::output
