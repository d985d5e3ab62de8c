// FleetProgress: what `flashpipe flash` shows while devices are flashed, on
// stderr. On a terminal one line per device, redrawn in place four times a
// second:
//   tcp:10.0.0.7:5554        sending  2/3 system_a part 3/8   48.0 MiB  112.5 MiB/s
// otherwise (logs, CI) the events as plain lines ("DEVICE: system_a part
// 3/8 written (16.0 MiB)"). Off with --no-progress or --json to stdout.
// FormatDeviceLine is the pure part, for tests.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "host/fleet.h"

namespace flashpipe::host {

std::string FormatDeviceLine(const std::string& device, const DeviceProgress& p);

class FleetProgress {
 public:
  enum class Mode { kOff, kLines, kRedraw };
  FleetProgress(FILE* out, Mode mode, std::vector<std::string> devices);
  ~FleetProgress();

  // Fleet's event sink (any device thread).
  // A line: printed in kLines mode; a notice also in kOff mode (in kRedraw
  // the device's row shows its phase).
  void Event(size_t device, const std::string& line, bool notice = false);
  // Starts redrawing from `fleet` (kRedraw); Stop draws the last state.
  void Start(const Fleet* fleet);
  void Stop();

 private:
  void Draw(bool last);
  FILE* out_;
  Mode mode_;
  std::vector<std::string> devices_;
  const Fleet* fleet_ = nullptr;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  bool drawn_ = false;
  std::thread thread_;
};

}  // namespace flashpipe::host
