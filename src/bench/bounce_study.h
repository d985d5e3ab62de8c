// The bounce-buffer study's driver: a sparse image written once per variant
// on the same target -- the bootloader model (io::BounceWriter, one blocking
// request per buffer of N logical blocks, or per RAW chunk with 'chunk')
// and the pipelined engine (io::ImageWriter) -- each through the same
// io::WriteSink interface. What the model does is stated in
// io/bounce_writer.h; 'chunk' gives it a buffer as large as the image's
// largest RAW chunk (memory grows with the chunk: this is the study, not the
// engine).
//
// Every variant decodes the image with sparse::DecodeFd and is timed on the
// target's clock from the first byte read to the end of Finish (its final
// fdatasync); buffers are allocated before the clock starts. Rates are in
// MB/s (10^6) of the bytes the image defines (RAW + FILL), the same
// numerator for every variant.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "bench/clock.h"
#include "io/image_writer.h"
#include "io/write_sink.h"

namespace flashpipe::bench {

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

// The sink of one variant on `device`: BounceWriter with N logical blocks,
// or with the largest RAW chunk ('chunk'); the engine with `options`.
Result<std::unique_ptr<io::WriteSink>> MakeVariantSink(const StudyVariant& v, const ImageSummary& summary,
                                                       const io::Device& device,
                                                       const io::WriterOptions& options);
// Writes the image once with variant `v` onto `device` (bounce variants want
// a queue of depth 1: they never have more than one request in flight).
Result<StudyResult> RunVariant(const std::string& image, const ImageSummary& summary, const StudyVariant& v,
                               const io::Device& device, const io::WriterOptions& options, Clock& clock);

}  // namespace flashpipe::bench
