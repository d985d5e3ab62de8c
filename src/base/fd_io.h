// Full transfers on file descriptors: the one place where EINTR and short
// transfers are handled. Every other file calls these instead of looping
// around read(2)/write(2) itself.
//
// Each function moves every byte or returns an error whose message names the
// file and the byte offset ("write out.img at byte 0x1000: No space left on
// device"); errno is captured into the Status. `name` is only used in
// messages. `position` is the byte offset to report for calls that use the
// descriptor's current position (it does not seek).
//
//   FP_RETURN_IF_ERROR(PwriteAll(fd, data, offset, path));
//   FP_ASSIGN_OR_RETURN(size_t got, ReadUpTo(fd, buf, "stdin"));   // < size only at EOF
//   int r = RetryOnEintr([&] { return ::waitpid(pid, &st, 0); });
//
// Sockets with deadlines (wire/net.h) have their own helpers; ByteReader
// streams (input/byte_reader.h) have the member ByteReader::ReadUpTo.
#pragma once

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include "base/status.h"

namespace flashpipe {

// Calls f() again while it fails with EINTR (a system call: `r < 0` and
// errno == EINTR).
template <typename F>
auto RetryOnEintr(F&& f) {
  for (;;) {
    auto r = f();
    if (r < 0 && errno == EINTR) continue;
    return r;
  }
}

// The same for APIs that return -errno instead of setting errno (liburing).
template <typename F>
auto RetryOnNegativeEintr(F&& f) {
  for (;;) {
    auto r = f();
    if (r == -EINTR) continue;
    return r;
  }
}

// write(2)/pwrite(2) until every byte is written. A write that returns 0 is
// an error (kIoError "wrote 0 bytes"), never a silent success.
Status WriteAll(int fd, std::span<const uint8_t> data, std::string_view name, uint64_t position = 0);
Status PwriteAll(int fd, std::span<const uint8_t> data, uint64_t offset, std::string_view name);

// read(2)/pread(2) until `buf` is full or end of file; returns the bytes
// read, fewer than buf.size() only at end of file.
Result<size_t> ReadUpTo(int fd, std::span<uint8_t> buf, std::string_view name, uint64_t position = 0);
Result<size_t> PreadUpTo(int fd, std::span<uint8_t> buf, uint64_t offset, std::string_view name);

// Exactly buf.size() bytes; an early end of file is kCorrupt
// "read NAME at byte 0x..: unexpected end of file".
Status ReadExact(int fd, std::span<uint8_t> buf, std::string_view name, uint64_t position = 0);
Status PreadExact(int fd, std::span<uint8_t> buf, uint64_t offset, std::string_view name);

}  // namespace flashpipe
