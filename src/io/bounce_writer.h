// BounceWriter: a deliberately naive model of how U-Boot's sparse writer
// (lib/image-sparse.c, write_sparse_image) puts an image on eMMC, kept beside
// the engine (io::ImageWriter) so that the benchmark and the daemon compare
// the two on the same device. Not for production use.
//
// What it does, event by event (one request in flight at any time; each is
// submitted and waited for before the next, as U-Boot's blk_dwrite):
//   RAW        per chunk, the bytes are copied into one aligned bounce buffer
//              of buffer_bytes (N blocks of the device's logical block, 512
//              on eMMC, as U-Boot's blksz); each full buffer is written with
//              one request, and the chunk's remainder with a last, shorter
//              one. The buffer never carries bytes from one chunk into the
//              next. U-Boot's N was 100 until b1aade87ca1 (2023), then
//              FASTBOOT_MAX_BLK_WRITE = 16384.
//   FILL       written from a separate fill buffer of kFillBufferBytes (512
//              KiB, U-Boot's default CONFIG_IMAGE_SPARSE_FILLBUF_SIZE),
//              whatever N is: requests of min(left, 512 KiB) until the chunk
//              is covered. Zeros are written as data too (U-Boot does not
//              erase or zero a range). Only the part of the fill buffer a
//              chunk uses is filled with its pattern.
//   DONT_CARE  skipped, nothing issued.
// Chunk ends come from OnChunk (the decoder calls it after the chunk's data).
// Without a decoder (a raw image fed as OnRaw slices) a contiguous run of
// RAW counts as one chunk, ended by OnEnd, Finish, or a non-contiguous
// offset.
//
// Every request is checked against the device window before it is issued;
// a window of several extents (a logical partition) has a request that
// crosses an extent's end issued as one blocking request per extent. On a
// device opened with O_DIRECT a request not aligned to the logical
// block is refused (kUnsupported) rather than sent. Finish() writes what is
// left, then fdatasync unless options.sync is false. Thread-compatible.
#pragma once

#include <cstdint>
#include <memory>
#include <span>

#include "base/aligned_buffer.h"
#include "io/image_writer.h"
#include "io/write_sink.h"

namespace flashpipe::io {

struct BounceOptions {
  uint64_t buffer_bytes = 0;  // RAW bounce buffer: > 0, a multiple of the logical block
  bool sync = true;           // false: Finish() leaves the fdatasync to the caller
};

class BounceWriter final : public WriteSink {
 public:
  static constexpr uint64_t kFillBufferBytes = 512 << 10;

  static Result<std::unique_ptr<BounceWriter>> Create(const Device& device, const BounceOptions& options);

  Status OnHeader(const sparse::FileHeader& header) override;
  Status OnRaw(uint64_t offset, std::span<const uint8_t> data) override;
  Status OnFill(uint64_t offset, uint64_t length, uint32_t pattern) override;
  Status OnSkip(uint64_t offset, uint64_t length) override;
  Status OnChunk(const sparse::ChunkInfo& chunk) override;
  Status OnEnd() override;
  Status Finish() override;
  const WriteStats& stats() const override { return stats_; }

 private:
  BounceWriter(const Device& device, ExtentMap map, const BounceOptions& options);
  Status Flush();  // writes the bounce buffer's bytes, if any
  // One request, submitted and waited for; the first failure sticks (no
  // request is issued after it, Finish returns it).
  Status WriteBlocking(uint64_t offset, const uint8_t* buf, uint64_t length);
  Status Issue(uint64_t offset, const uint8_t* buf, uint64_t length);

  Device device_;
  ExtentMap map_;  // where each image byte lands on the device
  BounceOptions options_;
  AlignedBuffer bounce_;
  AlignedBuffer fill_;
  uint64_t buffered_ = 0;       // bytes in bounce_
  uint64_t buffer_offset_ = 0;  // image offset of bounce_[0]
  bool finished_ = false;
  Status failed_;
  WriteStats stats_;
};

}  // namespace flashpipe::io
