#include "base/read_ahead.h"

#include <fcntl.h>

#include <algorithm>

namespace flashpipe {

void ReadAhead::At(uint64_t pos) {
  if (pos < from_ || pos > to_) from_ = to_ = pos;
  if (to_ >= end_ || to_ - pos >= window_ / 2) return;
  const uint64_t to = std::min(end_, pos + window_);
  // Advice: a failure costs speed, never correctness.
  (void)::posix_fadvise(fd_, static_cast<off_t>(to_), static_cast<off_t>(to - to_), POSIX_FADV_WILLNEED);
  ++calls_;
  from_ = pos;
  to_ = to;
}

}  // namespace flashpipe
