// Fakes for the host's image path (src/host): MemoryImage keeps one pass's
// records and payload in memory and serves them back as a RecordSource and
// PayloadSource; Overlay lays a part (sparse or raw bytes, as a device would
// receive it) over a disk image in memory, leaving DONT_CARE untouched, as
// simg2img and a flashing device do. Header-only.
#pragma once

#include <algorithm>
#include <cstring>
#include <vector>

#include "host/part_plan.h"
#include "host/part_writer.h"
#include "host/record_sink.h"
#include "sparse/decoder.h"

namespace flashpipe::testing {

class MemoryImage : public host::RecordOut, public host::RecordSource, public host::PayloadSource {
 public:
  Status OnShape(const host::ImageShape& shape) override {
    shape_ = shape;
    return Status::Ok();
  }
  Status OnPayload(std::span<const uint8_t> bytes) override {
    payload_.insert(payload_.end(), bytes.begin(), bytes.end());
    return Status::Ok();
  }
  Status OnRecord(const host::Record& r) override {
    records_.push_back(r);
    return Status::Ok();
  }
  Result<std::optional<host::Record>> At(uint64_t i) override {
    if (i >= records_.size()) return std::optional<host::Record>();
    return std::optional<host::Record>(records_[i]);
  }
  Result<std::span<const uint8_t>> Payload(uint64_t offset, size_t max) override {
    if (offset >= payload_.size()) return Internal("payload offset past the end");
    return std::span<const uint8_t>(payload_).subspan(offset, std::min<size_t>(max, payload_.size() - offset));
  }
  const host::ImageShape& shape() const { return shape_; }
  const std::vector<host::Record>& records() const { return records_; }
  const std::vector<uint8_t>& payload() const { return payload_; }

 private:
  host::ImageShape shape_;
  std::vector<host::Record> records_;
  std::vector<uint8_t> payload_;
};

// Collects a part's bytes.
class BytesOut : public host::DataOut {
 public:
  Status Send(std::span<const std::span<const uint8_t>> pieces) override {
    for (auto p : pieces) bytes.insert(bytes.end(), p.begin(), p.end());
    ++sends;
    return Status::Ok();
  }
  std::vector<uint8_t> bytes;
  size_t sends = 0;
};

// Writes a decoded part over `disk`.
class DiskSink : public sparse::Sink {
 public:
  explicit DiskSink(std::vector<uint8_t>* disk) : disk_(disk) {}
  Status OnRaw(uint64_t offset, std::span<const uint8_t> data) override {
    Grow(offset + data.size());
    std::memcpy(disk_->data() + offset, data.data(), data.size());
    return Status::Ok();
  }
  Status OnFill(uint64_t offset, uint64_t length, uint32_t pattern) override {
    Grow(offset + length);
    for (uint64_t i = 0; i < length; i += 4) std::memcpy(disk_->data() + offset + i, &pattern, 4);
    return Status::Ok();
  }
  Status OnSkip(uint64_t, uint64_t) override { return Status::Ok(); }

 private:
  void Grow(uint64_t n) {
    if (disk_->size() < n) disk_->resize(n, 0xDC);
  }
  std::vector<uint8_t>* disk_;
};

// What a device does with one download: a sparse image is decoded (strictly)
// over `disk`, anything else is written at offset 0.
inline Status Overlay(std::vector<uint8_t>* disk, std::span<const uint8_t> part) {
  if (part.size() >= 4 && sparse::HasSparseMagic(part)) {
    DiskSink sink(disk);
    sparse::Decoder dec(&sink);
    FP_RETURN_IF_ERROR(dec.Feed(part));
    return dec.Finish();
  }
  if (disk->size() < part.size()) disk->resize(part.size(), 0xDC);
  std::memcpy(disk->data(), part.data(), part.size());
  return Status::Ok();
}

}  // namespace flashpipe::testing
