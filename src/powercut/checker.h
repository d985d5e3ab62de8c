// Checker: what one case of the power-cut harness makes of a device after a
// cut, as the product would find it on the next start (the daemon's state
// file read as `serve` reads it, the boot control block as a bootloader
// reads it, liblp metadata opened and repaired as the daemon opens it, a
// file after fsck). A Reading is compared by its text: two device contents
// that read the same are the same to the user.
//
// Expectations come from the run itself: the reading before it (index 0)
// and one per acknowledged step (a mark the run put in the log once the
// product reported success; the snapshot taken then). Between the k-th and
// the (k+1)-th acknowledgement a state must read as expectation k or k+1:
// old or new, and never older than what was acknowledged. A reading that is
// fail-closed (a torn state file read as locked, a set of parts without its
// first part) is acceptable only where the checker allows it and only while
// a change is under way (expectations k and k+1 differ).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace flashpipe::powercut {

struct Reading {
  std::string text;
  bool fail_closed = false;
};

struct Expectation {
  bool any = false;   // no promise before this step (a block device written in place)
  Reading reading;
  std::string label;  // the mark's text: the step acknowledged
};

class Checker {
 public:
  virtual ~Checker() = default;
  virtual std::string_view name() const = 0;
  // The bytes it reads, [offset, offset + length); length 0: the whole device.
  // Equal content there means an equal reading (the harness caches by it).
  virtual std::pair<uint64_t, uint64_t> region() const { return {0, 0}; }
  // Errors are the harness's own failures (a tool missing), never verdicts.
  virtual Result<Reading> Read(std::span<const uint8_t> device) = 0;
  // A snapshot the run left for a step: a device image by default.
  virtual Result<Reading> ReadSnapshot(const std::string& path);
  virtual bool fail_closed_ok() const { return false; }
};

// A snapshot's or an image's bytes, the whole file.
Result<std::vector<uint8_t>> ReadWholeFile(const std::string& path);

}  // namespace flashpipe::powercut
