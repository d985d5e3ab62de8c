// Fastboot over TCP: the FB01 handshake, then every message in both
// directions is a frame of an 8-byte big-endian length and the payload.
// Commands are whole frames; the data phase of a download is a byte count
// spread over frames of any size (the client sends 1024, then large
// multiples, then the rest), so TcpConnection counts bytes across frames.
//
// TcpServer accepts connections on one address. The first client that
// completes the handshake while the device is free gets a Session; any other
// client is answered (handshake, then FAIL "busy: ..." to each command) and
// never just closed: the 29.0.6 client spins on a close mid-command.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>

#include "base/unique_fd.h"
#include "fastboot/device.h"
#include "fastboot/connection.h"

namespace flashpipe::fastboot {

class TcpConnection : public StreamConnection {
 public:
  // idle_timeout: the longest wait for a command or for data (0 = forever).
  TcpConnection(UniqueFd fd, std::string peer, std::chrono::milliseconds idle_timeout);
  // Reads "FBnn" (nn >= 1) within 2 s and answers "FB01".
  Status Handshake();

  Result<std::string> ReadCommand(size_t max_size) override;
  Result<size_t> ReadData(std::span<uint8_t> out) override;
  Status Send(std::string_view message) override;
  std::string peer() const override { return "tcp " + peer_; }
  bool ClientGone() override;
  uint64_t max_data() const override { return UINT32_MAX; }
  Status BeginData(uint64_t total) override;
  Status SendData(std::span<const uint8_t> bytes) override;

 private:
  Result<uint64_t> ReadFrameHeader(bool eof_ok);
  Status Drain(uint64_t bytes);
  UniqueFd fd_;
  std::string peer_;
  std::chrono::milliseconds idle_timeout_;
  uint64_t frame_left_ = 0;  // data-phase bytes still due in the current frame
  uint64_t data_frame_ = 0;  // an outgoing data phase whose frame header is not sent yet
};

class TcpServer {
 public:
  static Result<std::unique_ptr<TcpServer>> Listen(const std::string& host_port, FastbootDevice* device,
                                                   std::chrono::milliseconds idle_timeout);
  ~TcpServer();
  uint16_t port() const;
  // "127.0.0.1:5554": the address it is bound to.
  std::string address() const;
  void Start();

 private:
  TcpServer() = default;
  void AcceptLoop();
  void Serve(UniqueFd fd, std::string peer);
  UniqueFd listen_fd_;
  FastbootDevice* device_ = nullptr;
  std::chrono::milliseconds idle_timeout_{0};
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace flashpipe::fastboot
