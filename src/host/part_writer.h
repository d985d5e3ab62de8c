// WritePart: the bytes of one planned part (part_plan.h), produced from the
// records and the payload stream and handed to a DataOut as gather lists:
// headers and small payloads staged in a 64 KiB buffer, larger RAW payload
// passed as the payload source's own memory (no copy here), or, when both
// the source and the output deal in files, as file spans the kernel sends
// (small ones are read into the stage). Exactly part.bytes bytes come out, or
// an error: a part whose records do not add up to its plan is never sent
// short or long.
#pragma once

#include <cstdint>
#include <span>

#include "base/status.h"
#include "host/part_plan.h"
#include "host/record.h"

namespace flashpipe::host {

// Bytes of a file: where a stretch of the payload stream lies in the image.
struct FileSpan {
  int fd = -1;
  uint64_t offset = 0, size = 0;
};

// The payload stream, read in order by one part writer.
class PayloadSource {
 public:
  virtual ~PayloadSource() = default;
  // 1..max bytes of the payload stream from `offset` on (waiting for them
  // while they are read); valid until the next call.
  virtual Result<std::span<const uint8_t>> Payload(uint64_t offset, size_t max) = 0;
  // Whether PayloadFile can say where every payload byte lies in the image
  // file (a planned sparse file); then a writer to a DataOut that sends
  // files reads the payload through PayloadFile only.
  virtual bool in_file() const { return false; }
  // 1..max bytes of the payload stream from `offset` on, as a file span.
  virtual Result<FileSpan> PayloadFile(uint64_t /*offset*/, uint64_t /*max*/) {
    return Internal("the payload is not in a file");
  }
};

// Where a part's bytes go, in order. One that can_send_file takes file
// spans too (SendFile: `head`, then the span's bytes, read by the kernel).
class DataOut {
 public:
  virtual ~DataOut() = default;
  virtual Status Send(std::span<const std::span<const uint8_t>> pieces) = 0;
  virtual bool can_send_file() const { return false; }
  virtual Status SendFile(std::span<const std::span<const uint8_t>> /*head*/, const FileSpan& /*file*/) {
    return Internal("this output sends no files");
  }
};

Status WritePart(const Part& part, const ImageShape& shape, RecordSource& records, PayloadSource& payload,
                 DataOut& out);

}  // namespace flashpipe::host
