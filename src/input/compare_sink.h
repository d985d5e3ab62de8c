// CompareSink: checks a target against an image instead of writing it, for
// `flashpipe write --verify-only` (a card flashed earlier, or a target
// corrupted after its write). Every RAW and FILL range is read back from the
// target with O_DIRECT where the target allows it (not the page cache) and
// compared; DONT_CARE ranges are not defined by the image and are not
// checked. The first difference stops the run with
//   "<target>: differs from the image at byte 0x1234 (image 0x5a, target 0x00)".
#pragma once

#include <cstdint>
#include <span>

#include "base/aligned_buffer.h"
#include "input/image_sink.h"
#include "io/target.h"

namespace flashpipe::input {

class CompareSink : public ImageSink {
 public:
  // `target` must outlive the sink; it may be opened read-only.
  explicit CompareSink(const io::Target* target);

  Status OnRaw(uint64_t offset, std::span<const uint8_t> data) override;
  Status OnFill(uint64_t offset, uint64_t length, uint32_t pattern) override;
  Status OnSkip(uint64_t, uint64_t length) override {
    skipped_ += length;
    return Status::Ok();
  }

  uint64_t bytes_compared() const { return compared_; }
  uint64_t bytes_skipped() const { return skipped_; }

 private:
  // Calls `check(target_bytes, image_offset)` over [offset, offset+length)
  // in pieces of at most the buffer size.
  template <typename Check>
  Status ReadBack(uint64_t offset, uint64_t length, Check check);
  const io::Target* target_;
  AlignedBuffer buf_;
  uint64_t compared_ = 0;
  uint64_t skipped_ = 0;
};

}  // namespace flashpipe::input
