// DiscardWriter: the "write nothing" model. Checks every event's range
// against the device window (as every model does) and counts the image,
// but issues no request and no fdatasync: what a flash costs without the
// storage (the transfer and the validation alone). Thread-compatible.
#pragma once

#include <cstdint>
#include <span>

#include "io/image_writer.h"
#include "io/write_sink.h"

namespace flashpipe::io {

class DiscardWriter final : public WriteSink {
 public:
  explicit DiscardWriter(const Device& device) : device_(device) {}

  Status OnHeader(const sparse::FileHeader& header) override;
  Status OnRaw(uint64_t offset, std::span<const uint8_t> data) override { return Cover(offset, data.size()); }
  Status OnFill(uint64_t offset, uint64_t length, uint32_t) override { return Cover(offset, length); }
  Status OnSkip(uint64_t offset, uint64_t length) override;
  Status Finish() override;
  const WriteStats& stats() const override { return stats_; }

 private:
  Status Cover(uint64_t offset, uint64_t length);
  Device device_;
  bool finished_ = false;
  WriteStats stats_;
};

}  // namespace flashpipe::io
