#include "fastboot/state.h"

#include <fcntl.h>
#include <unistd.h>

#include <fstream>
#include <sstream>

#include "base/unique_fd.h"

namespace flashpipe::fastboot {

Result<PersistentState> PersistentState::Load(std::string path) {
  PersistentState s;
  s.path_ = std::move(path);
  if (s.path_.empty()) return s;
  std::ifstream in(s.path_);
  if (!in) return s;
  std::string line;
  int lineno = 0;
  while (std::getline(in, line)) {
    ++lineno;
    if (line.empty() || line[0] == '#') continue;
    if (line == "slot=a" || line == "slot=b") {
      s.slot_ = line.back();
    } else if (line == "locked=0" || line == "locked=1") {
      s.locked_ = line.back() == '1';
    } else if (line == "critical_locked=0" || line == "critical_locked=1") {
      s.critical_locked_ = line.back() == '1';
    } else {
      return Corrupt(fmt::format("{}:{}: unknown line '{}'", s.path_, lineno, line.substr(0, 40)));
    }
  }
  return s;
}

Status PersistentState::SetSlot(char slot) {
  if (slot != 'a' && slot != 'b') return InvalidArgument(fmt::format("slot '{}' is not a or b", slot));
  slot_ = slot;
  return Save();
}

Status PersistentState::SetLocked(bool locked) {
  locked_ = locked;
  return Save();
}

Status PersistentState::SetCriticalLocked(bool locked) {
  critical_locked_ = locked;
  return Save();
}

Status PersistentState::Save() const {
  if (path_.empty()) return Status::Ok();
  std::string tmp = path_ + ".tmp";
  UniqueFd fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
  if (!fd.valid()) return ErrnoError("open " + tmp);
  std::string text = fmt::format("# flashpipe serve state\nslot={}\nlocked={}\ncritical_locked={}\n", slot_,
                                 locked_ ? 1 : 0, critical_locked_ ? 1 : 0);
  if (::write(fd.get(), text.data(), text.size()) != static_cast<ssize_t>(text.size())) {
    return ErrnoError("write " + tmp);
  }
  if (::fsync(fd.get()) != 0) return ErrnoError("fsync " + tmp);
  if (fd.Close() != 0) return ErrnoError("close " + tmp);
  if (::rename(tmp.c_str(), path_.c_str()) != 0) return ErrnoError("rename to " + path_);
  return Status::Ok();
}

}  // namespace flashpipe::fastboot
