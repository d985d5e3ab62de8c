// TcpTransport: fastboot over TCP from the host (wire/tcp_frame.h): connect,
// the FB01 handshake (the device must answer within 2 s), then a frame per
// command, per response and per SendData call. A device-to-host data
// phase may come in frames of any size (flashpipe serve: one frame;
// fastbootd: one per write): ReceiveData counts bytes across them, and a
// frame that runs past the bytes asked for is left for the next call; a
// response read while a data frame is unfinished is kProtocol (the device
// sent more data than it announced).
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
  Status ReceiveData(std::span<uint8_t> buf) override;
  std::string name() const override { return name_; }

 private:
  TcpTransport(UniqueFd fd, std::string name, const TransportOptions& options);
  // One frame: the pieces, then `file_bytes` bytes of `file` at `offset`.
  Status Frame(std::span<const std::span<const uint8_t>> pieces, int file = -1, uint64_t offset = 0,
               uint64_t file_bytes = 0);

  UniqueFd fd_;
  std::string name_;
  TransportOptions options_;
  uint64_t frame_left_ = 0;  // bytes of the current data frame not read yet
};

}  // namespace flashpipe::host
