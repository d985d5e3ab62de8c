// RunHarness: every crash state EnumerateCrashStates picks for one log,
// rebuilt (DeviceReplay), read by the case's Checker and judged against
// the run's expectations (checker.h). Bounded by the Budget's state count
// and by max_seconds; what was not checked is reported, never passed over
// in silence.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "base/status.h"
#include "powercut/checker.h"
#include "powercut/crash_states.h"
#include "powercut/write_log.h"

namespace flashpipe::powercut {

struct HarnessOptions {
  Budget budget;
  double max_seconds = 120;
  size_t max_reported = 20;  // unacceptable states listed in full
};

struct Unacceptable {
  CrashState state;
  std::string reason;
};

struct HarnessReport {
  std::string name;
  uint64_t writes = 0, flushes = 0, fua = 0, marks = 0;
  uint64_t windows = 0, largest_window = 0;
  uint64_t generated = 0;   // states the enumeration found
  uint64_t planned = 0;     // kept within the budget
  uint64_t checked = 0;     // read and judged
  uint64_t distinct = 0;    // distinct contents read
  uint64_t fail_closed = 0; // acceptable only as fail-closed
  uint64_t unacceptable = 0;
  std::vector<Unacceptable> reported;
  bool out_of_time = false;
  double seconds = 0;

  // "state-file: 40 writes, 9 flushes, 0 FUA, 5 marks; 612 states (of 700
  // found), 88 distinct, 3 fail-closed, 0 unacceptable; 2.1 s".
  std::string Summary() const;
};

// REQUIRES: expectations.size() == log.marks() + 1, initial.size() covers
// the log's entries.
Result<HarnessReport> RunHarness(const WriteLog& log, std::vector<uint8_t> initial, Checker& checker,
                                 std::span<const Expectation> expectations, const HarnessOptions& options);

// Several checkers of one run (files on one file system): each state is
// rebuilt once and judged by each, one report per checker; the time budget
// is shared.
struct HarnessCase {
  Checker* checker;
  std::vector<Expectation> expectations;
};
Result<std::vector<HarnessReport>> RunHarness(const WriteLog& log, std::vector<uint8_t> initial,
                                              std::span<HarnessCase> cases, const HarnessOptions& options);

// Whether `r` is acceptable with `acks` steps acknowledged; the reason when not.
Status Judge(const Reading& r, size_t acks, std::span<const Expectation> expectations, bool fail_closed_ok);

}  // namespace flashpipe::powercut
