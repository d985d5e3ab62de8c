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
// thread uses a transport at a time. A transport that can send bytes of a
// file without reading them into memory (TCP: sendfile) says so with
// can_send_file and takes SendDataFile: `head`, then `n` bytes of `file`
// from `offset` on, as one piece of the data phase; a file that ends
// before them is kCorrupt. ReceiveData reads exactly buf.size() bytes of a
// device-to-host data phase (after a DATA%08x answer to fetch: or upload):
// kTimedOut when the device sends nothing for the idle limit, kCancelled
// when it went away; a transport without one says Unsupported.
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
  virtual bool can_send_file() const { return false; }
  virtual Status SendDataFile(std::span<const std::span<const uint8_t>> /*head*/, int /*file*/, uint64_t /*offset*/,
                              uint64_t /*n*/) {
    return Unsupported("this transport sends no file ranges");
  }
  virtual Status ReceiveData(std::span<uint8_t> /*buf*/) {
    return Unsupported("this transport reads no data phase");
  }
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
