// The download side of a flash: where the image lands and how it is checked
// while it arrives.
//
// DownloadBuffer is one anonymous mapping of `capacity` bytes, reused for
// every download. Prefault() (the daemon runs it on a background thread at
// start) makes every page present, so that no download pays page faults:
// the first 256 MiB download into a fresh buffer took 0.5 s longer here.
//
// ImageCheck decodes a download while it arrives: each slice the transport
// delivers is fed into a sparse::Decoder (tolerate_missing_tail, for the
// 29.0.6 client's split parts of odd-sized raw images) whose sink records only
// the extent the image touches. When the last byte is in, Finish() says
// whether the image is valid and how large it expands (CRC32 chunks are
// checked then, by a second pass, only for images that have them), so `flash` can FAIL
// with the decoder's reason, or because the image is bigger than the
// partition, before anything is written. Images without the sparse magic are
// raw. Memory: fixed, whatever the image.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <span>

#include "base/status.h"
#include "sparse/decoder.h"
#include "sparse/sink.h"

namespace flashpipe::fastboot {

class DownloadBuffer {
 public:
  explicit DownloadBuffer(uint64_t capacity) : capacity_(capacity) {}
  ~DownloadBuffer();
  DownloadBuffer(const DownloadBuffer&) = delete;
  DownloadBuffer& operator=(const DownloadBuffer&) = delete;

  // REQUIRES: size <= capacity(). Maps the buffer on first use.
  Result<std::span<uint8_t>> Get(uint64_t size);
  uint64_t capacity() const { return capacity_; }
  // Faults every page in (MADV_POPULATE_WRITE), without changing any byte;
  // safe while a download fills the buffer. Best effort.
  void Prefault();

 private:
  Status Map();

  uint64_t capacity_;
  std::once_flag mapped_;
  Status map_status_;
  uint8_t* data_ = nullptr;
};

class ImageCheck : public sparse::NullSink {
 public:
  // Starts checking a download of `size` bytes.
  void Begin(uint64_t size);
  // The first `received` bytes of the image are in `image` (image.size() is
  // the whole download): decode what was not yet seen.
  void Arrived(std::span<const uint8_t> image, uint64_t received);
  // After the last byte: OK when the image is complete and valid.
  Status Finish(std::span<const uint8_t> image);

  bool sparse() const { return sparse_; }
  // Bytes the expanded image covers (sparse: total_blks * blk_sz; raw: size).
  uint64_t image_size() const { return image_size_; }
  const Status& status() const { return status_; }

  // sparse::Sink, for the decoder only.
  Status OnHeader(const sparse::FileHeader& header) override;
  Status OnChunk(const sparse::ChunkInfo& chunk) override;

 private:

  uint64_t size_ = 0;
  uint64_t fed_ = 0;
  bool decided_ = false;
  bool sparse_ = false;
  uint64_t image_size_ = 0;
  bool has_crc_ = false;  // a CRC32 chunk was seen: Finish() checks CRCs
  std::unique_ptr<sparse::Decoder> decoder_;
  Status status_;
};

}  // namespace flashpipe::fastboot
