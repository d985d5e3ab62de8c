// WriteLog: the block writes, flushes and marks of one run, in the order a
// device made them durable, as dm-log-writes records them (the kernel's
// Documentation/admin-guide/device-mapper/log-writes.rst and
// drivers/md/dm-log-writes.c). The power-cut harness (crash_states.h)
// rebuilds the device at any point of it.
//
// On disk (all little-endian): a super block in the first log sector
//   magic u64 0x6a736677736872, version u64 1, nr_entries u64, sectorsize u32
// then, from byte `sectorsize` on, one entry per sector-sized header
//   sector u64, nr_sectors u64 (both in units of sectorsize), flags u64,
//   data_len u64, and for a MARK its data_len bytes of text after the header
// followed, unless the entry is a DISCARD, by nr_sectors * sectorsize bytes of
// data. Flags: FLUSH 1 (everything logged before is durable), FUA 2 (this
// write is durable when logged), DISCARD 4, MARK 8 (`dmsetup message DEV 0
// mark TEXT`), METADATA 16. dm-log-writes logs a write only once a flush has
// made it durable or it was FUA, so the log is the order on the medium, not
// the order of submission; marks go in as they are sent. The mark the
// target adds when it is removed ("dm-log-writes-end") is dropped.
//
// The unit-level model (testing/volatile_cache.h) builds the same log from
// an in-memory device with AddWrite/AddFlush/AddMark, so both run the same
// crash states and checkers. Copyable; entries refer into bytes() by offset.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace flashpipe::powercut {

inline constexpr uint64_t kLogMagic = 0x6a736677736872;
inline constexpr uint64_t kLogVersion = 1;
inline constexpr std::string_view kEndMark = "dm-log-writes-end";
enum LogFlag : uint64_t { kFlush = 1, kFua = 2, kDiscard = 4, kMark = 8, kMetadata = 16 };

struct LogEntry {
  uint64_t flags = 0;
  uint64_t offset = 0;   // bytes on the device
  uint64_t length = 0;   // bytes written or discarded (0 for a plain flush or a mark)
  uint64_t data_at = 0;  // where the written bytes sit in WriteLog::bytes()
  std::string mark;      // the text of a MARK

  bool has_flush() const { return (flags & kFlush) != 0; }
  bool is_mark() const { return (flags & kMark) != 0; }
  bool is_discard() const { return (flags & kDiscard) != 0; }
  bool is_fua() const { return (flags & kFua) != 0; }
  // Changes the medium: a write (data) or a discard (read back as zeros).
  bool changes_medium() const { return length > 0 && !is_mark(); }
};

class WriteLog {
 public:
  explicit WriteLog(uint32_t sector_size = 512) : sector_size_(sector_size) {}

  // Parses a dm-log-writes log device (or a copy of it). Every entry must lie
  // inside `log` and inside a device of `device_size` bytes; errors name the
  // entry index and its byte offset in the log.
  static Result<WriteLog> Parse(std::span<const uint8_t> log, uint64_t device_size);
  static Result<WriteLog> ReadFile(const std::string& path, uint64_t device_size);

  // The model's side. REQUIRES: offsets and lengths are whole sectors.
  void AddWrite(uint64_t offset, std::span<const uint8_t> data, uint64_t flags = 0);
  void AddDiscard(uint64_t offset, uint64_t length);
  void AddFlush();
  void AddMark(std::string text);

  uint32_t sector_size() const { return sector_size_; }
  const std::vector<LogEntry>& entries() const { return entries_; }
  std::span<const uint8_t> data(const LogEntry& e) const;
  uint64_t writes() const;   // entries that change the medium
  uint64_t flushes() const;  // entries with FLUSH
  uint64_t marks() const;

 private:
  uint32_t sector_size_;
  std::vector<LogEntry> entries_;
  std::vector<uint8_t> bytes_;
};

}  // namespace flashpipe::powercut
