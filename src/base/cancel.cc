#include "base/cancel.h"

#include <csignal>

#include <fmt/format.h>

namespace flashpipe {

std::string SignalName(int signal_number) {
  switch (signal_number) {
    case SIGINT: return "SIGINT";
    case SIGTERM: return "SIGTERM";
    case SIGHUP: return "SIGHUP";
    default: return fmt::format("signal {}", signal_number);
  }
}

std::string CancelFlag::Reason() const {
  int s = signal();
  return s == 0 ? "cancelled" : "interrupted by " + SignalName(s);
}

}  // namespace flashpipe
