// StreamSource: an image read front to back once (stdin, a fifo, a
// decompressor). Sparse content goes through the decoder in large slices;
// raw content goes to the sink as it comes, zero runs as zero FILL.
// Errors of the stream itself already name it ("gzip of x.gz: ..."); the
// decoder's and the sink's get the stream's name in front.
#include <algorithm>
#include <cstring>
#include <vector>

#include "base/zero.h"
#include "input/detect.h"
#include "input/sources.h"
#include "sparse/format.h"

namespace flashpipe::input {
namespace {

constexpr uint64_t kZeroBlock = 4096;

class StreamSource : public ImageSource {
 public:
  StreamSource(std::unique_ptr<PeekReader> reader, ImageKind compression, bool sparse,
               const SourceOptions& options, SizeHint size)
      : reader_(std::move(reader)), compression_(compression), options_(options), sparse_(sparse),
        hint_(size) {}

  ImageForm form() const override { return {.compression = compression_, .sparse = sparse_}; }
  std::optional<uint64_t> known_size() const override { return hint_.exact; }
  uint64_t min_size() const override { return hint_.at_least; }
  uint64_t image_size() const override { return size_; }

  Status Run(ImageSink* sink) override {
    Status s = sparse_ ? RunSparse(sink) : RunRaw(sink);
    if (s.ok() || !read_error_.ok()) return s;
    return s.WithContext(reader_->name());
  }

 private:
  // The reader's errors are kept apart: they carry the stream's name already.
  Result<size_t> Read(std::span<uint8_t> buf, bool whole) {
    auto n = whole ? reader_->ReadUpTo(buf) : reader_->Read(buf);
    if (!n.ok()) read_error_ = n.status();
    return n;
  }

  Status RunSparse(ImageSink* sink) {
    sparse::Decoder dec(sink, options_.decoder);
    std::vector<uint8_t> buf(options_.read_size);
    while (true) {
      FP_ASSIGN_OR_RETURN(size_t n, Read(buf, false));
      if (n == 0) break;
      FP_RETURN_IF_ERROR(dec.Feed(std::span(buf).first(n)));
    }
    FP_RETURN_IF_ERROR(dec.Finish());
    if (dec.header_parsed()) size_ = dec.header().image_size();
    return Status::Ok();
  }

  Status RunRaw(ImageSink* sink) {
    std::vector<uint8_t> buf(options_.read_size);
    while (true) {
      // Whole buffers keep zero-run detection aligned to the image offset.
      FP_ASSIGN_OR_RETURN(size_t n, Read(buf, true));
      if (n == 0) break;
      auto data = std::span<const uint8_t>(buf).first(n);
      if (options_.detect_zeros) {
        FP_RETURN_IF_ERROR(EmitRawDetectingZeros(sink, size_, data));
      } else {
        FP_RETURN_IF_ERROR(sink->OnRaw(size_, data));
      }
      size_ += n;
    }
    return sink->OnEnd();
  }

  std::unique_ptr<PeekReader> reader_;
  ImageKind compression_;
  SourceOptions options_;
  bool sparse_ = false;
  SizeHint hint_;
  uint64_t size_ = 0;
  Status read_error_;
};

}  // namespace

Status EmitRawDetectingZeros(ImageSink* sink, uint64_t offset, std::span<const uint8_t> data,
                             uint64_t min_zero_run) {
  // Walk 4 KiB blocks aligned to the image offset; flush raw bytes before
  // each long enough zero run.
  size_t pos = 0, raw_start = 0;
  while (pos < data.size()) {
    uint64_t abs = offset + pos;
    size_t block = static_cast<size_t>(std::min<uint64_t>(kZeroBlock - abs % kZeroBlock, data.size() - pos));
    if (abs % kZeroBlock != 0 || block < kZeroBlock || !IsAllZero({data.data() + pos, block})) {
      pos += block;
      continue;
    }
    size_t run_end = pos + block;
    while (run_end + kZeroBlock <= data.size() && IsAllZero({data.data() + run_end, kZeroBlock})) run_end += kZeroBlock;
    if (run_end - pos >= min_zero_run) {
      if (pos > raw_start) FP_RETURN_IF_ERROR(sink->OnRaw(offset + raw_start, data.subspan(raw_start, pos - raw_start)));
      FP_RETURN_IF_ERROR(sink->OnFill(offset + pos, run_end - pos, 0));
      raw_start = run_end;
    }
    pos = run_end;
  }
  if (data.size() > raw_start) FP_RETURN_IF_ERROR(sink->OnRaw(offset + raw_start, data.subspan(raw_start)));
  return Status::Ok();
}

std::unique_ptr<ImageSource> MakeStreamSource(std::unique_ptr<PeekReader> reader, ImageKind compression,
                                              bool sparse, const SourceOptions& options, SizeHint size) {
  return std::make_unique<StreamSource>(std::move(reader), compression, sparse, options, size);
}

}  // namespace flashpipe::input
