// Fastboot wire messages, independent of any transport: splitting a command
// into name and argument, formatting the four responses the 29.0.6 client
// understands (OKAY, FAIL, INFO, DATA), and parsing download sizes; for the
// host, the download command and a response taken apart.
//
// Every response built here is at most kMaxResponse (64) bytes: the client
// reads into a 256-byte buffer and a longer TCP response corrupts its
// session, and U-Boot/barebox clients assume 64. Messages are cut to fit and
// non-printable bytes are replaced by '?'. (How the device fits a long
// failure reason into INFO lines and a short FAIL: fastboot/reason_text.h.)
// Pure functions; no I/O.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace flashpipe::wire {

inline constexpr size_t kMaxCommand = 64;
inline constexpr size_t kMaxResponse = 64;
inline constexpr size_t kMaxMessage = kMaxResponse - 4;  // after the status word

// A command split at its first ':' ("flash:boot_a" -> "flash", "boot_a") or,
// for the space-separated families ("oem x y", "flashing unlock"), at its
// first ' '. A bare word ("reboot") has an empty argument.
struct Command {
  std::string name;
  std::string arg;
};

// Fails on empty input, on bytes outside printable ASCII and on commands
// longer than kMaxCommand; the message says which byte or length.
Result<Command> ParseCommand(std::string_view wire);

std::string Okay(std::string_view message = {});
std::string Fail(std::string_view message);
std::string Info(std::string_view message);
std::string Data(uint32_t size);  // "DATA%08x"

// "0x%08x", how max-download-size is reported (fuzzy_fastboot checks this).
std::string Hex32(uint32_t value);
// "0x%016llx", partition sizes.
std::string Hex64(uint64_t value);

// download:%08x argument: exactly 8 hex digits, non-zero.
Result<uint32_t> ParseDownloadSize(std::string_view arg);

// "download:%08x", what the host sends before a data phase.
std::string DownloadCommand(uint32_t size);

// A response as the host reads it. TEXT (newer devices: text for the user,
// not ending the command) is taken like INFO; DATA carries the size the
// device agreed to.
struct Response {
  enum class Kind { kOkay, kFail, kInfo, kText, kData };
  Kind kind = Kind::kOkay;
  std::string message;     // after the status word
  uint32_t data_size = 0;  // kData only
  // INFO and TEXT leave the command going; the others end its phase.
  bool final() const { return kind != Kind::kInfo && kind != Kind::kText; }
};
// kCorrupt, naming the bytes, for an unknown status word, a message shorter
// than 4 bytes or a DATA without 8 hex digits.
Result<Response> ParseResponse(std::string_view wire);

}  // namespace flashpipe::wire
