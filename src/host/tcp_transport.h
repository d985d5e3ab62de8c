// TcpTransport: fastboot over TCP from the host (wire/tcp_frame.h): connect,
// the FB01 handshake (the device must answer within 2 s), then a frame per
// command, per response and per SendData call.
#pragma once

#include <memory>

#include "base/unique_fd.h"
#include "host/transport.h"
#include "wire/net.h"

namespace flashpipe::host {

class TcpTransport : public Transport {
 public:
  static Result<std::unique_ptr<TcpTransport>> Connect(const wire::HostPort& to, const TransportOptions& options);

  Status Send(std::string_view command) override;
  Result<std::string> Receive() override;
  Status SendData(std::span<const std::span<const uint8_t>> pieces) override;
  bool can_send_file() const override { return true; }
  Status SendDataFile(std::span<const std::span<const uint8_t>> head, int file, uint64_t offset, uint64_t n) override;
  std::string name() const override { return name_; }

 private:
  TcpTransport(UniqueFd fd, std::string name, const TransportOptions& options);
  // One frame: the pieces, then `file_bytes` bytes of `file` at `offset`.
  Status Frame(std::span<const std::span<const uint8_t>> pieces, int file = -1, uint64_t offset = 0,
               uint64_t file_bytes = 0);

  UniqueFd fd_;
  std::string name_;
  TransportOptions options_;
};

}  // namespace flashpipe::host
