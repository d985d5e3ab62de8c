// PersistentState: what a fastboot device remembers across sessions and
// restarts: the active slot, whether flashing is locked, and whether the
// critical partitions are (`flashing lock_critical|unlock_critical`). Kept in
// a small text file ("slot=a\nlocked=0\ncritical_locked=1\n"), rewritten
// atomically (temp file, fsync, rename) on every change. An empty path keeps the state in memory only.
// Thread-compatible.
#pragma once

#include <string>

#include "base/status.h"

namespace flashpipe::fastboot {

class PersistentState {
 public:
  // A missing file (or line) means defaults (slot a, unlocked, critical
  // partitions locked, as on a device fresh from the factory); a malformed
  // one is an error.
  static Result<PersistentState> Load(std::string path);

  char slot() const { return slot_; }
  bool locked() const { return locked_; }
  bool critical_locked() const { return critical_locked_; }
  const std::string& path() const { return path_; }
  // REQUIRES: slot is 'a' or 'b'.
  Status SetSlot(char slot);
  Status SetLocked(bool locked);
  Status SetCriticalLocked(bool locked);

 private:
  Status Save() const;
  std::string path_;
  char slot_ = 'a';
  bool locked_ = false;
  bool critical_locked_ = true;
};

}  // namespace flashpipe::fastboot
