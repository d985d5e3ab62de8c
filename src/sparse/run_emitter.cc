#include "sparse/run_emitter.h"

#include <algorithm>
#include <utility>

#include "base/crc32.h"
#include "sparse/format.h"

namespace flashpipe::sparse {

RunEmitter::RunEmitter(Mode mode, ChunkWriter* w, uint32_t block_size, uint64_t max_raw_chunk, bool crc,
                       std::vector<uint32_t>* plan)
    : mode_(mode), w_(w), blk_(block_size), crc_on_(crc && mode != Mode::kPlan), plan_(plan) {
  raw_cap_ = static_cast<uint32_t>(std::clamp<uint64_t>(max_raw_chunk / blk_, 1,
                                                        (UINT32_MAX - kChunkHeaderSize) / blk_));
}

Status RunEmitter::Raw(std::span<const uint8_t> data) {
  if (crc_on_) crc_ = Crc32Update(crc_, data.data(), data.size());
  while (!data.empty()) {
    if (kind_ != kChunkRaw || blocks_ == raw_cap_) {
      FP_RETURN_IF_ERROR(Close());
      FP_RETURN_IF_ERROR(OpenRaw());
    }
    uint32_t n = std::min<uint32_t>(raw_cap_ - blocks_, static_cast<uint32_t>(data.size() / blk_));
    if (mode_ != Mode::kPlan) FP_RETURN_IF_ERROR(w_->RawData(data.first(size_t{n} * blk_)));
    blocks_ += n;
    data = data.subspan(size_t{n} * blk_);
  }
  return Status::Ok();
}

Status RunEmitter::Fill(uint64_t blocks, uint32_t pattern) {
  if (crc_on_) crc_ = Crc32AppendPattern(crc_, pattern, blocks * blk_ / 4);
  return Extend(kChunkFill, blocks, pattern);
}

Status RunEmitter::Skip(uint64_t blocks) {
  if (crc_on_) crc_ = Crc32AppendPattern(crc_, 0, blocks * blk_ / 4);
  return Extend(kChunkDontCare, blocks, 0);
}

Status RunEmitter::Close() {
  if (kind_ == 0) return Status::Ok();
  ++chunks_;
  uint16_t kind = std::exchange(kind_, 0);
  uint32_t blocks = std::exchange(blocks_, 0);
  if (mode_ == Mode::kPlan) {
    if (kind == kChunkRaw) plan_->push_back(blocks);
    return Status::Ok();
  }
  switch (kind) {
    case kChunkRaw:
      if (mode_ == Mode::kFromPlan && blocks != (*plan_)[plan_next_ - 1]) {
        return Corrupt("the input read differently the second time (a RAW chunk changed size)");
      }
      return mode_ == Mode::kSeekBack ? w_->PatchRawHeader(raw_header_at_, blocks) : Status::Ok();
    case kChunkFill: return w_->Fill(blocks, pattern_);
    default: return w_->DontCare(blocks);
  }
}

Status RunEmitter::OpenRaw() {
  kind_ = kChunkRaw;
  if (mode_ == Mode::kPlan) return Status::Ok();
  raw_header_at_ = w_->offset();
  uint32_t blocks = 0;
  if (mode_ == Mode::kFromPlan) {
    if (plan_next_ >= plan_->size()) {
      return Corrupt("the input read differently the second time (more RAW chunks than planned)");
    }
    blocks = (*plan_)[plan_next_++];
  }
  return w_->RawHeader(blocks);
}

Status RunEmitter::Extend(uint16_t kind, uint64_t blocks, uint32_t pattern) {
  while (blocks > 0) {
    if (kind_ != kind || pattern_ != pattern || blocks_ == UINT32_MAX) {
      FP_RETURN_IF_ERROR(Close());
      kind_ = kind;
      pattern_ = pattern;
    }
    uint32_t n = static_cast<uint32_t>(std::min<uint64_t>(blocks, UINT32_MAX - blocks_));
    blocks_ += n;
    blocks -= n;
  }
  return Status::Ok();
}

}  // namespace flashpipe::sparse
