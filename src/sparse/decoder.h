// Decoder: a streaming, push-based parser of Android sparse images.
//
// Feed() takes any slice of the input, down to one byte at a time, validates
// it against every rule in docs/sparse_format.md, and emits Sink events. It
// does no I/O, starts no thread, and holds a fixed amount of memory whatever
// the image size (RAW payload is passed through to the sink as slices of the
// caller's buffer). Errors name the chunk index and the input byte offset:
//   "chunk 3 at input byte 0x2c: RAW total_sz 40 != 12 + 1 * 4096"
// After an error the decoder stays failed and returns the same Status.
//
// Zero-copy RAW: a caller that reads a seekable file may, whenever
// raw_pending() > 0, hand up to that many payload bytes to the sink by itself
// (e.g. read them straight into an aligned device buffer) and then call
// AdvanceRaw(n, crc_of_those_bytes) instead of feeding them.
//
// Thread-compatible: one thread at a time.
#pragma once

#include <cstdint>
#include <memory>
#include <span>

#include "base/status.h"
#include "sparse/format.h"
#include "sparse/sink.h"

namespace flashpipe::sparse {

struct DecoderOptions {
  // Check CRC32 chunks against the CRC of the expanded image so far.
  bool check_crc = true;
  // The AOSP fastboot client's split parts of a raw image whose size is not a
  // multiple of 4096 lack their final DONT_CARE: input that ends on a chunk
  // boundary with exactly one chunk missing and blocks short of total_blks is
  // accepted, the rest reported as OnSkip. Off for files; fastboot turns it on.
  bool tolerate_missing_tail = false;
};

class Decoder {
 public:
  // `sink` must outlive the decoder.
  explicit Decoder(Sink* sink, DecoderOptions options = {});
  ~Decoder();
  Decoder(const Decoder&) = delete;
  Decoder& operator=(const Decoder&) = delete;

  // Consumes all of `data` or fails. Data after the last chunk is an error.
  Status Feed(std::span<const uint8_t> data);
  // End of input. Fails on truncated input or totals that do not add up.
  Status Finish();

  // Bytes of the current RAW chunk's payload not yet consumed (0 outside RAW).
  uint64_t raw_pending() const;
  // Output offset of the next RAW payload byte (meaningful when raw_pending()).
  uint64_t raw_output_offset() const;
  // REQUIRES: n <= raw_pending(). The caller already delivered these bytes;
  // `crc` is Crc32Update(0, bytes) and feeds the CRC32 chunk check.
  Status AdvanceRaw(uint64_t n, uint32_t crc);

  bool header_parsed() const;
  const FileHeader& header() const;     // REQUIRES: header_parsed()
  // Bytes consumed so far. During a Sink::OnRaw call: the input offset of
  // that piece's first byte.
  uint64_t input_offset() const;
  uint32_t chunks_done() const;         // complete chunks so far
  bool finished() const;                // all total_chunks chunks consumed

 private:
  struct State;
  std::unique_ptr<State> s_;
};

}  // namespace flashpipe::sparse
