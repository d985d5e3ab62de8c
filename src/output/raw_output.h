// The raw image, two ways:
//
// RawFileOutput: a regular file of exactly `length` bytes, written by
// io::ImageWriter (the engine of `flashpipe write`) with O_DIRECT at depth
// where the filesystem allows it. The file must be new and empty (an
// AtomicFile's temporary): it is sized first, so zero runs are never written
// and stay holes. Finish() drains, trims the last block and fdatasyncs.
//
// StreamOutput: a byte stream (stdout, a pipe, /dev/null): every byte in
// order, zeros included, written as it comes.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "io/image_writer.h"
#include "io/target.h"
#include "output/run_sink.h"

namespace flashpipe::output {

struct QueueOptions {
  io::Backend backend = io::Backend::kAuto;
  unsigned queue_depth = 4;
  uint64_t request_size = 0;  // 0: from the geometry
};

class RawFileOutput : public RunSink {
 public:
  // `fd` stays the caller's; it is switched to O_DIRECT when possible.
  static Result<std::unique_ptr<RawFileOutput>> Create(int fd, std::string name, uint64_t length,
                                                       const QueueOptions& options);
  ~RawFileOutput() override;

  Status OnData(uint64_t offset, std::span<const uint8_t> data) override;
  Status OnZeros(uint64_t offset, uint64_t length, ZeroKind kind) override;
  Status Finish(uint64_t length) override;
  uint64_t bytes_written() const { return writer_->stats().bytes_written; }
  std::string_view backend() const { return queue_->name(); }

 private:
  RawFileOutput() = default;
  std::unique_ptr<io::Target> target_;
  std::unique_ptr<io::IoQueue> queue_;
  std::unique_ptr<io::ImageWriter> writer_;
};

class StreamOutput : public RunSink {
 public:
  StreamOutput(int fd, std::string name) : fd_(fd), name_(std::move(name)) {}
  Status OnData(uint64_t offset, std::span<const uint8_t> data) override;
  Status OnZeros(uint64_t offset, uint64_t length, ZeroKind kind) override;
  Status Finish(uint64_t) override { return Status::Ok(); }
  uint64_t bytes_written() const { return pos_; }

 private:
  int fd_;
  std::string name_;
  uint64_t pos_ = 0;
};

}  // namespace flashpipe::output
