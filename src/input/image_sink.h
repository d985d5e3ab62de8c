// ImageSink: where an ImageSource delivers the expanded image. It is a
// sparse::Sink (RAW/FILL/SKIP events with image offsets) plus one zero-copy
// entry point for sources that are seekable files: RawFromFd lets the sink
// read the bytes itself, straight into its own (aligned) buffers.
//
// WriterSink adapts io::ImageWriter (RawFromFd -> WriteRawFromFd) and checks
// on each OnHeader that the image fits every device before the first byte is
// written. The default RawFromFd reads through a buffer into OnRaw.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "base/status.h"
#include "io/image_writer.h"
#include "sparse/sink.h"

namespace flashpipe::input {

class ImageSink : public sparse::Sink {
 public:
  // Delivers n bytes of `fd` at in_offset as image bytes at out_offset.
  // Returns their CRC32. A short file is a kCorrupt error naming the offset.
  virtual Result<uint32_t> RawFromFd(uint64_t out_offset, int fd, uint64_t in_offset, uint64_t n);
};

class WriterSink : public ImageSink {
 public:
  // `capacity`: bytes every device can take (0 = no limit, e.g. files).
  WriterSink(io::ImageWriter* writer, uint64_t capacity) : writer_(writer), capacity_(capacity) {}

  Status OnHeader(const sparse::FileHeader& header) override;
  Status OnRaw(uint64_t offset, std::span<const uint8_t> data) override { return writer_->OnRaw(offset, data); }
  Status OnFill(uint64_t offset, uint64_t length, uint32_t pattern) override {
    return writer_->OnFill(offset, length, pattern);
  }
  Status OnSkip(uint64_t offset, uint64_t length) override { return writer_->OnSkip(offset, length); }
  Status OnEnd() override { return writer_->OnEnd(); }
  Result<uint32_t> RawFromFd(uint64_t out_offset, int fd, uint64_t in_offset, uint64_t n) override {
    return writer_->WriteRawFromFd(out_offset, fd, in_offset, n);
  }

 private:
  io::ImageWriter* writer_;
  uint64_t capacity_;
};

// "image of N bytes does not fit <what> of M bytes" when size > capacity > 0
// ("image of at least N bytes" when `lower_bound`).
Status CheckFits(uint64_t image_size, uint64_t capacity, std::string_view what, bool lower_bound = false);

}  // namespace flashpipe::input
