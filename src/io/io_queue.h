// IoQueue: the one interface between the writer engine and a storage backend.
//
// A queue accepts up to depth() operations at once and completes them in any
// order. Backends: io_uring (UringQueue), a pool of threads doing O_DIRECT
// pwrite (ThreadQueue), one synchronous call at a time (SyncQueue, the
// "blocking" reference), a simulated device with a timing model (bench's
// SimQueue) and a fault-injecting one for tests (testing/fault_queue.h).
//
// Offsets are absolute on the underlying file or device: bounds are the
// Target's job, checked before Submit. A short transfer is finished by the
// queue itself (resubmitting the rest) or reported as an error; a completion
// with an OK status always means all `length` bytes were transferred.
// Thread-compatible: Submit/Wait/Sync from one thread.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string_view>

#include "base/status.h"

namespace flashpipe::io {

enum class OpKind : uint8_t {
  kWrite,      // buf -> [offset, offset+length)
  kRead,       // [offset, offset+length) -> buf
  kZeroOut,    // make the range read back as zeros (BLKZEROOUT / ZERO_RANGE)
  kDiscard,    // BLKDISCARD; content afterwards undefined
  kPunchHole,  // regular files: deallocate, reads back zeros
};

struct IoOp {
  OpKind kind = OpKind::kWrite;
  uint64_t offset = 0;
  uint64_t length = 0;
  uint8_t* buf = nullptr;  // aligned to the target's DIO memory alignment
  int buf_index = -1;      // index in RegisterBuffers(), or -1
  uint64_t tag = 0;        // returned in the completion
};

struct IoCompletion {
  uint64_t tag = 0;
  Status status;  // errors say op, offset and length
};

class IoQueue {
 public:
  virtual ~IoQueue() = default;
  virtual std::string_view name() const = 0;  // "io_uring", "threads", "sync", ...
  virtual unsigned depth() const = 0;
  virtual unsigned in_flight() const = 0;
  // REQUIRES: in_flight() < depth(). The op may start at once or at Wait().
  virtual Status Submit(const IoOp& op) = 0;
  // REQUIRES: in_flight() > 0. Blocks until one op completes.
  virtual Result<IoCompletion> Wait() = 0;
  // fdatasync (or the backend's equivalent). REQUIRES: in_flight() == 0.
  virtual Status Sync() = 0;
  // Optional: fixed buffers (io_uring). Failure (e.g. RLIMIT_MEMLOCK) is not
  // an error: the queue then uses plain buffers and buf_index is ignored.
  // A new call replaces the earlier set: one writer per queue at a time.
  virtual bool RegisterBuffers(std::span<const std::span<uint8_t>> /*buffers*/) { return false; }
};

}  // namespace flashpipe::io
