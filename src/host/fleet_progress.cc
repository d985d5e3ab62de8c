#include "host/fleet_progress.h"

#include <fmt/format.h>

#include "base/units.h"
#include "base/utf8.h"

namespace flashpipe::host {

std::string FormatDeviceLine(const std::string& device, const DeviceProgress& p) {
  std::string where;
  if (p.step > 0) where = fmt::format("{}/{} {}", p.step, p.steps, p.partition);
  if (p.part > 0) {
    where += p.parts > 0 ? fmt::format(" part {}/{}", p.part, p.parts) : fmt::format(" part {}", p.part);
  }
  std::string rate = p.seconds > 0.2 ? fmt::format("{}/s", FormatBytes(static_cast<uint64_t>(p.bytes / p.seconds))) : "";
  return fmt::format("{:<24} {:<10} {:<28} {:>10}  {}", device, p.phase, where, FormatBytes(p.bytes), rate);
}

FleetProgress::FleetProgress(FILE* out, Mode mode, std::vector<std::string> devices)
    : out_(out), mode_(mode), devices_(std::move(devices)) {}

FleetProgress::~FleetProgress() { Stop(); }

void FleetProgress::Event(size_t device, const std::string& line, bool notice) {
  if (mode_ != Mode::kLines && !(notice && mode_ == Mode::kOff)) return;
  std::lock_guard lock(mu_);
  std::fprintf(out_, "%s: %s\n", TerminalText(devices_[device]).c_str(), TerminalText(line).c_str());
  std::fflush(out_);
}

void FleetProgress::Start(const Fleet* fleet) {
  fleet_ = fleet;
  if (mode_ != Mode::kRedraw) return;
  thread_ = std::thread([this] {
    std::unique_lock lock(mu_);
    while (!stop_) {
      Draw(false);
      cv_.wait_for(lock, std::chrono::milliseconds(250));
    }
  });
}

void FleetProgress::Stop() {
  {
    std::lock_guard lock(mu_);
    if (stop_) return;
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  std::lock_guard lock(mu_);
  if (mode_ == Mode::kRedraw && fleet_ != nullptr) Draw(true);
}

void FleetProgress::Draw(bool) {
  auto progress = fleet_->Progress();
  std::string text;
  if (drawn_) text += fmt::format("\x1b[{}A", progress.size());
  for (size_t i = 0; i < progress.size(); ++i) text += "\x1b[2K" + FormatDeviceLine(devices_[i], progress[i]) + "\n";
  std::fputs(text.c_str(), out_);
  std::fflush(out_);
  drawn_ = true;
}

}  // namespace flashpipe::host
