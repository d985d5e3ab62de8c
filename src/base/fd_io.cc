#include "base/fd_io.h"

#include <unistd.h>

namespace flashpipe {
namespace {

// One loop for the four transfer functions. `offset < 0`: the descriptor's
// current position (read/write), reported as `position`.
template <typename Buf, typename Call>
Result<size_t> Transfer(Buf buf, int64_t offset, uint64_t position, std::string_view verb, std::string_view name,
                        bool stop_at_eof, Call call) {
  size_t done = 0;
  while (done < buf.size()) {
    ssize_t n = RetryOnEintr([&] {
      return call(buf.data() + done, buf.size() - done, offset < 0 ? -1 : offset + static_cast<int64_t>(done));
    });
    uint64_t at = (offset < 0 ? position : static_cast<uint64_t>(offset)) + done;
    if (n < 0) return ErrnoError(fmt::format("{} {} at byte 0x{:x}", verb, name, at));
    if (n == 0) {
      if (stop_at_eof) break;
      return IoError(fmt::format("{} {} at byte 0x{:x}: wrote 0 bytes", verb, name, at), EIO);
    }
    done += static_cast<size_t>(n);
  }
  return done;
}

ssize_t Write(int fd, const uint8_t* p, size_t n, int64_t off) {
  return off < 0 ? ::write(fd, p, n) : ::pwrite(fd, p, n, static_cast<off_t>(off));
}

ssize_t Read(int fd, uint8_t* p, size_t n, int64_t off) {
  return off < 0 ? ::read(fd, p, n) : ::pread(fd, p, n, static_cast<off_t>(off));
}

Status Exact(Result<size_t> got, size_t want, std::string_view name, uint64_t at) {
  if (!got.ok()) return got.status();
  if (*got < want) {
    return Corrupt(fmt::format("read {} at byte 0x{:x}: unexpected end of file", name, at + *got));
  }
  return Status::Ok();
}

}  // namespace

Status WriteAll(int fd, std::span<const uint8_t> data, std::string_view name, uint64_t position) {
  auto call = [fd](const uint8_t* p, size_t n, int64_t off) { return Write(fd, p, n, off); };
  return Transfer(data, -1, position, "write", name, false, call).status();
}

Status PwriteAll(int fd, std::span<const uint8_t> data, uint64_t offset, std::string_view name) {
  auto call = [fd](const uint8_t* p, size_t n, int64_t off) { return Write(fd, p, n, off); };
  return Transfer(data, static_cast<int64_t>(offset), 0, "write", name, false, call).status();
}

Result<size_t> ReadUpTo(int fd, std::span<uint8_t> buf, std::string_view name, uint64_t position) {
  auto call = [fd](uint8_t* p, size_t n, int64_t off) { return Read(fd, p, n, off); };
  return Transfer(buf, -1, position, "read", name, true, call);
}

Result<size_t> PreadUpTo(int fd, std::span<uint8_t> buf, uint64_t offset, std::string_view name) {
  auto call = [fd](uint8_t* p, size_t n, int64_t off) { return Read(fd, p, n, off); };
  return Transfer(buf, static_cast<int64_t>(offset), 0, "read", name, true, call);
}

Status ReadExact(int fd, std::span<uint8_t> buf, std::string_view name, uint64_t position) {
  return Exact(ReadUpTo(fd, buf, name, position), buf.size(), name, position);
}

Status PreadExact(int fd, std::span<uint8_t> buf, uint64_t offset, std::string_view name) {
  return Exact(PreadUpTo(fd, buf, offset, name), buf.size(), name, offset);
}

}  // namespace flashpipe
