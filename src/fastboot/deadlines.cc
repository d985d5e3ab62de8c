#include "fastboot/deadlines.h"

#include "base/units.h"

namespace flashpipe::fastboot {

RateFloor::RateFloor(const SessionLimits& limits, Clock::time_point start)
    : min_rate_(limits.min_download_rate), window_(limits.rate_window) {
  bool judged = min_rate_ > 0 && window_.count() > 0;
  next_ = judged ? start + window_ : Clock::time_point::max();
}

Status RateFloor::Check(uint64_t received, Clock::time_point now) {
  if (now < next_) return Status::Ok();
  uint64_t got = received - at_window_start_;
  uint64_t want = min_rate_ * static_cast<uint64_t>(window_.count()) / 1000;
  bool judged = !grace_;
  grace_ = false;
  at_window_start_ = received;
  next_ = now + window_;
  if (judged && got < want) {
    return TimedOut(fmt::format("download too slow: {} in the last {} ms, below the floor of {}/s", FormatBytes(got),
                                window_.count(), FormatBytes(min_rate_)));
  }
  return Status::Ok();
}

}  // namespace flashpipe::fastboot
