#include "input/progress.h"

#include <fmt/format.h>

#include "base/json.h"
#include "base/units.h"

namespace flashpipe::input {
namespace {


std::string ClockText(double s) {
  auto t = static_cast<uint64_t>(s + 0.5);
  if (t >= 3600) return fmt::format("{}:{:02}:{:02}", t / 3600, t / 60 % 60, t % 60);
  return fmt::format("{}:{:02}", t / 60, t % 60);
}

double Rate(uint64_t bytes, double seconds) { return seconds > 0 ? static_cast<double>(bytes) / seconds : 0; }

std::string JsonSize(uint64_t v) { return v == 0 ? "null" : std::to_string(v); }

// Minimum seconds between two running lines, by mode.
double Interval(ProgressMode mode) {
  static constexpr double kIntervals[] = {0, 0.1, 2.0, 0.5};  // off, bar, lines, json
  return kIntervals[static_cast<size_t>(mode)];
}

}  // namespace

std::string_view PhaseName(Phase phase) {
  static constexpr std::string_view kNames[kPhases] = {"writing", "syncing", "verifying", "reading"};
  return kNames[static_cast<size_t>(phase)];
}

std::string FormatProgress(uint64_t done, uint64_t total, double seconds, bool bar) {
  double rate = Rate(done, seconds) / (1 << 20);
  std::string speed = fmt::format("{:.1f} MiB/s", rate);
  if (total == 0) return fmt::format("{}  {}  {}", FormatBytes(done), speed, ClockText(seconds));
  int pct = static_cast<int>(static_cast<double>(std::min(done, total)) * 100.0 / static_cast<double>(total));
  std::string eta = rate > 0 && done < total
                        ? ClockText(static_cast<double>(total - done) / (rate * (1 << 20)))
                        : "-:--";
  if (!bar) return fmt::format("{} of {} ({}%)  {}  ETA {}", FormatBytes(done), FormatBytes(total), pct, speed, eta);
  int filled = pct / 5;
  return fmt::format("[{}{}] {:3}%  {} / {}  {}  ETA {}", std::string(filled, '#'), std::string(20 - filled, '-'),
                     pct, FormatBytes(done), FormatBytes(total), speed, eta);
}

std::string FormatPhaseResult(Phase phase, uint64_t bytes, double seconds) {
  if (phase == Phase::kSyncing) return fmt::format("{:.1f} s", seconds);
  return fmt::format("{} in {:.1f} s, {:.1f} MiB/s", FormatBytes(bytes), seconds, Rate(bytes, seconds) / (1 << 20));
}

Progress::Progress(FILE* out, ProgressMode mode, std::string label, FILE* events)
    : out_(out), mode_(mode), label_(std::move(label)), events_(events) {
  command_ = label_.starts_with("flashpipe ") ? label_.substr(10) : label_;
}

Progress::~Progress() { Stop(); }

void Progress::Begin(Phase phase, uint64_t total) {
  End();
  phase_ = phase;
  phase_start_ = Clock::now();
  done_ = last_done_ = 0;
  total_ = total;
  last_print_ = 0;
  std::string name(PhaseName(phase));
  if (mode_ == ProgressMode::kBar) {
    std::fprintf(out_, "\r%-10s \x1b[K", name.c_str());
  } else if (mode_ == ProgressMode::kLines) {
    std::fprintf(out_, "%s: %s%s\n", label_.c_str(), name.c_str(), total ? (" " + FormatBytes(total)).c_str() : "");
  }
  Event("phase_start", fmt::format("\"phase\": \"{}\", \"total\": {}", name, JsonSize(total)));
  if (out_ != nullptr && mode_ != ProgressMode::kOff) std::fflush(out_);
}

void Progress::Update(uint64_t done, uint64_t total) {
  if (!phase_) return;
  done_ = std::max(done_, done);
  if (total != 0) total_ = total;
  double now = Since(phase_start_);
  bool step = mode_ == ProgressMode::kLines && total_ > 0 && (done_ - last_done_) * 10 >= total_;
  if (mode_ == ProgressMode::kOff || (now - last_print_ < Interval(mode_) && !step)) return;
  last_print_ = now;
  last_done_ = done_;
  Draw(false);
}

void Progress::Draw(bool final) {
  double secs = Since(phase_start_);
  std::string name(PhaseName(*phase_));
  if (mode_ == ProgressMode::kJson) {
    double rate = Rate(done_, secs);
    std::string eta = total_ > done_ && rate > 0 ? fmt::format("{:.1f}", static_cast<double>(total_ - done_) / rate)
                                                 : "null";
    Event("progress", fmt::format("\"phase\": \"{}\", \"bytes\": {}, \"total\": {}, \"bytes_per_second\": {:.0f}, "
                                  "\"eta_seconds\": {}", name, done_, JsonSize(total_), rate, eta));
    return;
  }
  bool bar = mode_ == ProgressMode::kBar;
  std::string line = final ? FormatPhaseResult(*phase_, done_, secs)
                     : *phase_ == Phase::kSyncing ? ClockText(secs)
                                                  : FormatProgress(done_, total_, secs, bar);
  if (bar) {
    std::fprintf(out_, "\r%-10s %s\x1b[K%s", name.c_str(), line.c_str(), final ? "\n" : "");
  } else {
    std::fprintf(out_, "%s: %s%s %s\n", label_.c_str(), name.c_str(), final ? " done:" : "", line.c_str());
  }
  std::fflush(out_);
}

void Progress::End() { Close(true); }
void Progress::Stop() { Close(false); }

void Progress::Close(bool completed) {
  if (!phase_) return;
  double secs = Since(phase_start_);
  if (completed && (mode_ == ProgressMode::kBar || mode_ == ProgressMode::kLines)) Draw(true);
  if (!completed && mode_ == ProgressMode::kBar) {
    std::fputc('\n', out_);  // the last running line stays as it was
    std::fflush(out_);
  }
  Event("phase_end", fmt::format("\"phase\": \"{}\", \"completed\": {}, \"bytes\": {}, \"seconds\": {:.3f}, "
                                 "\"bytes_per_second\": {:.0f}", PhaseName(*phase_), completed, done_, secs,
                                 Rate(done_, secs)));
  auto& s = seconds_[static_cast<size_t>(*phase_)];
  s = s.value_or(0) + secs;
  phase_.reset();
}

void Progress::Note(std::string_view text) {
  if (out_ != nullptr) {
    if (mode_ == ProgressMode::kBar && phase_) std::fputc('\n', out_);
    std::fprintf(out_, "%s: %.*s\n", label_.c_str(), static_cast<int>(text.size()), text.data());
    std::fflush(out_);
  }
  Event("note", "\"message\": " + JsonString(text));
}

void Progress::Event(std::string_view event, std::string_view members) {
  if (mode_ != ProgressMode::kJson || events_ == nullptr) return;
  std::string line = fmt::format("{{{}, \"command\": {}, \"event\": \"{}\", \"t\": {:.3f}{}{}}}\n",
                                 JsonSchemaMembers("progress", 1), JsonString(command_), event, Since(start_),
                                 members.empty() ? "" : ", ", members);
  std::fputs(line.c_str(), events_);
  std::fflush(events_);
}

std::optional<double> Progress::seconds(Phase phase) const { return seconds_[static_cast<size_t>(phase)]; }

}  // namespace flashpipe::input
