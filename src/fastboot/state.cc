#include "fastboot/state.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>

#include "base/atomic_file.h"
#include "base/fd_io.h"
#include "base/log.h"
#include "base/unique_fd.h"

namespace flashpipe::fastboot {
namespace {

constexpr size_t kMaxStateFile = 4096;

// Whether `dir` is shared: writable by everyone, protected by the sticky
// bit (so only the owner of a file can replace it). An error for a
// directory where someone else could replace the state file at will.
Result<bool> CheckDirectory(const std::string& path) {
  std::string dir = DirName(path);
  struct stat st;
  if (::stat(dir.c_str(), &st) != 0) return ErrnoError(fmt::format("state file {}: directory {}", path, dir));
  if (!S_ISDIR(st.st_mode)) return InvalidArgument(fmt::format("state file {}: {} is not a directory", path, dir));
  if (st.st_uid != ::geteuid() && st.st_uid != 0) {
    return InvalidArgument(fmt::format(
        "state file {}: directory {} belongs to uid {}, who could replace the state file; use a directory of "
        "this user or root", path, dir, st.st_uid));
  }
  if ((st.st_mode & S_IWOTH) == 0) return false;
  if ((st.st_mode & S_ISVTX) == 0) {
    return InvalidArgument(fmt::format(
        "state file {}: directory {} is writable by everyone and has no sticky bit: anyone could replace the "
        "state file", path, dir));
  }
  return true;
}

Status SymlinkRefused(const std::string& path) {
  return InvalidArgument(
      fmt::format("state file {} is a symbolic link in a directory everyone can write: not followed", path));
}

// In a shared directory only a regular file of our own user is trusted.
Status CheckSharedFile(const std::string& path, const struct stat& st) {
  if (S_ISLNK(st.st_mode)) return SymlinkRefused(path);
  if (st.st_uid != ::geteuid()) {
    return InvalidArgument(fmt::format(
        "state file {} belongs to uid {}, not to this daemon's user ({}), in a directory everyone can write",
        path, st.st_uid, ::geteuid()));
  }
  return Status::Ok();
}

}  // namespace

PersistentState PersistentState::InMemory(bool locked) {
  PersistentState s;
  s.f_.locked = locked;
  return s;
}

Result<PersistentState> PersistentState::Open(std::string path, const StateOptions& options) {
  PersistentState s = InMemory(options.initial_locked);
  s.path_ = std::move(path);
  bool first_start = false;
  if (!s.path_.empty()) {
    FP_ASSIGN_OR_RETURN(s.shared_dir_, CheckDirectory(s.path_));
    FP_ASSIGN_OR_RETURN(first_start, s.Read());
  }
  s.first_start_ = first_start;
  bool forced = options.force_locked && (!s.f_.locked || !s.f_.critical_locked);
  if (options.force_locked) s.f_.locked = s.f_.critical_locked = true;
  if (first_start || forced) {
    if (Status st = s.Save(s.f_); !st.ok()) {
      s.warnings_.push_back(fmt::format("{}: the state holds only until the daemon restarts", st.ToString()));
    }
  }
  return s;
}

// Reads and parses the file; true when there is none (the first start).
Result<bool> PersistentState::Read() {
  int flags = O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK | (shared_dir_ ? O_NOFOLLOW : 0);
  UniqueFd fd(::open(path_.c_str(), flags));
  struct stat st;
  if (!fd.valid() && errno == ENOENT) return true;
  if (!fd.valid() && errno == ELOOP && shared_dir_) return SymlinkRefused(path_);
  if (!fd.valid() || ::fstat(fd.get(), &st) != 0) {
    LockedBecause(fmt::format("{}: cannot read it", ErrnoError(fmt::format("state file {}", path_)).ToString()));
    return false;
  }
  if (shared_dir_) FP_RETURN_IF_ERROR(CheckSharedFile(path_, st));
  if (!S_ISREG(st.st_mode)) {
    LockedBecause(fmt::format("state file {} is not a regular file", path_));
    return false;
  }
  std::array<uint8_t, kMaxStateFile + 1> buf;
  auto n = ReadUpTo(fd.get(), buf, path_);
  if (!n.ok()) {
    LockedBecause(fmt::format("state file: {}", n.status().ToString()));
    return false;
  }
  Parse(std::string_view(reinterpret_cast<const char*>(buf.data()), *n));
  return false;
}

void PersistentState::LockedBecause(std::string why) {
  f_.locked = f_.critical_locked = true;
  warnings_.push_back(why + ": starting locked");
}

// Any problem with the content means locked, with a warning that says why.
void PersistentState::Parse(std::string_view text) {
  if (text.size() > kMaxStateFile) {
    return LockedBecause(fmt::format("state file {} is over {} bytes", path_, kMaxStateFile));
  }
  if (text.empty()) return LockedBecause(fmt::format("state file {} is empty", path_));
  struct Key {
    std::string_view name;
    std::string_view values;
    bool seen = false;
  };
  Key keys[] = {{"slot=", "ab"}, {"locked=", "01"}, {"critical_locked=", "01"}};
  Fields f{.slot = 'a', .locked = true, .critical_locked = true};
  int lineno = 0;
  while (!text.empty()) {
    size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
    ++lineno;
    if (line.empty() || line[0] == '#') continue;
    Key* key = nullptr;
    for (auto& k : keys) {
      if (line.starts_with(k.name)) key = &k;
    }
    bool valid = key != nullptr && line.size() == key->name.size() + 1 &&
                 key->values.find(line.back()) != std::string_view::npos;
    if (!valid || key->seen) {
      return LockedBecause(fmt::format("state file {} line {}: '{}' {}", path_, lineno, log::Printable(line, 40),
                                       valid ? "repeated" : "not understood"));
    }
    key->seen = true;
    char v = line.back();
    if (key == &keys[0]) f.slot = v;
    if (key == &keys[1]) f.locked = v == '1';
    if (key == &keys[2]) f.critical_locked = v == '1';
  }
  f_ = f;
  if (!keys[1].seen) LockedBecause(fmt::format("state file {} has no locked= line", path_));
}

std::string PersistentState::Describe() const {
  return fmt::format("slot {}, {}, critical partitions {}", f_.slot, f_.locked ? "locked" : "unlocked",
                     f_.critical_locked ? "locked" : "unlocked");
}

Status PersistentState::SetSlot(char slot) {
  if (slot != 'a' && slot != 'b') return InvalidArgument(fmt::format("slot '{}' is not a or b", slot));
  Fields next = f_;
  next.slot = slot;
  return Apply(next, false);
}

Status PersistentState::SetLocked(bool locked) {
  Fields next = f_;
  next.locked = locked;
  return Apply(next, locked);
}

Status PersistentState::SetCriticalLocked(bool locked) {
  Fields next = f_;
  next.critical_locked = locked;
  return Apply(next, locked);
}

// A safer state holds even unsaved; any other change only once it is saved.
Status PersistentState::Apply(Fields next, bool safer) {
  if (safer) f_ = next;
  Status st = Save(next);
  if (!st.ok()) {
    return safer ? st.WithContext("not saved: it holds only until the daemon restarts") : st.WithContext("not changed");
  }
  f_ = next;
  return Status::Ok();
}

Status PersistentState::Save(const Fields& f) const {
  if (path_.empty()) return Status::Ok();
  FP_ASSIGN_OR_RETURN(bool shared, CheckDirectory(path_));
  if (struct stat st; shared && ::lstat(path_.c_str(), &st) == 0) FP_RETURN_IF_ERROR(CheckSharedFile(path_, st));
  AtomicFile::Options options;
  options.new_mode = 0644;
  options.symlink = shared ? AtomicFile::Options::Symlink::kRefuse : AtomicFile::Options::Symlink::kFollow;
  FP_ASSIGN_OR_RETURN(AtomicFile out, AtomicFile::Create(path_, options));
  std::string text = fmt::format("# flashpipe serve state\nslot={}\nlocked={}\ncritical_locked={}\n", f.slot,
                                 f.locked ? 1 : 0, f.critical_locked ? 1 : 0);
  FP_RETURN_IF_ERROR(WriteAll(out.fd(), {reinterpret_cast<const uint8_t*>(text.data()), text.size()}, out.temp_path()));
  return out.Commit();
}

}  // namespace flashpipe::fastboot
