// Progress: what `flashpipe write` and `flashpipe read` show while they
// work, one phase at a time (writing, syncing, verifying; reading), each
// with its own rate and ETA.
//   bar    on a terminal: one line per phase, redrawn in place at most 10
//          times a second, then left as the phase's result:
//            writing    [##########----------]  48%  1.2 GiB / 2.5 GiB  812.4 MiB/s  ETA 0:02
//            writing    2.5 GiB in 3.1 s, 812.4 MiB/s
//   lines  otherwise (logs, CI): "LABEL: writing 1.0 GiB of 2.5 GiB (40%) ..."
//          at each phase's start and end, every 2 s or 10 % between;
//   json   one JSON object per line (NDJSON) on `events` (stdout), schema
//          docs/schema/progress-events.schema.json: phase_start, progress
//          (at most every 0.5 s), phase_end, note, target, report;
//   off    nothing but notes.
// Notes ("using block map x.bmap") go to `out` in every mode (and, in json
// mode, to the event stream too). Each phase's duration is kept whatever the
// mode, for the report. A total of 0 is unknown (a raw stream): no bar,
// percentage or ETA then. The Format* functions are the pure part, for tests.
// Not thread-safe: the jobs call it from their own thread.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <string_view>

namespace flashpipe::input {

enum class ProgressMode { kOff, kBar, kLines, kJson };
enum class Phase : uint8_t { kWriting, kSyncing, kVerifying, kReading };
inline constexpr size_t kPhases = 4;
std::string_view PhaseName(Phase phase);  // "writing", "syncing", "verifying", "reading"

// The running line: bar style when `bar`, else the plain one. total 0 = unknown.
std::string FormatProgress(uint64_t done, uint64_t total, double seconds, bool bar);
// A phase's result: "2.5 GiB in 3.1 s, 812.4 MiB/s"; "0.4 s" for a phase
// that moves no bytes of its own (syncing).
std::string FormatPhaseResult(Phase phase, uint64_t bytes, double seconds);

class Progress {
 public:
  // `label` starts each plain line and note ("flashpipe write").
  Progress(FILE* out, ProgressMode mode, std::string label = "flashpipe write", FILE* events = stdout);
  ~Progress();

  // Starts `phase` (ending the one before); `total` bytes, 0 when unknown.
  void Begin(Phase phase, uint64_t total = 0);
  // Bytes of the current phase done so far.
  void Update(uint64_t done, uint64_t total);
  // Ends the current phase (if any) with its result line.
  void End();
  // Ends the current phase (if any) unfinished, after a failure or an
  // interrupt: the bar's line stays as it was, the event says
  // "completed": false. The destructor calls it.
  void Stop();
  // A line of its own: "LABEL: TEXT" on `out`, and a note event.
  void Note(std::string_view text);
  // json mode: one event line {"schema", "command", "event", "t", MEMBERS}
  // where `members` is "" or JSON object members ("\"a\": 1, \"b\": 2").
  void Event(std::string_view event, std::string_view members);

  ProgressMode mode() const { return mode_; }
  // Seconds `phase` took, once it has ended; nullopt if it never ran.
  std::optional<double> seconds(Phase phase) const;

 private:
  using Clock = std::chrono::steady_clock;
  double Since(Clock::time_point t) const { return std::chrono::duration<double>(Clock::now() - t).count(); }
  void Draw(bool final);
  void Close(bool completed);

  FILE* out_;
  ProgressMode mode_;
  std::string label_, command_;
  FILE* events_;
  Clock::time_point start_ = Clock::now();
  std::optional<Phase> phase_;
  Clock::time_point phase_start_;
  uint64_t done_ = 0, total_ = 0, last_done_ = 0;
  double last_print_ = -1;
  std::array<std::optional<double>, kPhases> seconds_;
};

}  // namespace flashpipe::input
