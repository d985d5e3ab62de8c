// Crash states: the device contents a power cut can leave after a run whose
// block writes a WriteLog holds, and the device rebuilt at each of them.
//
// The model is a device with a volatile write cache. A cut after the first
// `cut` entries of the log keeps every write logged before the last flush
// among them (dm-log-writes logs a write only once it completed before a
// flush was issued) and every FUA write; of the writes since that flush, any
// subset may have reached the medium, in any order, and one of them may have
// landed only in part (whole sectors of the log's sector size: a sector is
// written whole or not at all; Budget::tear_unit makes the unit larger).
// Subsets are applied in log order.
//
// EnumerateCrashStates picks the states to check, window by window (a
// window: the writes between two flushes):
//   - at every cut, the ordered state (every write so far landed);
//   - a window of at most Budget::all_subsets_up_to writes: every subset, at
//     every cut (a subset without the newest write was already seen at the
//     cut before, unless a mark or a FUA write came in between);
//   - a larger window: at each mark, at each FUA write and at the window's
//     end, nothing volatile landed and Budget::random_subsets random subsets;
//   - Budget::tears torn states per window: the newest write of a cut, or a
//     random one of a random subset, landed in part (a prefix of its sectors
//     or random runs of them).
// Over Budget::max_states, the ordered and empty states at marks and at the
// ends of windows are kept and the rest is sampled (seeded, reproducible).
//
// DeviceReplay rebuilds the content of any state of one log, moving its
// durable base forward window by window; states must come in order of cut.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "base/status.h"
#include "powercut/write_log.h"

namespace flashpipe::powercut {

struct Budget {
  // What the device writes whole: 0 means the log's sector size; a file
  // system's cases use 4096 (a page; what eMMC, UFS and SSDs program at
  // once), since ext4 itself assumes its 1 KiB superblock is not torn.
  uint64_t tear_unit = 0;
  unsigned all_subsets_up_to = 6;
  unsigned random_subsets = 16;
  unsigned tears = 4;
  uint64_t max_states = 4000;
  uint64_t seed = 1;
};

struct CrashState {
  size_t cut = 0;             // entries [0, cut) were logged when the power went
  size_t window = 0;          // the entry that opened its window (its flush; 0 for the first)
  uint64_t write_index = 0;   // writes among them (entries that change the medium)
  uint64_t flush_index = 0;   // flushes among them
  size_t acks = 0;            // marks among them
  std::vector<size_t> landed; // the volatile writes (entry indices) that reached the medium
  size_t volatile_writes = 0; // writes since the last flush, landed or not
  size_t torn = SIZE_MAX;     // one of `landed` that reached it in part
  std::vector<std::pair<uint64_t, uint64_t>> torn_sectors;  // [first, end) of it that landed
  bool anchor = false;        // kept whatever the budget

  // "cut after entry 17 (write 12, flush 5, 2 acks): 3 of 4 writes since
  // flush 5 landed (entries 14,15,17), entry 17 torn (sectors 0-3 of 8)".
  std::string Describe() const;
};

struct Enumeration {
  std::vector<CrashState> states;  // in order of cut
  uint64_t windows = 0;
  uint64_t largest_window = 0;     // writes
  uint64_t generated = 0;          // before the budget
};
Enumeration EnumerateCrashStates(const WriteLog& log, const Budget& budget);

class DeviceReplay {
 public:
  // REQUIRES: every entry of `log` lies inside `initial` (WriteLog::Parse
  // checked it against the same size).
  DeviceReplay(const WriteLog& log, std::vector<uint8_t> initial);
  // The device as `state` leaves it, valid until the next call.
  // REQUIRES: state.cut is not below the previous state's window.
  std::span<const uint8_t> Build(const CrashState& state);
  // The device with the first `cut` entries all landed (a snapshot).
  std::vector<uint8_t> Ordered(size_t cut) const;

 private:
  void Apply(const LogEntry& e, const std::vector<std::pair<uint64_t, uint64_t>>* sectors, bool save);
  void Undo();

  const WriteLog& log_;
  std::vector<uint8_t> initial_;
  std::vector<uint8_t> image_;
  size_t base_ = 0;  // entries [0, base_) are in image_ for good
  std::vector<std::pair<uint64_t, std::vector<uint8_t>>> undo_;
};

}  // namespace flashpipe::powercut
