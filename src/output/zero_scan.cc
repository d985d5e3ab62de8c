#include "output/zero_scan.h"

#include <algorithm>
#include <cstring>

#include "base/aligned_buffer.h"
#include "base/zero.h"

namespace flashpipe::output {

std::span<const uint8_t> ZeroBuffer() {
  static const AlignedBuffer zeros(1 << 20);
  return {zeros.data(), zeros.size()};
}

ZeroScan::ZeroScan(RunSink* sink, uint64_t length) : sink_(sink), length_(length) {}

uint64_t ZeroScan::BlockEnd(uint64_t block_start) const { return std::min(length_, block_start + kRunBlock); }

Status ZeroScan::Piece(const io::ReadPiece& piece, uint64_t base) {
  uint64_t offset = piece.offset - base;
  if (offset != pos_ || piece.length > length_ - offset) {
    return Internal(fmt::format("zero scan: piece 0x{:x}+{} does not follow 0x{:x}", offset, piece.length, pos_));
  }
  pos_ += piece.length;
  if (piece.hole) return Hole(offset, piece.length);
  return Data(offset, piece.data.first(piece.length));
}

Status ZeroScan::Data(uint64_t offset, std::span<const uint8_t> data) {
  if (offset % kRunBlock != 0 || carry_len_ > 0) {
    uint64_t n = std::min<uint64_t>(data.size(), BlockEnd(offset / kRunBlock * kRunBlock) - offset);
    FP_RETURN_IF_ERROR(Carry(offset, data.data(), n));
    offset += n;
    data = data.subspan(n);
  }
  // Whole blocks, and the image's short last block; a partial block at the
  // piece's end waits in the carry for the next piece.
  size_t whole = offset + data.size() == length_ ? data.size() : data.size() / kRunBlock * kRunBlock;
  FP_RETURN_IF_ERROR(Blocks(offset, data.first(whole)));
  if (whole < data.size()) FP_RETURN_IF_ERROR(Carry(offset + whole, data.data() + whole, data.size() - whole));
  return Status::Ok();
}

Status ZeroScan::Hole(uint64_t offset, uint64_t length) {
  if (offset % kRunBlock != 0 || carry_len_ > 0) {
    uint64_t n = std::min(length, BlockEnd(offset / kRunBlock * kRunBlock) - offset);
    FP_RETURN_IF_ERROR(Carry(offset, nullptr, n));
    offset += n;
    length -= n;
  }
  uint64_t whole = offset + length == length_ ? length : length / kRunBlock * kRunBlock;
  if (whole > 0) FP_RETURN_IF_ERROR(Zeros(offset, whole, ZeroKind::kHole));
  if (whole < length) FP_RETURN_IF_ERROR(Carry(offset + whole, nullptr, length - whole));
  return Status::Ok();
}

Status ZeroScan::Carry(uint64_t offset, const uint8_t* bytes, uint64_t n) {
  uint64_t start = offset / kRunBlock * kRunBlock;
  if (bytes != nullptr) {
    std::memcpy(carry_ + (offset - start), bytes, n);
    carry_read_ = true;
  } else {
    std::memset(carry_ + (offset - start), 0, n);
  }
  carry_len_ = offset + n - start;
  if (start + carry_len_ < BlockEnd(start)) return Status::Ok();
  uint64_t len = std::exchange(carry_len_, 0);
  bool read = std::exchange(carry_read_, false);
  if (!read) return Zeros(start, len, ZeroKind::kHole);
  return Blocks(start, {carry_, len});
}

Status ZeroScan::Blocks(uint64_t offset, std::span<const uint8_t> data) {
  size_t run = 0;  // start of the pending data stretch in `data`
  for (size_t i = 0; i < data.size(); i += kRunBlock) {
    std::span<const uint8_t> block = data.subspan(i, std::min<size_t>(kRunBlock, data.size() - i));
    if (!IsAllZero(block)) continue;
    if (run < i) {
      FP_RETURN_IF_ERROR(SendZeros());
      FP_RETURN_IF_ERROR(sink_->OnData(offset + run, data.subspan(run, i - run)));
      stats_.data_bytes += i - run;
    }
    FP_RETURN_IF_ERROR(Zeros(offset + i, block.size(), ZeroKind::kRead));
    run = i + block.size();
  }
  if (run < data.size()) {
    FP_RETURN_IF_ERROR(SendZeros());
    FP_RETURN_IF_ERROR(sink_->OnData(offset + run, data.subspan(run)));
    stats_.data_bytes += data.size() - run;
  }
  return Status::Ok();
}

Status ZeroScan::Zeros(uint64_t offset, uint64_t length, ZeroKind kind) {
  (kind == ZeroKind::kHole ? stats_.hole_bytes : stats_.zero_bytes) += length;
  if (zeros_length_ > 0 && (zeros_kind_ != kind || zeros_offset_ + zeros_length_ != offset)) {
    FP_RETURN_IF_ERROR(SendZeros());
  }
  if (zeros_length_ == 0) {
    zeros_offset_ = offset;
    zeros_kind_ = kind;
  }
  zeros_length_ += length;
  return Status::Ok();
}

Status ZeroScan::SendZeros() {
  if (zeros_length_ == 0) return Status::Ok();
  return sink_->OnZeros(zeros_offset_, std::exchange(zeros_length_, 0), zeros_kind_);
}

Status ZeroScan::Finish() {
  if (pos_ != length_ || carry_len_ > 0) {
    return Internal(fmt::format("zero scan: ended at 0x{:x} of {} bytes", pos_, length_));
  }
  FP_RETURN_IF_ERROR(SendZeros());
  return sink_->Finish(length_);
}

Result<ScanStats> Pump(io::ImageReader& reader, uint64_t base, uint64_t length, RunSink& sink,
                       const std::function<void(uint64_t)>& progress, const CancelFlag* cancel) {
  ZeroScan scan(&sink, length);
  for (;;) {
    FP_RETURN_IF_ERROR(CheckCancel(cancel));
    FP_ASSIGN_OR_RETURN(io::ReadPiece piece, reader.Next());
    if (piece.length == 0) break;
    FP_RETURN_IF_ERROR(scan.Piece(piece, base));
    if (progress) progress(piece.offset + piece.length - base);
  }
  FP_RETURN_IF_ERROR(scan.Finish());
  return scan.stats();
}

}  // namespace flashpipe::output
