// BounceSink: writes an image the way U-Boot's sparse writer did before
// b1aade87ca1 (2023): every RAW and FILL byte is copied into one bounce
// buffer of `blocks` 512-byte blocks and written with one synchronous
// request at a time; DONT_CARE is skipped. It exists so that the benchmark
// can show, in the same run, what that costs against the pipelined
// io::ImageWriter. Bounds-checked like the writer. Not for production use.
#pragma once

#include <cstdint>
#include <memory>

#include "base/aligned_buffer.h"
#include "io/image_writer.h"
#include "sparse/sink.h"

namespace flashpipe::fastboot {

class BounceSink : public sparse::Sink {
 public:
  static Result<std::unique_ptr<BounceSink>> Create(const io::Device& device, uint32_t blocks);

  Status OnRaw(uint64_t offset, std::span<const uint8_t> data) override;
  Status OnFill(uint64_t offset, uint64_t length, uint32_t pattern) override;
  Status OnSkip(uint64_t offset, uint64_t length) override;
  // fdatasync (unless !sync: the caller syncs later).
  Status Finish(bool sync = true);

 private:
  BounceSink(const io::Device& device, uint32_t blocks);
  Status WriteBuffer(uint64_t offset, uint64_t length);
  io::Device device_;
  AlignedBuffer buffer_;
};

}  // namespace flashpipe::fastboot
