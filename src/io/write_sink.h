// WriteSink: a sparse::Sink that puts an image on storage and is finished
// once, the one interface every write model is driven and completed through:
//   io::ImageWriter   the pipelined engine (production);
//   io::BounceWriter  the naive bootloader model it is compared with;
//   io::DiscardWriter validates event ranges, writes nothing.
// Callers (the fastboot daemon, the benchmark) feed events, call Finish()
// and read stats() without knowing which model they hold (io/write_model.h
// makes one from a WriteModel).
#pragma once

#include <cstdint>

#include "base/status.h"
#include "sparse/sink.h"

namespace flashpipe::io {

struct WriteStats {
  uint64_t image_size = 0;
  uint64_t bytes_written = 0;    // data bytes sent to the device (per device)
  uint64_t bytes_borrowed = 0;   // of which written from the caller's memory (borrow_raw)
  uint64_t bytes_zeroed = 0;     // by zeroout / holes
  uint64_t bytes_discarded = 0;
  uint64_t bytes_skipped = 0;    // DONT_CARE left alone
  uint64_t requests = 0;
  // End (image offset) of the furthest write, zeroout or discard issued to
  // any device: after a failure, nothing at or beyond it was changed.
  uint64_t changed_end = 0;
  bool verified = false;         // verify ran and matched
};

class WriteSink : public sparse::Sink {
 public:
  // Completes what the events started: outstanding writes, then the
  // model's fdatasync (unless its options said the caller syncs later).
  // Call once, also after an event failed (it then returns that error or
  // the first one found while draining). No event may follow.
  virtual Status Finish() = 0;
  virtual const WriteStats& stats() const = 0;
};

}  // namespace flashpipe::io
