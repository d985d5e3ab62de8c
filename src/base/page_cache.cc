#include "base/page_cache.h"

#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <optional>
#include <vector>

namespace flashpipe {

namespace {

// cachestat(2), Linux 6.5+ (not in this system's headers): the page cache's
// count for a range, without mapping anything. nullopt where it is missing.
constexpr long kSysCachestat = 451;  // the same number on every architecture
struct CachestatRange {
  uint64_t off, len;
};
struct Cachestat {
  uint64_t nr_cache, nr_dirty, nr_writeback, nr_evicted, nr_recently_evicted;
};

std::optional<uint64_t> CachestatBytes(int fd, uint64_t offset, uint64_t length, uint64_t page) {
  static std::atomic<bool> missing{false};
  if (missing.load(std::memory_order_relaxed) || length == 0) return std::nullopt;
  CachestatRange range{offset / page * page, length + offset % page};
  Cachestat cs{};
  if (::syscall(kSysCachestat, fd, &range, &cs, 0) != 0) {
    if (errno == ENOSYS) missing.store(true, std::memory_order_relaxed);
    return std::nullopt;
  }
  return cs.nr_cache * page;
}

}  // namespace

Result<uint64_t> CachedBytes(int fd, uint64_t offset, uint64_t length) {
  const uint64_t page = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
  if (auto fast = CachestatBytes(fd, offset, length, page)) return *fast;
  constexpr uint64_t kWindow = 1ull << 30;  // mapped and asked about at a time
  uint64_t cached = 0;
  std::vector<unsigned char> vec;
  for (uint64_t at = offset / page * page, end = offset + length; at < end;) {
    uint64_t n = std::min(kWindow, end - at);
    void* p = ::mmap(nullptr, n, PROT_READ, MAP_SHARED, fd, static_cast<off_t>(at));
    if (p == MAP_FAILED) return ErrnoError(fmt::format("mmap at byte 0x{:x} to ask the page cache", at));
    vec.assign((n + page - 1) / page, 0);
    int r = ::mincore(p, n, vec.data());
    int saved = errno;
    ::munmap(p, n);
    if (r != 0) {
      errno = saved;
      return ErrnoError(fmt::format("mincore at byte 0x{:x}", at));
    }
    for (unsigned char v : vec) cached += (v & 1) ? page : 0;
    at += n;
  }
  return cached;
}

bool MostlyCached(int fd, uint64_t offset, uint64_t length) {
  struct stat st;
  if (::fstat(fd, &st) != 0 || !(S_ISREG(st.st_mode) || S_ISBLK(st.st_mode))) return false;
  uint64_t stored = S_ISBLK(st.st_mode) ? length : std::min<uint64_t>(static_cast<uint64_t>(st.st_blocks) * 512, length);
  if (stored == 0) return false;
  auto cached = CachedBytes(fd, offset, length);
  return cached.ok() && *cached * 2 >= stored;
}

}  // namespace flashpipe
