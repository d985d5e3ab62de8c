// Clock: the time source a benchmark reads, so that the same benchmark code
// measures a real device in wall-clock time and a simulated one in virtual
// time.
//
//   RealClock    steady_clock; SleepUntil sleeps, Spend busy-spins.
//   SkipClock    host time is real (whatever the host does between two calls
//                counts as it happens), but SleepUntil jumps instead of
//                sleeping: a simulated device's service time costs nothing in
//                wall-clock time, and host work still overlaps it exactly as
//                it would in real time. Spend(d) is charged, not spun: a fixed
//                host cost is exact even when the machine is loaded and the
//                spinning thread would be preempted. What `sim:` targets use
//                by default.
//   ManualClock  nothing moves unless told: Spend(d) and SleepUntil(t) are the
//                only ways time passes. Tests use it to check the model exactly.
//
// All times are nanoseconds since the clock's own epoch (its construction).
// Thread-compatible: one benchmark thread reads and moves a clock.
#pragma once

#include <chrono>
#include <cstdint>

namespace flashpipe::bench {

class Clock {
 public:
  virtual ~Clock() = default;
  virtual uint64_t Now() = 0;
  // Returns once Now() >= t.
  virtual void SleepUntil(uint64_t t) = 0;
  // Host work of a fixed cost: returns after `ns` of host time has passed.
  virtual void Spend(uint64_t ns) = 0;
};

class RealClock : public Clock {
 public:
  RealClock() : epoch_(std::chrono::steady_clock::now()) {}
  uint64_t Now() override;
  void SleepUntil(uint64_t t) override;
  void Spend(uint64_t ns) override;

 private:
  std::chrono::steady_clock::time_point epoch_;
};

class SkipClock : public Clock {
 public:
  uint64_t Now() override { return real_.Now() + skipped_; }
  void SleepUntil(uint64_t t) override {
    uint64_t now = Now();
    if (t > now) skipped_ += t - now;
  }
  void Spend(uint64_t ns) override { skipped_ += ns; }

 private:
  RealClock real_;
  uint64_t skipped_ = 0;
};

class ManualClock : public Clock {
 public:
  uint64_t Now() override { return now_; }
  void SleepUntil(uint64_t t) override {
    if (t > now_) now_ = t;
  }
  void Spend(uint64_t ns) override { now_ += ns; }

 private:
  uint64_t now_ = 0;
};

}  // namespace flashpipe::bench
