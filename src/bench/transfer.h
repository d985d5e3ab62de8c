// Transfer tests: mmc_test's cases 37-40 (sequential write and read, one
// request size at a time, blocking vs non-blocking), generalised to any
// IoQueue and any depth.
//
//   blocking      depth 1: prepare a request, submit it, wait for it, repeat.
//   non-blocking  depth 2: prepare request k+1 while k is in flight (two
//                 buffers alternating), as mmc_test does with its two
//                 request structs.
//   queued        depth Q: up to Q requests in flight, Q buffers.
//
// The host work per request (Prep) is the same in every mode, so only the
// overlap differs. Writes prepare a buffer before submitting it (copy the
// data in, CRC it, or spin for a fixed time); reads consume a buffer after it
// completes (copy the data out, CRC it, spin) and only then reuse it for the
// next read. Either way, for n requests of device time s and host time p:
// depth 1 takes n*(p+s) and depth >= 2 at best p + s + (n-1)*max(p,s).
//
// Writes are timed up to and including the final Sync (fdatasync), so a
// device's write cache does not flatter them; reads are timed to the last
// completion. Time is read from the Clock, so the same code measures a real
// device (RealClock) and a simulated one (SkipClock, ManualClock).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/cancel.h"
#include "base/status.h"
#include "bench/clock.h"
#include "io/io_queue.h"

namespace flashpipe::bench {

enum class Direction { kWrite, kRead };
enum class Mode { kBlocking, kNonBlocking, kQueued };

const char* DirectionName(Direction d);  // "write", "read"
const char* ModeName(Mode m);            // "blocking", "non-blocking", "queued"
Result<std::vector<Mode>> ParseModes(std::string_view text);            // "blocking,queued"
Result<std::vector<Direction>> ParseDirections(std::string_view text);  // "write,read"
// Depth a mode runs at: 1, 2, or queue_depth.
unsigned ModeDepth(Mode m, unsigned queue_depth);

struct Prep {
  enum Kind { kNone, kCopy, kCrc, kSpin } kind = kCopy;
  uint64_t spin_ns = 0;  // kSpin only
};
Result<Prep> ParsePrep(std::string_view text);  // none | copy | crc | spin:US
std::string PrepName(const Prep& prep);         // inverse of ParsePrep

struct TransferSpec {
  Direction direction = Direction::kWrite;
  Mode mode = Mode::kBlocking;
  unsigned depth = 1;          // requests in flight at most (and buffers)
  uint64_t request = 0;        // bytes per request
  uint64_t count = 0;          // requests
  uint64_t offset = 0;         // absolute offset of the first request
  uint32_t mem_align = 4096;   // buffer alignment
  Prep prep;
  // Once set, no further request is submitted: those in flight complete and
  // the run returns the flag's kCancelled status.
  const CancelFlag* cancel = nullptr;
};

struct TransferResult {
  Direction direction = Direction::kWrite;
  Mode mode = Mode::kBlocking;
  unsigned depth = 1;
  uint64_t request = 0;
  uint64_t count = 0;
  uint64_t ns = 0;             // elapsed on the clock
  uint32_t checksum = 0;       // of the prep work (keeps it from being optimised away)

  uint64_t bytes() const { return request * count; }
};

// Runs one transfer test on `queue`. REQUIRES: queue.in_flight() == 0,
// queue.depth() >= spec.depth, request and offset aligned for the queue.
Result<TransferResult> RunTransfer(io::IoQueue& queue, Clock& clock, const TransferSpec& spec);

}  // namespace flashpipe::bench
