// Time limits that keep one client from holding the device forever: a whole
// session may last at most `session_timeout`, and a download must keep
// arriving at `min_download_rate` or more. The rate is judged once per
// `rate_window`, over the bytes of that window; the first window is a grace
// period (connection start, a client that reads its file first) that is not
// judged. Pure: the caller supplies the clock.
#pragma once

#include <chrono>
#include <cstdint>

#include "base/status.h"

namespace flashpipe::fastboot {

struct SessionLimits {
  std::chrono::seconds session_timeout{3600};  // 0 = none
  uint64_t min_download_rate = 64 << 10;       // bytes per second; 0 = none
  std::chrono::milliseconds rate_window{10000};
};

class RateFloor {
 public:
  using Clock = std::chrono::steady_clock;
  RateFloor(const SessionLimits& limits, Clock::time_point start);

  // When Check must next be called (max() when the rate is not judged).
  Clock::time_point next_check() const { return next_; }
  // `received`: bytes of the download so far. Before next_check() this
  // does nothing; after it, it closes the window and fails (kTimedOut) when
  // the window brought fewer than min_download_rate * rate_window bytes.
  Status Check(uint64_t received, Clock::time_point now);

 private:
  uint64_t min_rate_;
  std::chrono::milliseconds window_;
  Clock::time_point next_;
  uint64_t at_window_start_ = 0;
  bool grace_ = true;
};

}  // namespace flashpipe::fastboot
