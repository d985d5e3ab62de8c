#include "host/part_plan.h"

#include <algorithm>

#include "base/units.h"

namespace flashpipe::host {
namespace {

using sparse::kChunkHeaderSize;
using sparse::kFileHeaderSize;

constexpr uint64_t kFillChunk = kChunkHeaderSize + 4;

// Grows one part piece by piece, keeping its size and chunk count.
class PartBuilder {
 public:
  PartBuilder(const ImageShape& shape, const PartLimits& limits, Position from)
      : shape_(shape), limits_(limits) {
    part_.begin = part_.end = from;
    part_.bytes = kFileHeaderSize;
  }

  // How many of `r`'s blocks from `skip` on fit (all, some of a RAW, none).
  uint64_t Fits(const Record& r, uint32_t skip) const {
    uint64_t block = r.block + skip;
    uint64_t fixed = Gap(block) + kChunkHeaderSize /* tail */;
    uint32_t chunks = part_.chunks + (Gap(block) ? 1 : 0) + 1 + 1;
    if (chunks > limits_.max_chunks) return 0;
    uint64_t left = r.blocks - skip;
    uint64_t room = limits_.max_bytes > part_.bytes + fixed ? limits_.max_bytes - part_.bytes - fixed : 0;
    if (r.type == sparse::kChunkFill) return room >= kFillChunk ? left : 0;
    if (room < kChunkHeaderSize) return 0;
    return std::min<uint64_t>(left, (room - kChunkHeaderSize) / shape_.blk_sz);
  }

  void Add(const Record& r, uint32_t skip, uint64_t blocks) {
    uint64_t block = r.block + skip;
    if (pieces_ == 0) part_.first_block = block;
    if (uint64_t gap = Gap(block)) {
      part_.bytes += gap;
      ++part_.chunks;
    }
    ++part_.chunks;
    if (r.type == sparse::kChunkFill) {
      part_.bytes += kFillChunk;
    } else {
      part_.bytes += kChunkHeaderSize + blocks * shape_.blk_sz;
      part_.payload_bytes += blocks * shape_.blk_sz;
    }
    cursor_ = block + blocks;
    part_.end_block = cursor_;
    pieces_++;
  }

  Part Close(Position end) {
    part_.end = end;
    if (pieces_ == 0) part_.first_block = part_.end_block = 0;
    uint64_t total = shape_.blocks > 0 ? shape_.blocks : cursor_;
    if (total > cursor_) {
      part_.bytes += kChunkHeaderSize;
      ++part_.chunks;
    }
    part_.total_blks = static_cast<uint32_t>(total);
    return part_;
  }

  size_t pieces() const { return pieces_; }
  const Part& part() const { return part_; }

 private:
  uint64_t Gap(uint64_t block) const { return block > cursor_ ? kChunkHeaderSize : 0; }

  const ImageShape& shape_;
  const PartLimits& limits_;
  Part part_;
  uint64_t cursor_ = 0;  // next block the part's chunks do not cover yet
  size_t pieces_ = 0;
};

Result<std::optional<Part>> PlanRawPart(RecordSource& records, const ImageShape& shape) {
  Part p;
  p.raw = true;
  p.bytes = shape.bytes;
  p.total_blks = static_cast<uint32_t>(shape.blocks);
  for (uint64_t i = 0;; ++i) {
    FP_ASSIGN_OR_RETURN(auto r, records.At(i));
    if (!r) {
      p.end = {i, 0};
      return std::optional<Part>(p);
    }
    if (r->type == sparse::kChunkRaw) p.payload_bytes += uint64_t{r->blocks} * shape.blk_sz;
    p.end_block = r->end();
  }
}

}  // namespace

Result<std::optional<Part>> PlanPart(RecordSource& records, const ImageShape& shape, Position from, bool first,
                                     const PartLimits& limits) {
  if (shape.blocks > UINT32_MAX) {
    return InvalidArgument(fmt::format("an image of {} blocks of {} bytes does not fit a sparse header", shape.blocks,
                                       shape.blk_sz));
  }
  const bool whole_raw = shape.odd_raw() || (limits.raw_when_fits && !shape.sparse_input && !shape.bmap && shape.bytes > 0);
  if (first && whole_raw && shape.bytes <= limits.max_bytes) return PlanRawPart(records, shape);
  PartBuilder b(shape, limits, from);
  Position at = from;
  for (;;) {
    FP_ASSIGN_OR_RETURN(auto r, records.At(at.record));
    if (!r) break;
    uint64_t n = b.Fits(*r, at.blocks);
    if (n == 0) {
      if (b.pieces() == 0) {
        return InvalidArgument(fmt::format("{} {} ({}) cannot hold one {}-byte block with its headers",
                                           limits.max_bytes_from, limits.max_bytes, FormatBytes(limits.max_bytes),
                                           shape.blk_sz));
      }
      break;
    }
    b.Add(*r, at.blocks, n);
    if (at.blocks + n < r->blocks) {
      at.blocks += static_cast<uint32_t>(n);
      break;  // the record goes on in the next part
    }
    at = {at.record + 1, 0};
  }
  if (b.pieces() == 0 && !first) return std::optional<Part>();
  return std::optional<Part>(b.Close(at));
}

}  // namespace flashpipe::host
