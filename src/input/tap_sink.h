// TapSink: an ImageSink in front of another (the writer, or CompareSink for
// --verify-only) that forwards every event and, on the way through, stops
// the run once `cancel` is set (kCancelled, between events and every 16 MiB
// of a file range) and feeds the events to an ImageDigest. Either may be
// null. A file range goes on as pieces of at most 16 MiB (their CRCs
// combined), so a long RAW extent is not one uninterruptible call.
#pragma once

#include "base/cancel.h"
#include "input/image_digest.h"
#include "input/image_sink.h"

namespace flashpipe::input {

class TapSink : public ImageSink {
 public:
  TapSink(ImageSink* inner, const CancelFlag* cancel, ImageDigest* digest)
      : inner_(inner), cancel_(cancel), digest_(digest) {}

  Status OnHeader(const sparse::FileHeader& header) override;
  Status OnRaw(uint64_t offset, std::span<const uint8_t> data) override;
  Status OnFill(uint64_t offset, uint64_t length, uint32_t pattern) override;
  Status OnSkip(uint64_t offset, uint64_t length) override;
  Status OnEnd() override;
  Result<uint32_t> RawFromFd(uint64_t out_offset, int fd, uint64_t in_offset, uint64_t n) override;

 private:
  ImageSink* inner_;
  const CancelFlag* cancel_;
  ImageDigest* digest_;
};

}  // namespace flashpipe::input
