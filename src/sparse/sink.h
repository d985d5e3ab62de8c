// Sink: where a sparse decoder (or any image source) sends the expanded image.
//
// Events arrive in input order; offsets are byte offsets in the expanded image.
// An image of several overlaid parts (fastboot's split images) produces one
// OnHeader..OnEnd sequence per part, and later parts overwrite earlier ones.
//   OnRaw   literal bytes; `data` is valid only during the call. One RAW chunk
//           may arrive as several OnRaw calls with increasing offsets.
//   OnFill  `length` bytes of the 4-byte little-endian `pattern` repeated
//           (length is a multiple of 4; pattern 0 means zeros).
//   OnSkip  DONT_CARE: the content of this range is not defined by the image.
//   OnChunk once a chunk is complete and valid (after its data events): its
//           header fields and offsets, for tools that show or re-split images.
// Any non-OK Status stops decoding and is returned to the caller unchanged.
#pragma once

#include <cstdint>
#include <span>

#include "base/status.h"
#include "sparse/format.h"

namespace flashpipe::sparse {

// One chunk as the decoder saw it (see Sink::OnChunk).
struct ChunkInfo {
  uint32_t index = 0;          // 0-based
  uint16_t type = 0;           // ChunkType
  uint32_t blocks = 0;         // chunk_sz
  uint32_t total_sz = 0;       // input bytes, header included
  uint64_t input_offset = 0;   // of the chunk header
  uint64_t payload_offset = 0; // input offset of the payload (after any extra header bytes)
  uint64_t output_offset = 0;  // bytes
  uint32_t value = 0;          // FILL pattern or CRC32 value as stored
  bool crc_checked = false;    // CRC32 chunk: compared with computed_crc (and equal)
  uint32_t computed_crc = 0;
};

class Sink {
 public:
  virtual ~Sink() = default;
  virtual Status OnHeader(const FileHeader& /*header*/) { return Status::Ok(); }
  virtual Status OnRaw(uint64_t offset, std::span<const uint8_t> data) = 0;
  virtual Status OnFill(uint64_t offset, uint64_t length, uint32_t pattern) = 0;
  virtual Status OnSkip(uint64_t offset, uint64_t length) = 0;
  virtual Status OnChunk(const ChunkInfo& /*chunk*/) { return Status::Ok(); }
  // After the last chunk of one image was validated (totals, CRC).
  virtual Status OnEnd() { return Status::Ok(); }
};

// A Sink that accepts and ignores every data event: derive from it to watch
// only headers or chunks (validation, dump, planning).
class NullSink : public Sink {
 public:
  Status OnRaw(uint64_t, std::span<const uint8_t>) override { return Status::Ok(); }
  Status OnFill(uint64_t, uint64_t, uint32_t) override { return Status::Ok(); }
  Status OnSkip(uint64_t, uint64_t) override { return Status::Ok(); }
};

}  // namespace flashpipe::sparse
