#include "sparse/encoding_sink.h"

#include <algorithm>
#include <utility>

namespace flashpipe::sparse {

// Runs of blocks of one kind, each closed into one chunk (RAW headers
// written ahead with 0 blocks and patched when the run ends).
class EncodingSink::Runs : public BlockSink {
 public:
  Runs(ChunkWriter* w, uint32_t blk)
      : w_(w), blk_(blk), raw_cap_(std::max<uint32_t>(1, static_cast<uint32_t>((uint64_t{64} << 20) / blk))) {}

  Status OnDataBlocks(std::span<const uint8_t> blocks) override { return Raw(blocks, blk_); }
  Status OnUniformBlocks(uint64_t blocks, uint32_t pattern) override { return Extend(kChunkFill, blocks, pattern); }
  Status OnUndefinedBlocks(uint64_t blocks) override { return Extend(kChunkDontCare, blocks, 0); }

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
  uint32_t blk_;
  uint32_t raw_cap_;
  uint16_t kind_ = 0;  // 0: no open run
  uint32_t blocks_ = 0;
  uint32_t pattern_ = 0;
  uint64_t raw_header_at_ = 0;
};

EncodingSink::EncodingSink(Output* out, uint32_t blk_sz, uint64_t image_size)
    : blk_(blk_sz),
      size_(image_size),
      writer_(std::make_unique<ChunkWriter>(out, blk_sz)),
      runs_(std::make_unique<Runs>(writer_.get(), blk_sz)),
      blocks_(runs_.get(), blk_sz, image_size) {}

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

Status EncodingSink::Finish() {
  FP_RETURN_IF_ERROR(blocks_.SkipTo(size_));
  FP_RETURN_IF_ERROR(runs_->Close());
  FP_RETURN_IF_ERROR(writer_->PatchFileHeader(static_cast<uint32_t>(size_ / blk_), writer_->chunks()));
  return writer_->Flush();
}

}  // namespace flashpipe::sparse
