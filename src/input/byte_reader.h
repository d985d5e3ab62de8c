// ByteReader: a sequential stream of image bytes (a file, stdin, a fifo, or a
// decompressor's output), read front to back once.
//
// FdReader reads a file descriptor it owns (or borrows, for stdin). On a pipe
// or fifo it waits in poll() so that Cancel() from another thread ends a
// blocked read within a fraction of a second. PeekReader lets a caller look
// at the first bytes (magic detection) without consuming them.
// Thread-compatible, except Cancel(), which may be called from any thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "base/status.h"
#include "base/unique_fd.h"

namespace flashpipe::input {

class ByteReader {
 public:
  virtual ~ByteReader() = default;
  // Reads up to out.size() bytes, blocking until at least one is available;
  // 0 means end of input. Errors name the stream and the byte offset.
  virtual Result<size_t> Read(std::span<uint8_t> out) = 0;
  // Bytes returned by Read so far.
  virtual uint64_t position() const = 0;
  // What to call the stream in messages ("stdin", a path, "gzip of x.img").
  virtual const std::string& name() const = 0;
  // Makes a blocked or later Read fail with kCancelled. Any thread.
  virtual void Cancel() {}
  // Passes over n bytes (lseek on a regular file, else read and drop).
  // Returns the bytes skipped: fewer than n only at the end of input.
  virtual Result<uint64_t> Skip(uint64_t n);
  // Reads until `out` is full or the input ends; returns the bytes read,
  // fewer than out.size() only at the end (as base/fd_io.h's ReadUpTo).
  Result<size_t> ReadUpTo(std::span<uint8_t> out);
};

class FdReader : public ByteReader {
 public:
  // `owned` is closed by the reader; pass UniqueFd() and `borrowed` for stdin.
  FdReader(UniqueFd owned, int borrowed, std::string name);
  static std::unique_ptr<FdReader> Own(UniqueFd fd, std::string name);
  static std::unique_ptr<FdReader> Borrow(int fd, std::string name);

  Result<size_t> Read(std::span<uint8_t> out) override;
  uint64_t position() const override { return position_; }
  const std::string& name() const override { return name_; }
  void Cancel() override { cancelled_.store(true); }
  Result<uint64_t> Skip(uint64_t n) override;

 private:
  Status WaitReadable();
  bool regular_ = false;
  uint64_t file_size_ = 0;
  UniqueFd owned_;
  int fd_;
  std::string name_;
  uint64_t position_ = 0;
  bool pollable_ = false;  // a pipe, fifo or socket
  std::atomic<bool> cancelled_{false};
};

class PeekReader : public ByteReader {
 public:
  explicit PeekReader(std::unique_ptr<ByteReader> inner) : inner_(std::move(inner)) {}
  // Up to n bytes from the current position without consuming them (fewer
  // only at the end of input).
  Result<std::span<const uint8_t>> Peek(size_t n);

  Result<size_t> Read(std::span<uint8_t> out) override;
  uint64_t position() const override { return position_; }
  const std::string& name() const override { return inner_->name(); }
  void Cancel() override { inner_->Cancel(); }
  Result<uint64_t> Skip(uint64_t n) override;

 private:
  std::unique_ptr<ByteReader> inner_;
  std::vector<uint8_t> head_;  // peeked, not yet returned
  size_t head_pos_ = 0;
  uint64_t position_ = 0;
};

}  // namespace flashpipe::input
