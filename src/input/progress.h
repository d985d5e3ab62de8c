// Progress: what `flashpipe write` shows while it works, on stderr.
//   bar    on a terminal: one line redrawn in place, at most 10 times a second
//          [##########----------]  48%  1.2 GiB / 2.5 GiB  812.4 MiB/s  ETA 0:02
//   lines  otherwise (logs, CI): a plain line every 2 s or every 10 %
//   off    --no-progress, or --json
// The total may be unknown (a raw stream): then no bar, percentage or ETA.
// FormatProgress is the pure part, for tests.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>

namespace flashpipe::input {

enum class ProgressMode { kOff, kBar, kLines };

// Bar style when `bar`, else the plain line. total 0 = unknown.
std::string FormatProgress(uint64_t done, uint64_t total, double seconds, bool bar);

class Progress {
 public:
  // `label` starts each plain line ("flashpipe write: 1.0 GiB of ...").
  Progress(FILE* out, ProgressMode mode, std::string label = "flashpipe write");
  // Any thread that the writer calls back on; calls are serialized by it.
  void Update(uint64_t done, uint64_t total);
  // Final state, ends the bar's line.
  void Done(uint64_t done, uint64_t total);

 private:
  using Clock = std::chrono::steady_clock;
  double Seconds() const { return std::chrono::duration<double>(Clock::now() - start_).count(); }
  FILE* out_;
  ProgressMode mode_;
  std::string label_;
  Clock::time_point start_ = Clock::now();
  double last_print_ = -1;
  uint64_t last_done_ = 0;
  bool drawn_ = false;
};

}  // namespace flashpipe::input
