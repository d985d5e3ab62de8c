// Small socket helpers shared by the TCP and UDP servers.
#pragma once

#include <netinet/in.h>

#include <chrono>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "base/status.h"
#include "base/unique_fd.h"

namespace flashpipe::fastboot {

// "127.0.0.1:5554", "[::1]:5554", ":5554" (loopback), "0.0.0.0:0".
Result<sockaddr_storage> ParseHostPort(std::string_view text, socklen_t* len);
std::string FormatAddress(const sockaddr_storage& addr);
// A bound socket (SOCK_STREAM listening, or SOCK_DGRAM).
Result<UniqueFd> BindSocket(std::string_view host_port, int type);
uint16_t LocalPort(int fd);

// Reads exactly out.size() bytes. kCancelled on EOF before the first byte
// when eof_ok, kIoError otherwise; kCancelled on timeout (0 = none).
Status ReadFull(int fd, std::span<uint8_t> out, std::chrono::milliseconds timeout, bool eof_ok);
// Waits until fd is readable: false on timeout.
Result<bool> WaitReadable(int fd, std::chrono::milliseconds timeout);
Status WriteFull(int fd, std::span<const uint8_t> data);

}  // namespace flashpipe::fastboot
