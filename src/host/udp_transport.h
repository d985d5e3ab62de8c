// UdpTransport: fastboot over UDP from the host (wire/udp_packet.h). Query
// the device's next sequence number, init (version 1, packets of up to
// 8192 bytes, the device may ask for fewer), then every message is a run of
// packets, each sent and answered in turn (stop and wait, as the protocol
// has no window): a command or data phase bytes as packets carrying bytes
// (the continuation flag on all but the last of a message), a response
// fetched with empty packets, the device answering each with (a piece of)
// its next message. A packet without its answer is sent again every
// 500 ms; silence for the idle limit is kTimedOut, an error packet from the
// device fails the call with its message. A device-to-host data phase is
// read the same way: each empty packet fetches the next piece of it (the
// continuation flag is not relied on: bytes are counted), an empty answer
// means "nothing yet" and is polled again; bytes of a packet past those
// asked for are kept for the next ReceiveData, and a response read while
// some are left is kProtocol.
#pragma once

#include <chrono>
#include <memory>
#include <vector>

#include "base/unique_fd.h"
#include "host/transport.h"
#include "wire/net.h"
#include "wire/udp_packet.h"

namespace flashpipe::host {

class UdpTransport : public Transport {
 public:
  static Result<std::unique_ptr<UdpTransport>> Connect(const wire::HostPort& to, const TransportOptions& options);

  Status Send(std::string_view command) override;
  Result<std::string> Receive() override;
  Status SendData(std::span<const std::span<const uint8_t>> pieces) override;
  Status ReceiveData(std::span<uint8_t> buf) override;
  std::string name() const override { return name_; }
  size_t max_payload() const { return max_payload_; }

 private:
  UdpTransport(UniqueFd fd, std::string name, const TransportOptions& options);
  Status Handshake();
  // Sends one packet until its answer comes (payload in `answer`); the
  // answer's header in `got`.
  Status Exchange(uint8_t id, uint8_t flags, std::span<const uint8_t> payload, std::chrono::milliseconds give_up,
                  wire::udp::Header* got, std::vector<uint8_t>* answer);
  // Sends the packet out_[0, kHeaderSize + n) (its payload already there)
  // with the header (id, flags, seq_), and waits for its answer.
  Status ExchangeOut(size_t n, uint8_t id, uint8_t flags, std::chrono::milliseconds give_up,
                     wire::udp::Header* got, std::vector<uint8_t>* answer);
  // A message's bytes as packets.
  Status SendMessage(std::span<const std::span<const uint8_t>> pieces);

  UniqueFd fd_;
  std::string name_;
  TransportOptions options_;
  uint16_t seq_ = 0;
  size_t max_payload_ = wire::udp::kMinPacketSize - wire::udp::kHeaderSize;
  std::vector<uint8_t> packet_;  // the last packet received
  std::vector<uint8_t> out_;     // the packet being sent, built in place
  std::vector<uint8_t> data_rest_;  // data phase bytes received, not yet taken
};

}  // namespace flashpipe::host
