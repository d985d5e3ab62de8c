// PersistentState: what a fastboot device remembers across sessions and
// restarts: the active slot and whether flashing is locked. Kept in a small
// text file ("slot=a\nlocked=0\n"), rewritten atomically (temp file, fsync,
// rename) on every change. An empty path keeps the state in memory only.
// Thread-compatible.
#pragma once

#include <string>

#include "base/status.h"

namespace flashpipe::fastboot {

class PersistentState {
 public:
  // A missing file means defaults (slot a, unlocked); a malformed one is an error.
  static Result<PersistentState> Load(std::string path);

  char slot() const { return slot_; }
  bool locked() const { return locked_; }
  const std::string& path() const { return path_; }
  // REQUIRES: slot is 'a' or 'b'.
  Status SetSlot(char slot);
  Status SetLocked(bool locked);

 private:
  Status Save() const;
  std::string path_;
  char slot_ = 'a';
  bool locked_ = false;
};

}  // namespace flashpipe::fastboot
