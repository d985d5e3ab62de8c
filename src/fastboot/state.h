// PersistentState: what a fastboot device remembers across sessions and
// restarts: the active slot, whether flashing is locked, and whether the
// critical partitions are (`flashing lock_critical|unlock_critical`). Kept in
// a small text file ("slot=a\nlocked=0\ncritical_locked=1\n"), rewritten
// through AtomicFile (temp beside it, O_EXCL|O_NOFOLLOW, fsync, rename, fsync
// of the directory) on every change. An empty path keeps it in memory only.
//
// It fails closed:
// - A state file that exists but cannot be read, is empty, is not
//   understood, or has no `locked=` line means locked (and critical
//   partitions locked); warnings() says why. Only the very first start, with
//   no state file at all, follows StateOptions::initial_locked, and writes
//   the file so that later starts are not first starts.
// - force_locked (--no-unlock) starts locked whatever the file says.
// - A change that makes the device safer (lock, lock_critical) takes effect
//   even when it cannot be saved; the error says it is held in memory only.
//   A change that makes it less safe (unlock, unlock_critical), and a slot
//   change, takes effect only once saved.
//
// Where the file may live: its directory must not be writable by others
// (group/world) unless it has the sticky bit, and must belong to the
// daemon's user or root. In a shared directory with the sticky bit (/tmp)
// the state file must be a regular file owned by the daemon's user; a
// symlink there is refused at start and never followed when saving (the
// rename replaces the name itself). In a private directory a symlink is
// followed, as for every other output.
// Thread-compatible.
#pragma once

#include <string>
#include <vector>

#include "base/status.h"

namespace flashpipe::fastboot {

struct StateOptions {
  bool initial_locked = false;  // the first start, before any state file exists
  bool force_locked = false;    // start locked whatever the file says
};

class PersistentState {
 public:
  // No file: slot a, critical partitions locked, `locked` as given.
  static PersistentState InMemory(bool locked = false);
  // Reads `path` (see above). Errors only for a path that must not be used
  // (an unsafe directory, a symlink or someone else's file in /tmp); every
  // problem with the content means locked.
  static Result<PersistentState> Open(std::string path, const StateOptions& options = {});

  char slot() const { return f_.slot; }
  bool locked() const { return f_.locked; }
  bool critical_locked() const { return f_.critical_locked; }
  const std::string& path() const { return path_; }
  // Open found no state file: this state came from StateOptions.
  bool first_start() const { return first_start_; }
  // What Open found that the log should say (already safe to print).
  const std::vector<std::string>& warnings() const { return warnings_; }
  // "slot a, unlocked, critical partitions locked".
  std::string Describe() const;

  // REQUIRES: slot is 'a' or 'b'.
  Status SetSlot(char slot);
  Status SetLocked(bool locked);
  Status SetCriticalLocked(bool locked);

 private:
  struct Fields {
    char slot = 'a';
    bool locked = false;
    bool critical_locked = true;
  };
  Status Apply(Fields next, bool safer);
  Status Save(const Fields& f) const;
  Result<bool> Read();
  void Parse(std::string_view text);
  void LockedBecause(std::string why);

  std::string path_;
  bool shared_dir_ = false;  // sticky, writable by others: never follow a link
  bool first_start_ = false;
  Fields f_;
  std::vector<std::string> warnings_;
};

}  // namespace flashpipe::fastboot
