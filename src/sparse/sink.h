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
// Any non-OK Status stops decoding and is returned to the caller unchanged.
#pragma once

#include <cstdint>
#include <span>

#include "base/status.h"
#include "sparse/format.h"

namespace flashpipe::sparse {

class Sink {
 public:
  virtual ~Sink() = default;
  virtual Status OnHeader(const FileHeader& /*header*/) { return Status::Ok(); }
  virtual Status OnRaw(uint64_t offset, std::span<const uint8_t> data) = 0;
  virtual Status OnFill(uint64_t offset, uint64_t length, uint32_t pattern) = 0;
  virtual Status OnSkip(uint64_t offset, uint64_t length) = 0;
  // After the last chunk of one image was validated (totals, CRC).
  virtual Status OnEnd() { return Status::Ok(); }
};

}  // namespace flashpipe::sparse
