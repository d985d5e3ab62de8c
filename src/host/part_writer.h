// WritePart: the bytes of one planned part (part_plan.h), produced from the
// records and the payload stream and handed to a DataOut as gather lists:
// headers and small payloads staged in a 64 KiB buffer, larger RAW payload
// passed as the payload source's own memory (no copy here). Exactly part.bytes bytes come out, or
// an error: a part whose records do not add up to its plan is never sent
// short or long.
#pragma once

#include <cstdint>
#include <span>

#include "base/status.h"
#include "host/part_plan.h"
#include "host/record.h"

namespace flashpipe::host {

// The payload stream, read in order by one part writer.
class PayloadSource {
 public:
  virtual ~PayloadSource() = default;
  // 1..max bytes of the payload stream from `offset` on (waiting for them
  // while they are read); valid until the next call.
  virtual Result<std::span<const uint8_t>> Payload(uint64_t offset, size_t max) = 0;
};

// Where a part's bytes go, in order.
class DataOut {
 public:
  virtual ~DataOut() = default;
  virtual Status Send(std::span<const std::span<const uint8_t>> pieces) = 0;
};

Status WritePart(const Part& part, const ImageShape& shape, RecordSource& records, PayloadSource& payload,
                 DataOut& out);

}  // namespace flashpipe::host
