#include "base/log.h"

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <mutex>

#include "base/fd_io.h"

namespace flashpipe::log {
namespace {

struct State {
  std::mutex mu;
  std::string prefix = "flashpipe";
  std::chrono::steady_clock::time_point start = std::chrono::steady_clock::now();
};

State& Global() {
  static State s;
  return s;
}

std::atomic<bool> g_verbose{false};

}  // namespace

void Init(std::string_view prefix, bool verbose) {
  State& s = Global();
  std::lock_guard lock(s.mu);
  s.prefix = prefix;
  s.start = std::chrono::steady_clock::now();
  g_verbose = verbose;
}

bool Verbose() { return g_verbose.load(std::memory_order_relaxed); }

void Write(std::string_view level, std::string_view line) {
  State& s = Global();
  std::string out;
  {
    std::lock_guard lock(s.mu);
    out = s.prefix + ": ";
    // With -v every line is stamped, so the log reads as one timeline.
    if (level == "debug" || Verbose()) {
      double t = std::chrono::duration<double>(std::chrono::steady_clock::now() - s.start).count();
      out += fmt::format("{:.3f}: ", t);
    }
    if (level != "debug" && !level.empty()) out += fmt::format("{}: ", level);
  }
  out += line;
  out += '\n';
  // One write: lines from several threads do not interleave. A failing
  // stderr has nowhere to report to.
  (void)WriteAll(STDERR_FILENO, {reinterpret_cast<const uint8_t*>(out.data()), out.size()}, "stderr");
}

std::string Printable(std::string_view text, size_t max) {
  std::string out;
  bool cut = text.size() > max;
  if (cut) text = text.substr(0, max);
  for (char ch : text) {
    auto c = static_cast<unsigned char>(ch);
    if (c == '\\') {
      out += "\\\\";
    } else if (c < 0x20 || c >= 0x7f) {
      out += fmt::format("\\x{:02x}", c);
    } else {
      out += ch;
    }
  }
  if (cut) out += "...";
  return out;
}

}  // namespace flashpipe::log
