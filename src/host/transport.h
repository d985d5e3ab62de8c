// Transport: how the host exchanges fastboot messages with one device,
// whatever carries them (TCP frames, UDP packets, USB bulk transfers, a test
// double). The host side of the device's fastboot/transport.h.
//
// Send writes one command (one message); Receive reads one response (at
// most the response limit, wire/protocol.h), waiting at most the
// transport's idle limit: kTimedOut when the device stays silent that long,
// kCancelled when it went away (closed, reset, unplugged). SendData writes
// bytes of a data phase, which the device counts across messages; it fails
// with kTimedOut when the device takes nothing for the idle limit. One
// thread uses a transport at a time.
#pragma once

#include <chrono>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "base/status.h"

namespace flashpipe::host {

class Transport {
 public:
  virtual ~Transport() = default;
  virtual Status Send(std::string_view command) = 0;
  virtual Result<std::string> Receive() = 0;
  virtual Status SendData(std::span<const std::span<const uint8_t>> pieces) = 0;
  // "tcp:127.0.0.1:5554", "udp:board:5554", "usb:1-1.2" (for reports).
  virtual std::string name() const = 0;
};

struct TransportOptions {
  // The longest a device may stay silent, or take no data, mid-command.
  std::chrono::milliseconds idle{60000};
  // How long a connection attempt may take.
  std::chrono::milliseconds connect{5000};
};

}  // namespace flashpipe::host
