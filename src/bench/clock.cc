#include "bench/clock.h"

#include <time.h>

namespace flashpipe::bench {

uint64_t RealClock::Now() {
  auto d = std::chrono::steady_clock::now() - epoch_;
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(d).count());
}

void RealClock::SleepUntil(uint64_t t) {
  // Sleep most of the way, then spin the last stretch: nanosleep overshoots
  // by tens of microseconds, which would blur a 300 us command time.
  constexpr uint64_t kSpinNs = 60'000;
  for (uint64_t now = Now(); now < t; now = Now()) {
    if (t - now > kSpinNs) {
      uint64_t d = t - now - kSpinNs;
      timespec ts{static_cast<time_t>(d / 1'000'000'000), static_cast<long>(d % 1'000'000'000)};
      nanosleep(&ts, nullptr);
    }
  }
}

void RealClock::Spend(uint64_t ns) {
  const uint64_t end = Now() + ns;
  while (Now() < end) {
  }
}

}  // namespace flashpipe::bench
