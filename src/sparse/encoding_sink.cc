#include "sparse/encoding_sink.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "base/endian.h"
#include "sparse/encoder.h"

namespace flashpipe::sparse {

// Runs of blocks of one kind, each closed into one chunk (RAW headers
// written ahead with 0 blocks and patched when the run ends).
class EncodingSink::Runs {
 public:
  Runs(ChunkWriter* w, uint32_t blk)
      : w_(w), raw_cap_(std::max<uint32_t>(1, static_cast<uint32_t>((uint64_t{64} << 20) / blk))) {}

  Status Raw(std::span<const uint8_t> data, uint32_t blk) {
    while (!data.empty()) {
      if (kind_ != kChunkRaw || blocks_ == raw_cap_) {
        FP_RETURN_IF_ERROR(Close());
        kind_ = kChunkRaw;
        raw_header_at_ = w_->offset();
        FP_RETURN_IF_ERROR(w_->RawHeader(0));
      }
      const uint32_t n = static_cast<uint32_t>(std::min<uint64_t>(raw_cap_ - blocks_, data.size() / blk));
      FP_RETURN_IF_ERROR(w_->RawData(data.first(size_t{n} * blk)));
      blocks_ += n;
      data = data.subspan(size_t{n} * blk);
    }
    return Status::Ok();
  }

  Status Extend(uint16_t kind, uint64_t blocks, uint32_t pattern) {
    while (blocks > 0) {
      if (kind_ != kind || pattern_ != pattern || blocks_ == UINT32_MAX) {
        FP_RETURN_IF_ERROR(Close());
        kind_ = kind;
        pattern_ = pattern;
      }
      const uint32_t n = static_cast<uint32_t>(std::min<uint64_t>(blocks, UINT32_MAX - blocks_));
      blocks_ += n;
      blocks -= n;
    }
    return Status::Ok();
  }

  Status Close() {
    const uint16_t kind = std::exchange(kind_, 0);
    const uint32_t blocks = std::exchange(blocks_, 0);
    switch (kind) {
      case kChunkRaw: return w_->PatchRawHeader(raw_header_at_, blocks);
      case kChunkFill: return w_->Fill(blocks, pattern_);
      case kChunkDontCare: return w_->DontCare(blocks);
      default: return Status::Ok();
    }
  }

 private:
  ChunkWriter* w_;
  uint32_t raw_cap_;
  uint16_t kind_ = 0;  // 0: no open run
  uint32_t blocks_ = 0;
  uint32_t pattern_ = 0;
  uint64_t raw_header_at_ = 0;
};

EncodingSink::EncodingSink(Output* out, uint32_t blk_sz, uint64_t image_size)
    : blk_(blk_sz), size_(image_size), partial_(blk_sz), writer_(std::make_unique<ChunkWriter>(out, blk_sz)),
      runs_(std::make_unique<Runs>(writer_.get(), blk_sz)) {}

EncodingSink::~EncodingSink() = default;

Result<std::unique_ptr<EncodingSink>> EncodingSink::Create(Output* out, uint32_t blk_sz, uint64_t image_size) {
  if (blk_sz == 0 || blk_sz % 4 != 0 || blk_sz > (64u << 20)) {
    return InvalidArgument(fmt::format("block size {} is not a non-zero multiple of 4 up to 64 MiB", blk_sz));
  }
  if (image_size == 0 || image_size % blk_sz != 0 || image_size / blk_sz > UINT32_MAX) {
    return InvalidArgument(fmt::format("image size {} is not a non-zero multiple of the block size {} "
                                       "(at most 2^32-1 blocks)", image_size, blk_sz));
  }
  if (!out->seekable()) return InvalidArgument("a sparse image built from pieces needs a seekable output");
  std::unique_ptr<EncodingSink> s(new EncodingSink(out, blk_sz, image_size));
  FP_RETURN_IF_ERROR(s->writer_->FileHeader(static_cast<uint32_t>(image_size / blk_sz), 0));
  return s;
}

uint32_t EncodingSink::chunks() const { return writer_->chunks(); }

Status EncodingSink::Check(uint64_t offset, uint64_t length) const {
  if (offset < pos_) {
    return InvalidArgument(fmt::format("an event at byte 0x{:x} comes after byte 0x{:x}: events must come in "
                                       "increasing order", offset, pos_));
  }
  if (offset > size_ || length > size_ - offset) {
    return InvalidArgument(fmt::format("{} bytes at byte 0x{:x} run past the image's {} bytes", length, offset,
                                       size_));
  }
  return Status::Ok();
}

Status EncodingSink::Advance(uint64_t offset, uint64_t length) {
  FP_RETURN_IF_ERROR(Check(offset, length));
  return offset > pos_ ? Skip(offset - pos_) : Status::Ok();
}

template <typename F>
Status EncodingSink::Partial(uint64_t n, bool data, F fill) {
  fill(partial_.data() + partial_len_, static_cast<size_t>(n));
  partial_len_ += static_cast<size_t>(n);
  pos_ += n;
  partial_data_ = partial_data_ || data;
  return partial_len_ == blk_ ? FlushPartial() : Status::Ok();
}

Status EncodingSink::FlushPartial() {
  const bool data = std::exchange(partial_data_, false);
  partial_len_ = 0;
  if (!data) return runs_->Extend(kChunkDontCare, 1, 0);
  uint32_t pattern;
  if (IsUniformBlock(partial_, &pattern)) return runs_->Extend(kChunkFill, 1, pattern);
  return runs_->Raw(partial_, blk_);
}

Status EncodingSink::RawBlocks(std::span<const uint8_t> buf) {
  size_t raw_start = 0, i = 0;
  while (i < buf.size()) {
    uint32_t pattern, next;
    if (!IsUniformBlock(buf.subspan(i, blk_), &pattern)) {
      i += blk_;
      continue;
    }
    if (raw_start < i) FP_RETURN_IF_ERROR(runs_->Raw(buf.subspan(raw_start, i - raw_start), blk_));
    uint64_t n = 1;
    for (i += blk_; i < buf.size() && IsUniformBlock(buf.subspan(i, blk_), &next) && next == pattern; i += blk_) ++n;
    FP_RETURN_IF_ERROR(runs_->Extend(kChunkFill, n, pattern));
    raw_start = i;
  }
  if (raw_start < buf.size()) FP_RETURN_IF_ERROR(runs_->Raw(buf.subspan(raw_start), blk_));
  return Status::Ok();
}

Status EncodingSink::OnRaw(uint64_t offset, std::span<const uint8_t> data) {
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

Status EncodingSink::OnFill(uint64_t offset, uint64_t length, uint32_t pattern) {
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
    FP_RETURN_IF_ERROR(runs_->Extend(kChunkFill, blocks, LoadLE<uint32_t>(r)));
    pos_ += blocks * blk_;
    left -= blocks * blk_;
  }
  return left > 0 ? put(left) : Status::Ok();
}

Status EncodingSink::OnSkip(uint64_t offset, uint64_t length) {
  FP_RETURN_IF_ERROR(Check(offset, length));
  return Skip(offset + length - pos_);  // the gap before it too
}

Status EncodingSink::Skip(uint64_t length) {
  auto zeros = [&](uint64_t n) { return Partial(n, false, [](uint8_t* dst, size_t k) { std::memset(dst, 0, k); }); };
  uint64_t left = length;
  if (partial_len_ > 0) {
    const uint64_t n = std::min<uint64_t>(left, blk_ - partial_len_);
    FP_RETURN_IF_ERROR(zeros(n));
    left -= n;
  }
  const uint64_t blocks = left / blk_;
  FP_RETURN_IF_ERROR(runs_->Extend(kChunkDontCare, blocks, 0));
  pos_ += blocks * blk_;
  left -= blocks * blk_;
  return left > 0 ? zeros(left) : Status::Ok();
}

Status EncodingSink::Finish() {
  FP_RETURN_IF_ERROR(Skip(size_ - pos_));
  FP_RETURN_IF_ERROR(runs_->Close());
  FP_RETURN_IF_ERROR(writer_->PatchFileHeader(static_cast<uint32_t>(size_ / blk_), writer_->chunks()));
  return writer_->Flush();
}

}  // namespace flashpipe::sparse
