#include "fetch/cache.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <cstdlib>

#include "base/fd_io.h"
#include "base/sha256.h"
#include "fetch/url.h"

namespace flashpipe::fetch {
namespace {

constexpr size_t kMaxIdxBytes = 64 << 20;
constexpr off_t kFetchByte = 0, kUseByte = 1;

std::string BootId() {
  UniqueFd fd(::open("/proc/sys/kernel/random/boot_id", O_RDONLY | O_CLOEXEC));
  char buf[64] = {};
  auto n = fd.valid() ? ReadUpTo(fd.get(), {reinterpret_cast<uint8_t*>(buf), sizeof(buf)}, "boot_id") : Result<size_t>(size_t{0});
  std::string id(buf, n.ok() ? *n : 0);
  while (!id.empty() && (id.back() == '\n' || id.back() == ' ')) id.pop_back();
  return id;
}

// Files in the cache directory: never through a link (the one place that
// creates and opens them; base/ may get a shared helper for this).
Status CheckOurs(int fd, const std::string& name) {
  struct stat st;
  if (::fstat(fd, &st) != 0) return ErrnoError(fmt::format("cannot stat cache file {}", name));
  if (!S_ISREG(st.st_mode) || st.st_uid != ::geteuid() || st.st_nlink != 1) {
    return InvalidArgument(fmt::format("cache file {} is not a regular file of this user with one link: refused", name));
  }
  return Status::Ok();
}
Result<UniqueFd> OpenIn(int dirfd, const std::string& dir, const std::string& name, int flags) {
  UniqueFd fd(::openat(dirfd, name.c_str(), flags | O_NOFOLLOW | O_CLOEXEC, 0600));
  if (!fd.valid()) return ErrnoError(fmt::format("cannot open cache file {}/{}", dir, name));
  FP_RETURN_IF_ERROR(CheckOurs(fd.get(), dir + "/" + name));
  return fd;
}
std::string TempName(const std::string& name) {
  static std::atomic<unsigned> counter{0};
  return fmt::format(".{}.tmp-{}-{}", name, ::getpid(), counter++);
}
// `name` appears whole: written under a temporary name, then renamed.
Status WriteWhole(int dirfd, const std::string& dir, const std::string& name, std::string_view text) {
  std::string temp = TempName(name);
  UniqueFd fd(::openat(dirfd, temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
  if (!fd.valid()) return ErrnoError(fmt::format("cannot create {}/{}", dir, temp));
  Status s = WriteAll(fd.get(), {reinterpret_cast<const uint8_t*>(text.data()), text.size()}, temp);
  if (s.ok() && ::fsync(fd.get()) != 0) s = ErrnoError(fmt::format("fsync {}/{}", dir, temp));
  if (s.ok() && ::renameat(dirfd, temp.c_str(), dirfd, name.c_str()) != 0) s = ErrnoError(fmt::format("rename {}/{}", dir, name));
  if (!s.ok()) ::unlinkat(dirfd, temp.c_str(), 0);
  return s;
}
Result<std::string> ReadSmall(int fd, const std::string& name) {
  struct stat st;
  if (::fstat(fd, &st) != 0) return ErrnoError("stat " + name);
  if (static_cast<uint64_t>(st.st_size) > kMaxIdxBytes) return Corrupt(fmt::format("{}: {} bytes", name, st.st_size));
  std::string text(static_cast<size_t>(st.st_size), '\0');
  FP_ASSIGN_OR_RETURN(size_t n, PreadUpTo(fd, {reinterpret_cast<uint8_t*>(text.data()), text.size()}, 0, name));
  text.resize(n);
  return text;
}

bool Lock(int fd, short type, off_t start, off_t len, bool wait) {
  struct flock fl = {};
  fl.l_type = type;
  fl.l_whence = SEEK_SET;
  fl.l_start = start;
  fl.l_len = len;
  return RetryOnEintr([&] { return ::fcntl(fd, wait ? F_OFD_SETLKW : F_OFD_SETLK, &fl); }) == 0;
}

// The cache directory: made (0700) when missing; refused when another user
// owns it or anyone may write it without the sticky bit.
Result<UniqueFd> OpenDir(const std::string& dir, bool create) {
  if (create) {
    for (size_t at = 1; at <= dir.size(); ++at) {
      if (at != dir.size() && dir[at] != '/') continue;
      std::string part = dir.substr(0, at);
      if (::mkdir(part.c_str(), 0700) != 0 && errno != EEXIST) return ErrnoError(fmt::format("cannot make cache directory {}", part));
    }
  }
  UniqueFd fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!fd.valid()) return ErrnoError(fmt::format("cannot open cache directory {}", dir));
  struct stat st;
  if (::fstat(fd.get(), &st) != 0) return ErrnoError("stat " + dir);
  if (st.st_uid != ::geteuid() && st.st_uid != 0) {
    return InvalidArgument(fmt::format("cache directory {} belongs to another user: refused", dir));
  }
  if ((st.st_mode & S_IWOTH) != 0 && (st.st_mode & S_ISVTX) == 0) {
    return InvalidArgument(fmt::format("cache directory {} is writable by everyone: refused", dir));
  }
  return fd;
}

// The lock file, locked `type` on [start, start+len), still the one at its
// name (eviction may have removed it between open and lock).
Result<UniqueFd> OpenLocked(int dirfd, const std::string& dir, const std::string& name, short type, off_t start,
                            off_t len, bool wait) {
  for (int tries = 0; tries < 8; ++tries) {
    FP_ASSIGN_OR_RETURN(UniqueFd fd, OpenIn(dirfd, dir, name, O_RDWR | O_CREAT));
    if (!Lock(fd.get(), type, start, len, wait)) return Busy(fmt::format("{}/{} is in use", dir, name));
    struct stat a, b;
    if (::fstat(fd.get(), &a) == 0 && ::fstatat(dirfd, name.c_str(), &b, AT_SYMLINK_NOFOLLOW) == 0 &&
        a.st_ino == b.st_ino && a.st_dev == b.st_dev) {
      return fd;
    }
  }
  return Busy(fmt::format("{}/{} keeps being replaced", dir, name));
}

std::optional<uint64_t> Num(std::string_view s) {
  uint64_t v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size() || s.empty()) return std::nullopt;
  return v;
}

}  // namespace

std::string DefaultCacheDir() {
  const char* xdg = std::getenv("XDG_CACHE_HOME");
  if (xdg != nullptr && xdg[0] == '/') return std::string(xdg) + "/flashpipe";
  const char* home = std::getenv("HOME");
  return std::string(home != nullptr && home[0] != 0 ? home : "/tmp") + "/.cache/flashpipe";
}

std::string EntryKey(const RemoteStat& stat) {
  Sha256 h;
  std::string id = fmt::format("{}\n{}\n{}\n{}", stat.url, stat.size, stat.etag, stat.last_modified);
  h.Update({reinterpret_cast<const uint8_t*>(id.data()), id.size()});
  return Sha256::Hex(h.Final()).substr(0, 40);
}

std::string FormatMeta(const EntryMeta& m) {
  auto v = [](const std::string& s) { return s.empty() ? std::string("-") : s; };
  std::string out = fmt::format("flashpipe-cache 1\nurl {}\nsize {}\netag {}\nlast-modified {}\nsha256 {}\nboot {}\nsynced {}\n",
                                v(m.url), m.size, v(m.etag), v(m.last_modified), v(m.sha256), v(m.boot_id), m.synced ? 1 : 0);
  for (const ByteSpan& s : m.spans) out += fmt::format("span {} {}\n", s.begin, s.end);
  return out;
}

Result<EntryMeta> ParseMeta(std::string_view text) {
  EntryMeta m;
  bool magic = false;
  for (size_t start = 0; start < text.size();) {
    size_t nl = text.find('\n', start);
    if (nl == std::string_view::npos) return Corrupt("cache index: last line unterminated");
    std::string_view line = text.substr(start, nl - start);
    start = nl + 1;
    size_t sp = line.find(' ');
    std::string_view key = line.substr(0, sp), value = sp == std::string_view::npos ? "" : line.substr(sp + 1);
    std::string val = value == "-" ? "" : std::string(value);
    if (key == "flashpipe-cache") {
      magic = value == "1";
    } else if (key == "url") {
      m.url = val;
    } else if (key == "size") {
      auto n = Num(value);
      if (!n) return Corrupt("cache index: bad size");
      m.size = *n;
    } else if (key == "etag") {
      m.etag = val;
    } else if (key == "last-modified") {
      m.last_modified = val;
    } else if (key == "sha256") {
      m.sha256 = val;
    } else if (key == "boot") {
      m.boot_id = val;
    } else if (key == "synced") {
      m.synced = value == "1";
    } else if (key == "span") {
      size_t sp2 = value.find(' ');
      auto b = Num(value.substr(0, sp2)), e = sp2 == std::string_view::npos ? std::nullopt : Num(value.substr(sp2 + 1));
      if (!b || !e || *e <= *b || *e > m.size || (!m.spans.empty() && *b < m.spans.back().end)) {
        return Corrupt(fmt::format("cache index: bad span '{}'", value));
      }
      m.spans.push_back({*b, *e});
    } else {
      return Corrupt("cache index: unknown line");
    }
  }
  if (!magic) return Corrupt("cache index: not a flashpipe cache index");
  return m;
}

Result<std::unique_ptr<Entry>> Entry::Open(const CacheOptions& options, const RemoteStat& stat) {
  std::unique_ptr<Entry> e(new Entry());
  e->stat_ = stat;
  e->key_ = EntryKey(stat);
  if (!options.enabled) {
    const char* tmp = std::getenv("TMPDIR");
    std::string dir = tmp != nullptr && tmp[0] == '/' ? tmp : "/tmp";
    e->data_ = UniqueFd(::open(dir.c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0600));
    if (!e->data_.valid()) return ErrnoError(fmt::format("cannot make a temporary file in {}", dir));
    if (::ftruncate(e->data_.get(), static_cast<off_t>(stat.size)) != 0) return ErrnoError("ftruncate temporary file");
    e->path_ = fmt::format("/proc/self/fd/{}", e->data_.get());
    e->dir_ = dir;
    e->fetch_locked_ = true;
    return e;
  }
  e->cached_ = true;
  e->dir_ = options.dir.empty() ? DefaultCacheDir() : options.dir;
  FP_ASSIGN_OR_RETURN(e->dirfd_, OpenDir(e->dir_, true));
  FP_ASSIGN_OR_RETURN(e->lock_, OpenLocked(e->dirfd_.get(), e->dir_, e->key_ + ".lock", F_RDLCK, kUseByte, 1, true));
  ::futimens(e->lock_.get(), nullptr);  // last used, for eviction
  std::string name = e->key_ + ".data";
  auto data = OpenIn(e->dirfd_.get(), e->dir_, name, O_RDWR);
  if (!data.ok() && data.status().sys_errno() == ENOENT) {
    // Made whole under a temporary name: the size first, then the name.
    std::string temp = TempName(name);
    UniqueFd fd(::openat(e->dirfd_.get(), temp.c_str(), O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
    if (!fd.valid()) return ErrnoError(fmt::format("cannot create {}/{}", e->dir_, temp));
    if (::ftruncate(fd.get(), static_cast<off_t>(stat.size)) != 0 ||
        ::renameat2(e->dirfd_.get(), temp.c_str(), e->dirfd_.get(), name.c_str(), RENAME_NOREPLACE) != 0) {
      int err = errno;
      ::unlinkat(e->dirfd_.get(), temp.c_str(), 0);
      if (err != EEXIST) return IoError(fmt::format("cannot make {}/{}", e->dir_, name), err);
    }
    data = OpenIn(e->dirfd_.get(), e->dir_, name, O_RDWR);
  }
  if (!data.ok()) return data.status();
  e->data_ = std::move(*data);
  struct stat st;
  if (::fstat(e->data_.get(), &st) != 0) return ErrnoError("stat " + name);
  if (static_cast<uint64_t>(st.st_size) != stat.size) {
    return Corrupt(fmt::format("cache file {}/{} has {} bytes, not {}", e->dir_, name, st.st_size, stat.size));
  }
  e->path_ = e->dir_ + "/" + name;
  return e;
}

Entry::~Entry() = default;  // closing the lock file releases its locks

bool Entry::TryLockFetch() {
  if (!fetch_locked_) fetch_locked_ = Lock(lock_.get(), F_WRLCK, kFetchByte, 1, false);
  return fetch_locked_;
}

EntryMeta Entry::Load() const {
  EntryMeta none{.url = DisplayUrl(stat_.url), .size = stat_.size, .etag = stat_.etag, .last_modified = stat_.last_modified};
  if (!cached_) return none;
  auto fd = OpenIn(dirfd_.get(), dir_, key_ + ".idx", O_RDONLY);
  if (!fd.ok()) return none;
  auto text = ReadSmall(fd->get(), key_ + ".idx");
  auto meta = text.ok() ? ParseMeta(*text) : Result<EntryMeta>(text.status());
  if (!meta.ok() || meta->size != stat_.size || meta->etag != stat_.etag || meta->last_modified != stat_.last_modified) {
    return none;
  }
  if (!meta->synced && meta->boot_id != BootId()) return none;
  return *meta;
}

Status Entry::Save(const EntryMeta& meta, bool final) {
  if (!cached_) return Status::Ok();
  EntryMeta m = meta;
  m.boot_id = BootId();
  m.synced = final;
  if (final && ::fdatasync(data_.get()) != 0) return ErrnoError("fdatasync " + path_);
  return WriteWhole(dirfd_.get(), dir_, key_ + ".idx", FormatMeta(m));
}

Status Entry::Discard() {
  if (::unlinkat(dirfd_.get(), (key_ + ".idx").c_str(), 0) != 0 && errno != ENOENT) return ErrnoError("unlink idx");
  if (::ftruncate(data_.get(), 0) != 0 || ::ftruncate(data_.get(), static_cast<off_t>(stat_.size)) != 0) {
    return ErrnoError("truncate " + path_);
  }
  return Status::Ok();
}

Result<std::vector<CacheListing>> ListCache(const std::string& dir) {
  std::vector<CacheListing> out;
  auto dirfd = OpenDir(dir, false);
  if (!dirfd.ok() && dirfd.status().sys_errno() == ENOENT) return out;
  if (!dirfd.ok()) return dirfd.status();
  DIR* d = ::fdopendir(::dup(dirfd->get()));
  if (d == nullptr) return ErrnoError("opendir " + dir);
  while (dirent* de = ::readdir(d)) {
    std::string name = de->d_name;
    if (name.size() <= 4 || !name.ends_with(".idx") || name[0] == '.') continue;
    CacheListing l{.key = name.substr(0, name.size() - 4)};
    auto fd = OpenIn(dirfd->get(), dir, name, O_RDONLY);
    auto text = fd.ok() ? ReadSmall(fd->get(), name) : Result<std::string>(fd.status());
    auto meta = text.ok() ? ParseMeta(*text) : Result<EntryMeta>(text.status());
    if (meta.ok()) l.meta = *meta;
    struct stat st;
    if (::fstatat(dirfd->get(), (l.key + ".data").c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0) l.disk_bytes = uint64_t(st.st_blocks) * 512;
    if (::fstatat(dirfd->get(), (l.key + ".lock").c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0) l.last_used = st.st_mtim.tv_sec;
    auto probe = OpenLocked(dirfd->get(), dir, l.key + ".lock", F_WRLCK, 0, 2, false);
    l.in_use = !probe.ok();
    out.push_back(std::move(l));
  }
  ::closedir(d);
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.last_used < b.last_used; });
  return out;
}

namespace {

// One entry gone, if nobody uses it.
Result<bool> RemoveEntry(int dirfd, const std::string& dir, const std::string& key) {
  auto lock = OpenLocked(dirfd, dir, key + ".lock", F_WRLCK, 0, 2, false);
  if (!lock.ok()) return lock.status().code() == Code::kBusy ? Result<bool>(false) : Result<bool>(lock.status());
  for (const char* ext : {".idx", ".data", ".lock"}) {
    if (::unlinkat(dirfd, (key + ext).c_str(), 0) != 0 && errno != ENOENT) return ErrnoError("remove " + dir + "/" + key + ext);
  }
  return true;
}

}  // namespace

Result<std::vector<std::string>> RemoveFromCache(const std::string& dir, const std::vector<std::string>& keys) {
  FP_ASSIGN_OR_RETURN(auto list, ListCache(dir));
  FP_ASSIGN_OR_RETURN(UniqueFd dirfd, OpenDir(dir, false));
  std::vector<std::string> removed;
  for (const CacheListing& l : list) {
    if (!keys.empty() && std::find(keys.begin(), keys.end(), l.key) == keys.end()) continue;
    FP_ASSIGN_OR_RETURN(bool gone, RemoveEntry(dirfd.get(), dir, l.key));
    if (gone) removed.push_back(l.key);
  }
  return removed;
}

Result<std::vector<std::string>> CollectCache(const std::string& dir, uint64_t max_bytes) {
  FP_ASSIGN_OR_RETURN(auto list, ListCache(dir));
  std::vector<std::string> removed;
  uint64_t total = 0;
  for (const CacheListing& l : list) total += l.disk_bytes;
  if (total <= max_bytes) return removed;
  FP_ASSIGN_OR_RETURN(UniqueFd dirfd, OpenDir(dir, false));
  for (const CacheListing& l : list) {  // least recently used first
    if (total <= max_bytes) break;
    FP_ASSIGN_OR_RETURN(bool gone, RemoveEntry(dirfd.get(), dir, l.key));
    if (!gone) continue;
    total -= l.disk_bytes;
    removed.push_back(l.key);
  }
  return removed;
}

}  // namespace flashpipe::fetch
