#include "base/atomic_file.h"

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <utility>


namespace flashpipe {
namespace {

std::string BaseName(const std::string& path) {
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

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
  FP_ASSIGN_OR_RETURN(f.final_, FollowSymlinks(path));
  struct stat st;
  bool exists = ::stat(f.final_.c_str(), &st) == 0;
  if (!exists && errno != ENOENT) return ErrnoError(fmt::format("stat {}", path));
  if (exists && S_ISDIR(st.st_mode)) return IoError(fmt::format("{} is a directory", path), EISDIR);
  if (exists && !S_ISREG(st.st_mode)) return InvalidArgument(fmt::format("{} is not a regular file", path));
  f.mode_ = exists && options.keep_existing_mode ? (st.st_mode & 07777) : (options.new_mode & ~CurrentUmask());
  std::string dir = DirName(f.final_);
  std::string prefix = TempPrefix(f.final_);
  if (options.cleanup_stale) RemoveStaleTemps(dir, prefix);
  FP_ASSIGN_OR_RETURN(f.fd_, CreateExclusive(dir, prefix, &f.temp_));
  // Root replacing someone's file keeps its owner; failure is harmless.
  if (exists && ::geteuid() == 0) (void)!::fchown(f.fd_.get(), st.st_uid, st.st_gid);
  f.done_ = false;
  return f;
}

AtomicFile::AtomicFile(AtomicFile&& o) noexcept
    : fd_(std::move(o.fd_)), path_(std::move(o.path_)), final_(std::move(o.final_)), temp_(std::move(o.temp_)),
      mode_(o.mode_), done_(std::exchange(o.done_, true)) {}

AtomicFile& AtomicFile::operator=(AtomicFile&& o) noexcept {
  if (this != &o) {
    Abort();
    fd_ = std::move(o.fd_);
    path_ = std::move(o.path_);
    final_ = std::move(o.final_);
    temp_ = std::move(o.temp_);
    mode_ = o.mode_;
    done_ = std::exchange(o.done_, true);
  }
  return *this;
}

AtomicFile::~AtomicFile() { Abort(); }

void AtomicFile::Abort() {
  if (done_) return;
  fd_.Reset();
  ::unlink(temp_.c_str());
  done_ = true;
}

Status AtomicFile::Commit() {
  if (done_) return Internal(fmt::format("{}: commit of an output that is not open", path_));
  auto fail = [this](Status s) {
    Abort();
    return s;
  };
  if (::fchmod(fd_.get(), mode_) != 0) return fail(ErrnoError(fmt::format("chmod {}", temp_)));
  if (::fsync(fd_.get()) != 0) return fail(ErrnoError(fmt::format("fsync {}", temp_)));
  if (fd_.Close() != 0) return fail(ErrnoError(fmt::format("close {}", temp_)));
  if (::rename(temp_.c_str(), final_.c_str()) != 0) {
    return fail(ErrnoError(fmt::format("rename {} to {}", temp_, final_)));
  }
  done_ = true;
  return SyncDirectory(DirName(final_));
}

}  // namespace flashpipe
