#include "sparse/block_classifier.h"

#include <cstring>
#include <utility>

#include "base/endian.h"
#include "sparse/encoder.h"

namespace flashpipe::sparse {

BlockClassifier::BlockClassifier(BlockSink* out, uint32_t blk_sz, uint64_t limit)
    : out_(out), blk_(blk_sz), limit_(limit), partial_(blk_sz) {}

Status BlockClassifier::Check(uint64_t offset, uint64_t length) const {
  if (offset < pos_) {
    return InvalidArgument(fmt::format("an event at byte 0x{:x} comes after byte 0x{:x}: events must come in "
                                       "increasing order", offset, pos_));
  }
  if (offset > limit_ || length > limit_ - offset) {
    return InvalidArgument(fmt::format("{} bytes at byte 0x{:x} run past the image's {} bytes", length, offset,
                                       limit_));
  }
  return Status::Ok();
}

Status BlockClassifier::Advance(uint64_t offset, uint64_t length) {
  FP_RETURN_IF_ERROR(Check(offset, length));
  return offset > pos_ ? Skip(offset - pos_) : Status::Ok();
}

template <typename F>
Status BlockClassifier::Partial(uint64_t n, bool data, F fill) {
  fill(partial_.data() + partial_len_, static_cast<size_t>(n));
  partial_len_ += static_cast<size_t>(n);
  pos_ += n;
  partial_data_ = partial_data_ || data;
  return partial_len_ == blk_ ? FlushPartial() : Status::Ok();
}

Status BlockClassifier::FlushPartial() {
  const bool data = std::exchange(partial_data_, false);
  partial_len_ = 0;
  if (!data) return out_->OnUndefinedBlocks(1);
  uint32_t pattern;
  if (IsUniformBlock(partial_, &pattern)) return out_->OnUniformBlocks(1, pattern);
  return out_->OnDataBlocks(partial_);
}

Status BlockClassifier::RawBlocks(std::span<const uint8_t> buf) {
  size_t raw_start = 0, i = 0;
  while (i < buf.size()) {
    uint32_t pattern, next;
    if (!IsUniformBlock(buf.subspan(i, blk_), &pattern)) {
      i += blk_;
      continue;
    }
    if (raw_start < i) FP_RETURN_IF_ERROR(out_->OnDataBlocks(buf.subspan(raw_start, i - raw_start)));
    uint64_t n = 1;
    for (i += blk_; i < buf.size() && IsUniformBlock(buf.subspan(i, blk_), &next) && next == pattern; i += blk_) ++n;
    FP_RETURN_IF_ERROR(out_->OnUniformBlocks(n, pattern));
    raw_start = i;
  }
  if (raw_start < buf.size()) FP_RETURN_IF_ERROR(out_->OnDataBlocks(buf.subspan(raw_start)));
  return Status::Ok();
}

Status BlockClassifier::OnRaw(uint64_t offset, std::span<const uint8_t> data) {
  FP_RETURN_IF_ERROR(Advance(offset, data.size()));
  auto copy = [&](uint64_t n) {
    return Partial(n, true, [&](uint8_t* dst, size_t k) { std::memcpy(dst, data.data(), k); });
  };
  if (partial_len_ > 0) {
    const uint64_t n = std::min<uint64_t>(data.size(), blk_ - partial_len_);
    FP_RETURN_IF_ERROR(copy(n));
    data = data.subspan(n);
  }
  const size_t whole = data.size() / blk_ * blk_;
  FP_RETURN_IF_ERROR(RawBlocks(data.first(whole)));
  pos_ += whole;
  data = data.subspan(whole);
  return data.empty() ? Status::Ok() : copy(data.size());
}

Status BlockClassifier::OnFill(uint64_t offset, uint64_t length, uint32_t pattern) {
  FP_RETURN_IF_ERROR(Advance(offset, length));
  uint8_t p[4];
  StoreLE<uint32_t>(p, pattern);
  // Byte x of the image is p[(x - offset) % 4], whatever the alignment.
  auto put = [&](uint64_t n) {
    const uint64_t at = pos_;
    return Partial(n, true, [&](uint8_t* dst, size_t k) {
      for (size_t i = 0; i < k; ++i) dst[i] = p[(at + i - offset) % 4];
    });
  };
  uint64_t left = length;
  if (partial_len_ > 0) {
    const uint64_t n = std::min<uint64_t>(left, blk_ - partial_len_);
    FP_RETURN_IF_ERROR(put(n));
    left -= n;
  }
  const uint64_t blocks = left / blk_;
  if (blocks > 0) {
    uint8_t r[4];
    for (uint64_t k = 0; k < 4; ++k) r[k] = p[(pos_ + k - offset) % 4];
    FP_RETURN_IF_ERROR(out_->OnUniformBlocks(blocks, LoadLE<uint32_t>(r)));
    pos_ += blocks * blk_;
    left -= blocks * blk_;
  }
  return left > 0 ? put(left) : Status::Ok();
}

Status BlockClassifier::OnSkip(uint64_t offset, uint64_t length) {
  FP_RETURN_IF_ERROR(Check(offset, length));
  return Skip(offset + length - pos_);  // the gap before it too
}

Status BlockClassifier::SkipTo(uint64_t end) {
  FP_RETURN_IF_ERROR(Check(end, 0));
  FP_RETURN_IF_ERROR(Skip(end - pos_));
  if (partial_len_ == 0) return Status::Ok();
  return Partial(blk_ - partial_len_, false, [](uint8_t* dst, size_t k) { std::memset(dst, 0, k); });
}

Status BlockClassifier::Skip(uint64_t length) {
  auto zeros = [&](uint64_t n) { return Partial(n, false, [](uint8_t* dst, size_t k) { std::memset(dst, 0, k); }); };
  uint64_t left = length;
  if (partial_len_ > 0) {
    const uint64_t n = std::min<uint64_t>(left, blk_ - partial_len_);
    FP_RETURN_IF_ERROR(zeros(n));
    left -= n;
  }
  const uint64_t blocks = left / blk_;
  if (blocks > 0) FP_RETURN_IF_ERROR(out_->OnUndefinedBlocks(blocks));
  pos_ += blocks * blk_;
  left -= blocks * blk_;
  return left > 0 ? zeros(left) : Status::Ok();
}

}  // namespace flashpipe::sparse
