#include "host/udp_transport.h"

#include <sys/socket.h>

#include <algorithm>
#include <cstring>
#include <thread>

namespace flashpipe::host {
namespace {

namespace udp = wire::udp;

constexpr auto kRetransmit = std::chrono::milliseconds(500);
constexpr auto kFirstQuery = std::chrono::milliseconds(2000);  // 4 tries, as the AOSP client
constexpr uint16_t kHostMaxPacket = 8192;

}  // namespace

UdpTransport::UdpTransport(UniqueFd fd, std::string name, const TransportOptions& options)
    : fd_(std::move(fd)), name_(std::move(name)), options_(options) {}

Result<std::unique_ptr<UdpTransport>> UdpTransport::Connect(const wire::HostPort& to, const TransportOptions& options) {
  FP_ASSIGN_OR_RETURN(UniqueFd fd, wire::ConnectSocket(to, SOCK_DGRAM, options.connect));
  std::unique_ptr<UdpTransport> t(new UdpTransport(std::move(fd), fmt::format("udp:{}:{}", to.host, to.port), options));
  FP_RETURN_IF_ERROR(t->Handshake().WithContext(t->name_));
  return t;
}

Status UdpTransport::Handshake() {
  udp::Header got;
  std::vector<uint8_t> answer;
  seq_ = 0;
  FP_RETURN_IF_ERROR(Exchange(udp::kIdQuery, 0, {}, kFirstQuery, &got, &answer));
  FP_ASSIGN_OR_RETURN(seq_, udp::ParseQuery(answer));
  auto init = udp::InitPayload({.version = udp::kProtocolVersion, .max_packet = kHostMaxPacket});
  FP_RETURN_IF_ERROR(Exchange(udp::kIdInit, 0, init, options_.idle, &got, &answer));
  FP_ASSIGN_OR_RETURN(udp::Init reply, udp::ParseInit(answer));
  if (reply.version < udp::kProtocolVersion)
    return ProtocolError(fmt::format("device speaks UDP version {}", reply.version));
  if (reply.max_packet < udp::kMinPacketSize) {
    return ProtocolError(fmt::format("device packet size {} < {}", reply.max_packet, udp::kMinPacketSize));
  }
  max_payload_ = std::min(reply.max_packet, kHostMaxPacket) - udp::kHeaderSize;
  return Status::Ok();
}

Status UdpTransport::Exchange(uint8_t id, uint8_t flags, std::span<const uint8_t> payload,
                              std::chrono::milliseconds give_up, udp::Header* got, std::vector<uint8_t>* answer) {
  out_.resize(std::max(out_.size(), udp::kHeaderSize + payload.size()));
  if (!payload.empty()) std::memcpy(out_.data() + udp::kHeaderSize, payload.data(), payload.size());
  return ExchangeOut(payload.size(), id, flags, give_up, got, answer);
}

Status UdpTransport::ExchangeOut(size_t n, uint8_t id, uint8_t flags, std::chrono::milliseconds give_up,
                                 udp::Header* got, std::vector<uint8_t>* answer) {
  out_[0] = id;
  out_[1] = flags;
  out_[2] = static_cast<uint8_t>(seq_ >> 8);
  out_[3] = static_cast<uint8_t>(seq_);
  std::span<const uint8_t> pkt(out_.data(), udp::kHeaderSize + n);
  auto end = std::chrono::steady_clock::now() + give_up;
  packet_.resize(65536);
  for (;;) {
    FP_RETURN_IF_ERROR(wire::SendAll(fd_.get(), pkt));
    auto resend = std::min(std::chrono::steady_clock::now() + kRetransmit, end);
    for (;;) {
      auto n = wire::RecvSome(fd_.get(), packet_, {}, resend);
      if (n.status().code() == Code::kTimedOut) break;
      if (!n.ok() && n.status().sys_errno() == ECONNREFUSED) return Cancelled("the device's port is closed");
      FP_RETURN_IF_ERROR(n.status());
      auto h = udp::ParseHeader(std::span<const uint8_t>(packet_).first(*n));
      if (!h || h->seq != seq_ || (h->id != id && h->id != udp::kIdError)) continue;  // an old answer
      auto body = udp::Payload(std::span<const uint8_t>(packet_).first(*n));
      ++seq_;
      if (h->id == udp::kIdError) {
        return Unsupported(fmt::format("device error: {}", std::string(body.begin(), body.end())));
      }
      *got = *h;
      answer->assign(body.begin(), body.end());
      return Status::Ok();
    }
    if (std::chrono::steady_clock::now() >= end) {
      return TimedOut(fmt::format("no answer for {} s", std::chrono::duration_cast<std::chrono::seconds>(give_up).count()));
    }
  }
}

// Each packet's payload is copied once, from the pieces into the packet.
Status UdpTransport::SendMessage(std::span<const std::span<const uint8_t>> pieces) {
  out_.resize(std::max(out_.size(), udp::kHeaderSize + max_payload_));
  udp::Header got;
  std::vector<uint8_t> answer;
  size_t left = 0, filled = 0;
  for (auto p : pieces) left += p.size();
  for (auto p : pieces) {
    while (!p.empty()) {
      size_t k = std::min(p.size(), max_payload_ - filled);
      std::memcpy(out_.data() + udp::kHeaderSize + filled, p.data(), k);
      p = p.subspan(k);
      left -= k;
      filled += k;
      if (filled < max_payload_ && left > 0) continue;
      uint8_t flags = left > 0 ? udp::kFlagContinuation : 0;
      FP_RETURN_IF_ERROR(ExchangeOut(filled, udp::kIdFastboot, flags, options_.idle, &got, &answer));
      if (!answer.empty()) return ProtocolError("the device answered data with a response out of turn");
      filled = 0;
    }
  }
  return Status::Ok();
}

Status UdpTransport::Send(std::string_view command) {
  std::array<std::span<const uint8_t>, 1> one{
      std::span(reinterpret_cast<const uint8_t*>(command.data()), command.size())};
  return SendMessage(one);
}

Status UdpTransport::SendData(std::span<const std::span<const uint8_t>> pieces) { return SendMessage(pieces); }

Result<std::string> UdpTransport::Receive() {
  if (!data_rest_.empty()) {
    return ProtocolError(fmt::format("the device sent {} bytes more data than it announced", data_rest_.size()));
  }
  std::string message;
  udp::Header got;
  std::vector<uint8_t> answer;
  do {
    FP_RETURN_IF_ERROR(Exchange(udp::kIdFastboot, 0, {}, options_.idle, &got, &answer));
    message.append(answer.begin(), answer.end());
    if (message.size() > 4096) return ProtocolError("a response of more than 4096 bytes");
  } while (got.continuation());
  return message;
}

Status UdpTransport::ReceiveData(std::span<uint8_t> buf) {
  size_t k = std::min(buf.size(), data_rest_.size());
  if (k > 0) {
    std::memcpy(buf.data(), data_rest_.data(), k);
    data_rest_.erase(data_rest_.begin(), data_rest_.begin() + static_cast<ptrdiff_t>(k));
    buf = buf.subspan(k);
  }
  udp::Header got;
  std::vector<uint8_t> answer;
  auto last_byte = std::chrono::steady_clock::now();
  int empty = 0;
  while (!buf.empty()) {
    FP_RETURN_IF_ERROR(Exchange(udp::kIdFastboot, 0, {}, options_.idle, &got, &answer).WithContext("data phase"));
    auto now = std::chrono::steady_clock::now();
    if (answer.empty()) {
      // Nothing yet (the device still reads): poll again, gently.
      if (now - last_byte >= options_.idle) {
        return TimedOut(fmt::format("the device sent no data for {} s", options_.idle.count() / 1000));
      }
      if (++empty > 16) std::this_thread::sleep_for(std::chrono::milliseconds(1));
      continue;
    }
    empty = 0;
    last_byte = now;
    size_t n = std::min(buf.size(), answer.size());
    std::memcpy(buf.data(), answer.data(), n);
    buf = buf.subspan(n);
    data_rest_.assign(answer.begin() + static_cast<ptrdiff_t>(n), answer.end());
  }
  return Status::Ok();
}

}  // namespace flashpipe::host
