#include "powercut/write_log.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include <algorithm>

#include "base/endian.h"
#include "base/unique_fd.h"

namespace flashpipe::powercut {
namespace {

constexpr size_t kEntryHeader = 32;
constexpr uint64_t kMaxLogBytes = uint64_t{4} << 30;

bool ValidSectorSize(uint64_t s) { return s >= 512 && s <= 65536 && (s & (s - 1)) == 0; }

// The entry header at `at`, checked against the log and the device.
Status ParseEntry(std::span<const uint8_t> log, uint64_t at, uint64_t index, uint32_t ss, uint64_t device_size,
                  LogEntry* e) {
  auto where = [&] { return fmt::format("log entry {} at byte 0x{:x}", index, at); };
  if (at > log.size() || log.size() - at < ss) return Corrupt(fmt::format("{}: past the end of the log", where()));
  const uint8_t* h = log.data() + at;
  const uint64_t sector = LoadLE<uint64_t>(h), nr = LoadLE<uint64_t>(h + 8);
  e->flags = LoadLE<uint64_t>(h + 16);
  const uint64_t data_len = LoadLE<uint64_t>(h + 24);
  if (e->is_mark()) {
    if (data_len > ss - kEntryHeader) return Corrupt(fmt::format("{}: mark of {} bytes", where(), data_len));
    e->mark.assign(reinterpret_cast<const char*>(h + kEntryHeader), data_len);
    e->mark.erase(std::find(e->mark.begin(), e->mark.end(), '\0'), e->mark.end());
    return Status::Ok();
  }
  if (nr > device_size / ss || sector > device_size / ss - nr) {
    return Corrupt(fmt::format("{}: {} sectors at sector {} lie outside the device of {} bytes", where(), nr, sector,
                               device_size));
  }
  e->offset = sector * ss;
  e->length = nr * ss;
  return Status::Ok();
}

}  // namespace

Result<WriteLog> WriteLog::Parse(std::span<const uint8_t> log, uint64_t device_size) {
  if (log.size() < 28) return Corrupt(fmt::format("log of {} bytes has no super block", log.size()));
  if (LoadLE<uint64_t>(log.data()) != kLogMagic) return Corrupt("log: no dm-log-writes magic at byte 0");
  const uint64_t version = LoadLE<uint64_t>(log.data() + 8), count = LoadLE<uint64_t>(log.data() + 16);
  const uint32_t ss = LoadLE<uint32_t>(log.data() + 24);
  if (version != kLogVersion) return Unsupported(fmt::format("log version {} (only {} is known)", version, kLogVersion));
  if (!ValidSectorSize(ss)) return Corrupt(fmt::format("log sector size {}", ss));
  if (count > log.size() / ss) return Corrupt(fmt::format("log claims {} entries in {} bytes", count, log.size()));
  WriteLog out(ss);
  uint64_t at = ss;
  for (uint64_t i = 0; i < count; ++i) {
    LogEntry e;
    FP_RETURN_IF_ERROR(ParseEntry(log, at, i, ss, device_size, &e));
    at += ss;
    if (!e.is_discard() && !e.is_mark() && e.length > 0) {
      if (log.size() - at < e.length) {
        return Corrupt(fmt::format("log entry {}: its {} bytes of data run past the end of the log", i, e.length));
      }
      e.data_at = out.bytes_.size();
      out.bytes_.insert(out.bytes_.end(), log.begin() + static_cast<std::ptrdiff_t>(at),
                        log.begin() + static_cast<std::ptrdiff_t>(at + e.length));
      at += e.length;
    }
    // The target's own mark when it is removed: not a step of the run.
    if (e.is_mark() && e.mark == kEndMark && i + 1 == count) break;
    out.entries_.push_back(std::move(e));
  }
  return out;
}

// Mapped, not read: a log device is mostly unwritten (a sparse copy), and
// only the entries' bytes are copied out.
Result<WriteLog> WriteLog::ReadFile(const std::string& path, uint64_t device_size) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  struct stat st;
  if (!fd.valid() || ::fstat(fd.get(), &st) != 0) return ErrnoError(fmt::format("open log {}", path));
  const auto size = static_cast<uint64_t>(st.st_size);
  if (size > kMaxLogBytes) return InvalidArgument(fmt::format("log {}: {} bytes, more than this replayer takes", path, size));
  if (size == 0) return Corrupt(fmt::format("log {} is empty", path));
  void* map = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd.get(), 0);
  if (map == MAP_FAILED) return ErrnoError(fmt::format("mmap log {}", path));
  auto log = Parse(std::span(static_cast<const uint8_t*>(map), size), device_size);
  ::munmap(map, size);
  if (!log.ok()) return log.status().WithContext(path);
  return log;
}

void WriteLog::AddWrite(uint64_t offset, std::span<const uint8_t> data, uint64_t flags) {
  LogEntry e{.flags = flags, .offset = offset, .length = data.size(), .data_at = bytes_.size()};
  bytes_.insert(bytes_.end(), data.begin(), data.end());
  entries_.push_back(std::move(e));
}

void WriteLog::AddDiscard(uint64_t offset, uint64_t length) {
  entries_.push_back(LogEntry{.flags = kDiscard, .offset = offset, .length = length});
}

void WriteLog::AddFlush() { entries_.push_back(LogEntry{.flags = kFlush}); }

void WriteLog::AddMark(std::string text) { entries_.push_back(LogEntry{.flags = kMark, .mark = std::move(text)}); }

std::span<const uint8_t> WriteLog::data(const LogEntry& e) const {
  if (e.is_discard() || e.is_mark()) return {};
  return std::span(bytes_).subspan(e.data_at, e.length);
}

uint64_t WriteLog::writes() const {
  return std::count_if(entries_.begin(), entries_.end(), [](const LogEntry& e) { return e.changes_medium(); });
}
uint64_t WriteLog::flushes() const {
  return std::count_if(entries_.begin(), entries_.end(), [](const LogEntry& e) { return e.has_flush(); });
}
uint64_t WriteLog::marks() const {
  return std::count_if(entries_.begin(), entries_.end(), [](const LogEntry& e) { return e.is_mark(); });
}

}  // namespace flashpipe::powercut
