// ImageRecorder: an input::ImageSink that builds the expanded image in memory
// (DONT_CARE left as zeros, or as 0xDC bytes with mark_skips) and counts the
// events, so tests can compare what a source delivered with the expected
// bytes. ByteVectorReader: an input::ByteReader over bytes in memory that
// returns at most `max_read` bytes per call. Header-only.
#pragma once

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "base/crc32.h"
#include "input/byte_reader.h"
#include "input/image_sink.h"

namespace flashpipe::testing {

class ImageRecorder : public input::ImageSink {
 public:
  explicit ImageRecorder(bool mark_skips = false) : mark_skips_(mark_skips) {}
  std::vector<uint8_t> image;
  uint64_t headers = 0, raws = 0, fills = 0, zero_fills = 0, skips = 0, ends = 0, fd_raws = 0;
  uint64_t fail_after_raw_bytes = UINT64_MAX;  // OnRaw fails once this many bytes arrived
  uint64_t raw_bytes = 0;

  Status OnHeader(const sparse::FileHeader&) override { ++headers; return Status::Ok(); }
  Status OnRaw(uint64_t offset, std::span<const uint8_t> data) override {
    ++raws;
    raw_bytes += data.size();
    if (raw_bytes > fail_after_raw_bytes) return NoSpace("recorder: full");
    Grow(offset + data.size());
    std::memcpy(image.data() + offset, data.data(), data.size());
    return Status::Ok();
  }
  Status OnFill(uint64_t offset, uint64_t length, uint32_t pattern) override {
    ++fills;
    if (pattern == 0) ++zero_fills;
    Grow(offset + length);
    for (uint64_t i = 0; i < length; i += 4) std::memcpy(image.data() + offset + i, &pattern, 4);
    return Status::Ok();
  }
  Status OnSkip(uint64_t offset, uint64_t length) override {
    ++skips;
    Grow(offset + length);
    if (mark_skips_) std::memset(image.data() + offset, 0xDC, length);
    return Status::Ok();
  }
  Status OnEnd() override { ++ends; return Status::Ok(); }
  Result<uint32_t> RawFromFd(uint64_t out_offset, int fd, uint64_t in_offset, uint64_t n) override {
    ++fd_raws;
    return ImageSink::RawFromFd(out_offset, fd, in_offset, n);
  }

 private:
  void Grow(uint64_t end) {
    if (image.size() < end) image.resize(end, 0);
  }
  bool mark_skips_;
};

class ByteVectorReader : public input::ByteReader {
 public:
  ByteVectorReader(std::vector<uint8_t> data, size_t max_read = SIZE_MAX, std::string name = "memory")
      : data_(std::move(data)), max_read_(max_read), name_(std::move(name)) {}
  Result<size_t> Read(std::span<uint8_t> out) override {
    size_t n = std::min({out.size(), max_read_, data_.size() - static_cast<size_t>(pos_)});
    std::memcpy(out.data(), data_.data() + pos_, n);
    pos_ += n;
    return n;
  }
  uint64_t position() const override { return pos_; }
  const std::string& name() const override { return name_; }

 private:
  std::vector<uint8_t> data_;
  size_t max_read_;
  std::string name_;
  uint64_t pos_ = 0;
};

}  // namespace flashpipe::testing
