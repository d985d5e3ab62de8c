#include "input/progress.h"

#include <fmt/format.h>

#include "base/units.h"

namespace flashpipe::input {
namespace {

std::string Clock(double s) {
  auto t = static_cast<uint64_t>(s + 0.5);
  if (t >= 3600) return fmt::format("{}:{:02}:{:02}", t / 3600, t / 60 % 60, t % 60);
  return fmt::format("{}:{:02}", t / 60, t % 60);
}

}  // namespace

std::string FormatProgress(uint64_t done, uint64_t total, double seconds, bool bar) {
  double rate = seconds > 0 ? static_cast<double>(done) / seconds / (1 << 20) : 0;
  std::string speed = fmt::format("{:.1f} MiB/s", rate);
  if (total == 0) return fmt::format("{}  {}  {}", FormatBytes(done), speed, Clock(seconds));
  int pct = static_cast<int>(static_cast<double>(std::min(done, total)) * 100.0 / static_cast<double>(total));
  std::string eta = rate > 0 && done < total
                        ? Clock(static_cast<double>(total - done) / (rate * (1 << 20)))
                        : "-:--";
  if (!bar) return fmt::format("{} of {} ({}%)  {}  ETA {}", FormatBytes(done), FormatBytes(total), pct, speed, eta);
  int filled = pct / 5;
  return fmt::format("[{}{}] {:3}%  {} / {}  {}  ETA {}", std::string(filled, '#'), std::string(20 - filled, '-'),
                     pct, FormatBytes(done), FormatBytes(total), speed, eta);
}

Progress::Progress(FILE* out, ProgressMode mode, std::string label)
    : out_(out), mode_(mode), label_(std::move(label)) {}

void Progress::Update(uint64_t done, uint64_t total) {
  if (mode_ == ProgressMode::kOff) return;
  double now = Seconds();
  if (mode_ == ProgressMode::kBar) {
    if (now - last_print_ < 0.1) return;
    std::fprintf(out_, "\r%s\x1b[K", FormatProgress(done, total, now, true).c_str());
    drawn_ = true;
  } else {
    bool step = total > 0 && (done - last_done_) * 10 >= total;
    if (now - last_print_ < 2.0 && !step) return;
    std::fprintf(out_, "%s: %s\n", label_.c_str(), FormatProgress(done, total, now, false).c_str());
    last_done_ = done;
  }
  last_print_ = now;
  std::fflush(out_);
}

void Progress::Done(uint64_t done, uint64_t total) {
  if (mode_ == ProgressMode::kOff) return;
  std::string line = FormatProgress(done, total, Seconds(), mode_ == ProgressMode::kBar);
  if (mode_ == ProgressMode::kBar) {
    std::fprintf(out_, "\r%s\x1b[K\n", line.c_str());
  } else {
    std::fprintf(out_, "%s: %s\n", label_.c_str(), line.c_str());
  }
  std::fflush(out_);
}

}  // namespace flashpipe::input
