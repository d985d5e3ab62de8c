// The bounce-buffer study: a sparse image written the way a bootloader's
// fastboot does it, for several bounce-buffer sizes, against the pipelined
// engine (io::ImageWriter) on the same target.
//
// BounceWriter is the bootloader model (a sparse::Sink):
//   RAW        copied into one aligned bounce buffer of N logical blocks; each
//              time it is full (and at the end of every RAW chunk) it is
//              written with one blocking request (submit, wait).
//   FILL       a fill buffer of the same size is filled with the pattern once
//              per chunk, then written with blocking requests until the chunk
//              is covered -- zeros included, as a bootloader does.
//   DONT_CARE  skipped.
// 'chunk' as the size means a buffer as large as the largest RAW chunk of the
// image, i.e. one write per chunk (memory grows with the chunk size: this is
// the study, not the engine).
//
// Every variant decodes the image with sparse::DecodeFd and is timed on the
// target's clock from the first byte read to the final Sync. Rates are in MB/s
// (10^6) of the bytes the image defines (RAW + FILL), the same numerator for
// every variant.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/aligned_buffer.h"
#include "base/status.h"
#include "bench/clock.h"
#include "io/image_writer.h"
#include "io/io_queue.h"
#include "sparse/sink.h"

namespace flashpipe::bench {

class BounceWriter : public sparse::Sink {
 public:
  // Writes image byte x at base_offset + x through `queue` (depth >= 1).
  BounceWriter(io::IoQueue* queue, uint64_t base_offset, uint64_t buffer_bytes, size_t mem_align);

  Status OnRaw(uint64_t offset, std::span<const uint8_t> data) override;
  Status OnFill(uint64_t offset, uint64_t length, uint32_t pattern) override;
  Status OnSkip(uint64_t offset, uint64_t length) override;
  Status OnChunk(const sparse::ChunkInfo& chunk) override;
  // Writes what is left in the bounce buffer, then Sync.
  Status Finish();

  uint64_t writes() const { return writes_; }
  uint64_t bytes_written() const { return bytes_written_; }

 private:
  Status Flush();
  Status WriteBlocking(uint64_t image_offset, const uint8_t* buf, uint64_t length);

  io::IoQueue* queue_;
  uint64_t base_offset_;
  uint64_t capacity_;          // N blocks; buffer_ may be rounded up past it
  AlignedBuffer buffer_;
  uint64_t buffered_ = 0;      // bytes in buffer_
  uint64_t buffer_offset_ = 0; // image offset of buffer_[0]
  uint64_t writes_ = 0;
  uint64_t bytes_written_ = 0;
};

// What an image holds, from one untimed pass over it.
struct ImageSummary {
  uint64_t image_size = 0;
  uint64_t raw_bytes = 0;
  uint64_t fill_bytes = 0;
  uint64_t zero_fill_bytes = 0;  // part of fill_bytes
  uint64_t skip_bytes = 0;
  uint64_t chunks = 0;
  uint64_t largest_raw = 0;      // bytes of the largest RAW chunk
};
Result<ImageSummary> SummarizeSparse(const std::string& path);

struct StudyVariant {
  uint64_t buffer_blocks = 0;  // 0 with chunk or pipelined
  bool chunk = false;          // buffer = largest RAW chunk
  bool pipelined = false;      // io::ImageWriter
};
// "100,16384,chunk" -> the bounce variants; the pipelined one is added by the
// caller (the study always ends with it).
Result<std::vector<StudyVariant>> ParseBufferBlocks(std::string_view text);
std::string VariantLabel(const StudyVariant& v);  // "buffer 100 blocks", "buffer = chunk", "pipelined"

struct StudyResult {
  StudyVariant variant;
  uint64_t ns = 0;
  uint64_t data_bytes = 0;  // RAW + FILL bytes of the image
  uint64_t requests = 0;    // requests issued (writes; the engine's also zero-outs)
  uint64_t device_ns = 0;   // sim targets: time the device was busy (0 = unknown)
};
// "buffer 100 blocks: 12.345 s, 3.4 MB/s (5.26x the fastest)"; the fastest
// says "(fastest)".
std::string FormatStudyLine(const StudyResult& r, uint64_t fastest_ns);

// Writes the image once with a bounce variant. `queue` has depth >= 1.
Result<StudyResult> RunBounce(const std::string& image, const ImageSummary& summary, const StudyVariant& v,
                              io::IoQueue* queue, Clock& clock, uint64_t base_offset, uint32_t lbs,
                              size_t mem_align);
// Writes the image once with the pipelined engine onto `device`.
Result<StudyResult> RunPipelined(const std::string& image, const ImageSummary& summary,
                                 const io::Device& device, const io::WriterOptions& options, Clock& clock);

}  // namespace flashpipe::bench
