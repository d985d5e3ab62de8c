// RunSink: where the read path sends an image, as runs in offset order that
// cover [0, length) exactly once:
//   OnData   bytes that are not all zeros (whole 4 KiB blocks of which none is
//            all zero; only the image's last block may be shorter); `data`
//            is valid only during the call.
//   OnZeros  bytes that are all zero: read from the medium (kRead), or a hole
//            the source file does not store (kHole), never read.
//   Finish   once, after the last run, with the image length.
// Offsets are image offsets (0 = the first byte read) and multiples of
// kRunBlock. Any error stops the read and is returned to the caller as is.
// TeeSink hands every run to several sinks in turn (an output and a bmap).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "base/status.h"

namespace flashpipe::output {

inline constexpr uint64_t kRunBlock = 4096;

enum class ZeroKind { kRead, kHole };

class RunSink {
 public:
  virtual ~RunSink() = default;
  virtual Status OnData(uint64_t offset, std::span<const uint8_t> data) = 0;
  virtual Status OnZeros(uint64_t offset, uint64_t length, ZeroKind kind) = 0;
  virtual Status Finish(uint64_t length) = 0;
};

class TeeSink : public RunSink {
 public:
  explicit TeeSink(std::vector<RunSink*> sinks) : sinks_(std::move(sinks)) {}
  Status OnData(uint64_t offset, std::span<const uint8_t> data) override {
    for (RunSink* s : sinks_) FP_RETURN_IF_ERROR(s->OnData(offset, data));
    return Status::Ok();
  }
  Status OnZeros(uint64_t offset, uint64_t length, ZeroKind kind) override {
    for (RunSink* s : sinks_) FP_RETURN_IF_ERROR(s->OnZeros(offset, length, kind));
    return Status::Ok();
  }
  Status Finish(uint64_t length) override {
    for (RunSink* s : sinks_) FP_RETURN_IF_ERROR(s->Finish(length));
    return Status::Ok();
  }

 private:
  std::vector<RunSink*> sinks_;
};

// A zero-filled 1 MiB buffer, shared by the sinks that must write zeros out.
std::span<const uint8_t> ZeroBuffer();

}  // namespace flashpipe::output
