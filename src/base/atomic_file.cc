#include "base/atomic_file.h"

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <vector>
#include <utility>

#include "base/write_lock.h"

namespace flashpipe {
namespace {

mode_t CurrentUmask() {
  mode_t mask = ::umask(0);
  ::umask(mask);
  return mask;
}

std::string TempPrefix(const std::string& final_path) {
  std::string base = BaseName(final_path);
  if (base.size() > 180) base.resize(180);  // leave room in NAME_MAX for the suffix
  return "." + base + ".flashpipe-";
}

// Removes ".NAME.flashpipe-PID-XXXXXX" files whose process is gone.
void RemoveStaleTemps(const std::string& dir, const std::string& prefix) {
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return;
  while (const dirent* e = ::readdir(d)) {
    std::string_view name = e->d_name;
    if (!name.starts_with(prefix)) continue;
    std::string rest(name.substr(prefix.size()));
    char* end = nullptr;
    long pid = std::strtol(rest.c_str(), &end, 10);
    if (end == rest.c_str() || *end != '-' || pid <= 0 || pid == ::getpid()) continue;
    if (::kill(static_cast<pid_t>(pid), 0) == 0 || errno != ESRCH) continue;
    ::unlinkat(::dirfd(d), e->d_name, 0);
  }
  ::closedir(d);
}

Result<UniqueFd> CreateExclusive(const std::string& dir, const std::string& prefix, std::string* temp) {
  for (int attempt = 0; attempt < 100; ++attempt) {
    uint32_t r = 0;
    if (::getrandom(&r, sizeof r, 0) != sizeof r) r = static_cast<uint32_t>(::random());
    *temp = fmt::format("{}/{}{}-{:08x}", dir, prefix, ::getpid(), r);
    UniqueFd fd(::open(temp->c_str(), O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
    if (fd.valid()) return fd;
    if (errno != EEXIST) return ErrnoError(fmt::format("create a temporary file in {}", dir));
  }
  return IoError(fmt::format("create a temporary file in {}: every name taken", dir), EEXIST);
}

}  // namespace

Result<std::string> FollowSymlinks(std::string path) {
  for (int hops = 0; hops < 40; ++hops) {
    struct stat st;
    if (::lstat(path.c_str(), &st) != 0) {
      if (errno == ENOENT) return path;
      return ErrnoError(fmt::format("stat {}", path));
    }
    if (!S_ISLNK(st.st_mode)) return path;
    char target[PATH_MAX];
    ssize_t n = ::readlink(path.c_str(), target, sizeof target - 1);
    if (n < 0) return ErrnoError(fmt::format("readlink {}", path));
    std::string t(target, static_cast<size_t>(n));
    path = t.starts_with("/") ? t : DirName(path) + "/" + t;
  }
  return IoError(fmt::format("{}: too many levels of symbolic links", path), ELOOP);
}

std::string BaseName(const std::string& path) {
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

std::string DirName(const std::string& path) {
  size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

Status SyncDirectory(const std::string& dir) {
  UniqueFd fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!fd.valid()) return ErrnoError(fmt::format("open directory {}", dir));
  if (::fsync(fd.get()) != 0) return ErrnoError(fmt::format("fsync directory {}", dir));
  return Status::Ok();
}

Result<bool> IsRegularOrAbsent(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return true;
    return ErrnoError(fmt::format("stat {}", path));
  }
  if (S_ISDIR(st.st_mode)) return IoError(fmt::format("{} is a directory", path), EISDIR);
  return S_ISREG(st.st_mode);
}

Result<AtomicFile> AtomicFile::Create(const std::string& path, const Options& options) {
  AtomicFile f;
  f.path_ = path;
  const bool follow = options.symlink == Options::Symlink::kFollow;
  if (follow) {
    FP_ASSIGN_OR_RETURN(f.final_, FollowSymlinks(path));
  } else {
    f.final_ = path;
  }
  struct stat st;
  bool exists = (follow ? ::stat(f.final_.c_str(), &st) : ::lstat(f.final_.c_str(), &st)) == 0;
  if (!exists && errno != ENOENT) return ErrnoError(fmt::format("stat {}", path));
  if (exists && S_ISDIR(st.st_mode)) return IoError(fmt::format("{} is a directory", path), EISDIR);
  if (exists && S_ISLNK(st.st_mode)) {
    if (options.symlink == Options::Symlink::kRefuse) {
      return InvalidArgument(fmt::format("{} is a symbolic link (not followed here)", path));
    }
    exists = false;  // kReplace: the link goes, its target is not looked at
  }
  if (exists && !S_ISREG(st.st_mode)) return InvalidArgument(fmt::format("{} is not a regular file", path));
  if (exists && options.lock_existing) {
    f.lock_ = UniqueFd(::open(f.final_.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK));
    if (f.lock_.valid()) FP_RETURN_IF_ERROR(LockForWriting(f.lock_.get(), path));
  }
  f.mode_ = exists && options.keep_existing_mode ? (st.st_mode & 07777) : (options.new_mode & ~CurrentUmask());
  std::string dir = DirName(f.final_);
  std::string prefix = TempPrefix(f.final_);
  if (options.cleanup_stale) RemoveStaleTemps(dir, prefix);
  FP_ASSIGN_OR_RETURN(f.fd_, CreateExclusive(dir, prefix, &f.temp_));
  f.synced_ = false;
  // Root replacing someone's file keeps its owner; failure is harmless.
  if (exists && ::geteuid() == 0) (void)!::fchown(f.fd_.get(), st.st_uid, st.st_gid);
  f.done_ = false;
  return f;
}

AtomicFile::AtomicFile(AtomicFile&& o) noexcept
    : fd_(std::move(o.fd_)),
      lock_(std::move(o.lock_)),
      path_(std::move(o.path_)),
      final_(std::move(o.final_)),
      temp_(std::move(o.temp_)),
      mode_(o.mode_), synced_(o.synced_), done_(std::exchange(o.done_, true)) {}

AtomicFile& AtomicFile::operator=(AtomicFile&& o) noexcept {
  if (this != &o) {
    Abort();
    fd_ = std::move(o.fd_);
    lock_ = std::move(o.lock_);
    path_ = std::move(o.path_);
    final_ = std::move(o.final_);
    temp_ = std::move(o.temp_);
    mode_ = o.mode_;
    synced_ = o.synced_;
    done_ = std::exchange(o.done_, true);
  }
  return *this;
}

AtomicFile::~AtomicFile() { Abort(); }

void AtomicFile::Abort() {
  if (done_) return;
  fd_.Reset();
  ::unlink(temp_.c_str());
  lock_.Reset();
  done_ = true;
}

Status AtomicFile::Sync() {
  if (done_) return Internal(fmt::format("{}: sync of an output that is not open", path_));
  if (synced_) return Status::Ok();
  auto fail = [this](Status s) {
    Abort();
    return s;
  };
  if (::fchmod(fd_.get(), mode_) != 0) return fail(ErrnoError(fmt::format("chmod {}", temp_)));
  if (::fsync(fd_.get()) != 0) return fail(ErrnoError(fmt::format("fsync {}", temp_)));
  if (fd_.Close() != 0) return fail(ErrnoError(fmt::format("close {}", temp_)));
  synced_ = true;
  return Status::Ok();
}

// REQUIRES: Sync() succeeded.
Status AtomicFile::Rename() {
  if (::rename(temp_.c_str(), final_.c_str()) != 0) {
    Status s = ErrnoError(fmt::format("rename {} to {}", temp_, final_));
    Abort();
    return s;
  }
  lock_.Reset();
  done_ = true;
  return Status::Ok();
}

Status AtomicFile::Commit() {
  FP_RETURN_IF_ERROR(Sync());
  FP_RETURN_IF_ERROR(Rename());
  return SyncDirectory(DirName(final_));
}

namespace {

// Holds the signals a user or a supervisor sends to stop a tool, so that a
// short sequence of steps is not cut in the middle; they are delivered when
// the guard goes away.
class HoldStopSignals {
 public:
  HoldStopSignals() {
    sigset_t set;
    sigemptyset(&set);
    for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT}) sigaddset(&set, sig);
    ::pthread_sigmask(SIG_BLOCK, &set, &old_);
  }
  ~HoldStopSignals() { ::pthread_sigmask(SIG_SETMASK, &old_, nullptr); }
  HoldStopSignals(const HoldStopSignals&) = delete;
  HoldStopSignals& operator=(const HoldStopSignals&) = delete;

 private:
  sigset_t old_;
};

}  // namespace

namespace {

// Moves the existing files at `paths` (in order) to hidden names beside them
// that RemoveStaleTemps recognises (".NAME.flashpipe-PID-old"); a missing
// path is skipped. Renaming is quick where unlinking a large file is not, so
// the window in which a set is half switched stays short. On failure the
// files already moved are put back.
Result<std::vector<std::pair<std::string, std::string>>> MoveAside(const std::vector<std::string>& paths) {
  std::vector<std::pair<std::string, std::string>> moved;  // (hidden, original)
  for (const std::string& path : paths) {
    std::string hidden = fmt::format("{}/{}{}-old", DirName(path), TempPrefix(path), ::getpid());
    if (::rename(path.c_str(), hidden.c_str()) == 0) {
      moved.emplace_back(std::move(hidden), path);
      continue;
    }
    if (errno == ENOENT) continue;
    Status s = ErrnoError(fmt::format("move {} aside (nothing was changed)", path));
    for (auto it = moved.rbegin(); it != moved.rend(); ++it) (void)!::rename(it->first.c_str(), it->second.c_str());
    return s;
  }
  return moved;
}

}  // namespace

Status AtomicFile::CommitTogether(std::span<AtomicFile> files, std::span<const std::string> remove) {
  auto abort_all = [&files](Status s) {
    for (AtomicFile& f : files) f.Abort();
    return s;
  };
  for (AtomicFile& f : files) {
    if (Status s = f.Sync(); !s.ok()) return abort_all(s);
  }
  std::vector<std::string> old;  // files[0]'s first: from then on the set is absent
  for (const AtomicFile& f : files) old.push_back(f.final_);
  old.insert(old.end(), remove.begin(), remove.end());
  std::vector<std::pair<std::string, std::string>> moved;
  {
    HoldStopSignals hold;
    auto aside = MoveAside(old);
    if (!aside.ok()) return abort_all(aside.status());
    moved = std::move(aside).value();
    for (size_t i = files.size(); i-- > 0;) {
      if (Status s = files[i].Rename(); !s.ok()) {
        return abort_all(Status(s.code(), fmt::format("{} ({} of {} outputs were already in place)", s.message(),
                                                      files.size() - 1 - i, files.size()), s.sys_errno()));
      }
    }
  }
  for (const auto& m : moved) ::unlink(m.first.c_str());
  std::vector<std::string> dirs;
  for (const std::string& path : old) dirs.push_back(DirName(path));
  std::sort(dirs.begin(), dirs.end());
  dirs.erase(std::unique(dirs.begin(), dirs.end()), dirs.end());
  for (const std::string& dir : dirs) FP_RETURN_IF_ERROR(SyncDirectory(dir));
  return Status::Ok();
}

void RemoveDeadTemps(const std::string& path) {
  auto final_path = FollowSymlinks(path);
  if (final_path.ok()) RemoveStaleTemps(DirName(*final_path), TempPrefix(*final_path));
}

}  // namespace flashpipe
