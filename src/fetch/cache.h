// The download cache: one entry per version of a remote file, shared by
// every run and every device of a fleet.
//
// Layout: a directory ($XDG_CACHE_HOME/flashpipe, else ~/.cache/flashpipe,
// or --cache DIR) owned by the user and writable by nobody else unless
// sticky; per entry, named by KEY = SHA-256 of (URL, size, ETag,
// Last-Modified), so a changed file is a new entry and never mixed with an
// old one:
//   KEY.data  the file's bytes at their own offsets (a sparse file: bytes
//             never fetched and all-zero blocks are holes)
//   KEY.idx   what KEY.data holds: the URL, size and validators, the byte
//             spans fetched, the whole file's SHA-256 once checked; written
//             whole (temp name, rename), so a reader sees the old list or
//             the new one
//   KEY.lock  OFD locks: byte 0 held (write) by the one process fetching
//             into the entry, byte 1 held (read) by every user and taken
//             (write) by eviction, which thus never removes an entry in use
// An idx lists only spans whose bytes were written before it; the last one
// of a fetch follows an fdatasync of the data and says "synced"; one that
// was not synced is trusted only within the boot that wrote it (a power
// cut may have lost the bytes, a kill -9 cannot). Files are created with
// openat(O_EXCL|O_NOFOLLOW) under a temporary name and renamed into place;
// existing ones are opened with O_NOFOLLOW and must be regular files of
// this user with one link, so a link planted in the directory is refused,
// never followed.
// Without the cache (--no-cache) an entry is an unlinked temporary file in
// $TMPDIR: the same code, nothing kept.
// Thread-compatible; the locks order processes.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "base/unique_fd.h"
#include "fetch/http_client.h"

namespace flashpipe::fetch {

struct CacheOptions {
  std::string dir;                   // "" = DefaultCacheDir()
  bool enabled = true;               // false: --no-cache
  uint64_t max_bytes = uint64_t{20} << 30;  // eviction (least recently used) past this
};

// $XDG_CACHE_HOME/flashpipe, else $HOME/.cache/flashpipe.
std::string DefaultCacheDir();

// What an entry's idx records.
struct EntryMeta {
  std::string url;  // DisplayUrl
  uint64_t size = 0;
  std::string etag, last_modified;
  std::string sha256;  // the whole file's, checked; "" when not known
  std::vector<ByteSpan> spans;  // sorted, disjoint
  bool synced = false;
  std::string boot_id;
};
std::string FormatMeta(const EntryMeta& meta);
Result<EntryMeta> ParseMeta(std::string_view text);

std::string EntryKey(const RemoteStat& stat);

class Entry {
 public:
  // The entry of `stat`, created when missing, held in use until destroyed.
  static Result<std::unique_ptr<Entry>> Open(const CacheOptions& options, const RemoteStat& stat);
  ~Entry();

  bool cached() const { return cached_; }
  int fd() const { return data_.get(); }
  // A path open(2) takes for the data (for a temporary entry /proc/self/fd/N).
  const std::string& path() const { return path_; }
  const std::string& key() const { return key_; }
  const std::string& dir() const { return dir_; }

  // The fetch lock (byte 0), without waiting; true when this process holds
  // it (always, for a temporary entry).
  bool TryLockFetch();
  // What the idx says now: spans of another version or of a crashed boot
  // are dropped (an empty list), as is an idx that does not parse.
  EntryMeta Load() const;
  // Replaces the idx. `final`: the data is fdatasync'ed first.
  Status Save(const EntryMeta& meta, bool final);
  // Empties the data (holes) and the idx. REQUIRES: the fetch lock.
  Status Discard();

 private:
  Entry() = default;
  bool cached_ = false;
  UniqueFd dirfd_, data_, lock_;
  std::string dir_, key_, path_;
  RemoteStat stat_;
  bool fetch_locked_ = false;
};

// `flashpipe cache ls|rm|gc`.
struct CacheListing {
  std::string key;
  EntryMeta meta;
  uint64_t disk_bytes = 0;   // blocks the data occupies
  int64_t last_used = 0;     // seconds since the epoch
  bool in_use = false;
};
Result<std::vector<CacheListing>> ListCache(const std::string& dir);
// Removes entries not in use; `keys` empty: all of them. Returns the keys removed.
Result<std::vector<std::string>> RemoveFromCache(const std::string& dir, const std::vector<std::string>& keys);
// Removes least recently used entries not in use until the rest take at
// most `max_bytes`. Returns the keys removed.
Result<std::vector<std::string>> CollectCache(const std::string& dir, uint64_t max_bytes);

}  // namespace flashpipe::fetch
