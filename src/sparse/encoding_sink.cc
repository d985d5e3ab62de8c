#include "sparse/encoding_sink.h"

#include <memory>

#include "sparse/run_emitter.h"

namespace flashpipe::sparse {

// The classified blocks as chunks: RAW headers written ahead with 0 blocks
// and patched when the run ends, RAW chunks of at most 64 MiB.
class EncodingSink::Runs : public BlockSink {
 public:
  Runs(ChunkWriter* w, uint32_t blk)
      : em_(RunEmitter::Mode::kSeekBack, w, blk, uint64_t{64} << 20, /*crc=*/false) {}

  Status OnDataBlocks(std::span<const uint8_t> blocks) override { return em_.Raw(blocks); }
  Status OnUniformBlocks(uint64_t blocks, uint32_t pattern) override { return em_.Fill(blocks, pattern); }
  Status OnUndefinedBlocks(uint64_t blocks) override { return em_.Skip(blocks); }
  Status Close() { return em_.Close(); }

 private:
  RunEmitter em_;
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
