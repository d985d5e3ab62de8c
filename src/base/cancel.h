// CancelFlag: asks a long job (a write, a read, a benchmark) to stop at its
// next safe point. Cancel() may be called from another thread or from a
// signal handler (a lock-free atomic store is async-signal-safe); the job
// polls cancelled() between requests and returns Check()'s kCancelled status,
// unwinding as it would for an error: requests in flight are drained,
// temporary files removed, nothing committed.
//
// The flag remembers which signal asked (0: not a signal), so that the one
// place that turns a Status into an exit code can say 128 + signal.
#pragma once

#include <atomic>
#include <string>

#include "base/status.h"

namespace flashpipe {

class CancelFlag {
 public:
  static_assert(std::atomic<int>::is_always_lock_free, "Cancel() runs in signal handlers");

  // `signal_number`: the signal that asked, or 0. The first reason sticks.
  void Cancel(int signal_number = 0) noexcept {
    int none = kNotCancelled;
    state_.compare_exchange_strong(none, signal_number);
  }
  bool cancelled() const noexcept { return state_.load(std::memory_order_relaxed) != kNotCancelled; }
  // The signal that cancelled, 0 when none did (or not cancelled).
  int signal() const noexcept {
    int s = state_.load(std::memory_order_relaxed);
    return s == kNotCancelled ? 0 : s;
  }
  // OK, or kCancelled "interrupted by SIGINT" ("cancelled" without a signal).
  Status Check() const { return cancelled() ? Cancelled(Reason()) : Status::Ok(); }
  std::string Reason() const;

 private:
  static constexpr int kNotCancelled = -1;
  std::atomic<int> state_{kNotCancelled};
};

// "SIGINT", "SIGTERM", "signal 10".
std::string SignalName(int signal_number);

// OK when `flag` is null or not cancelled.
inline Status CheckCancel(const CancelFlag* flag) { return flag == nullptr ? Status::Ok() : flag->Check(); }

}  // namespace flashpipe
