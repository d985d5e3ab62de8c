#include "fastboot/tcp.h"

#include <netinet/tcp.h>
#include <sys/socket.h>

#include <array>
#include <chrono>
#include <cstring>

#include "base/fd_io.h"
#include "base/log.h"
#include "fastboot/session.h"
#include "wire/net.h"
#include "wire/protocol.h"
#include "wire/tcp_frame.h"

namespace flashpipe::fastboot {
namespace {

using wire::RecvExact;
using wire::RecvSome;
using wire::SendAll;

// A frame too long to be a command but short enough to skip and go on.
constexpr uint64_t kMaxSkippableFrame = 64 << 10;
constexpr auto kHandshakeTimeout = std::chrono::milliseconds(2000);
constexpr auto kSendTimeout = std::chrono::seconds(60);
// How long a newcomer waits for the session holder to end before "busy".
constexpr auto kBusyGrace = std::chrono::seconds(2);

}  // namespace

TcpConnection::TcpConnection(UniqueFd fd, std::string peer, std::chrono::milliseconds idle_timeout)
    : fd_(std::move(fd)), peer_(std::move(peer)), idle_timeout_(idle_timeout) {}

Status TcpConnection::Handshake() {
  std::array<uint8_t, wire::tcp::kHandshakeSize> hello;
  FP_RETURN_IF_ERROR(RecvExact(fd_.get(), hello, kHandshakeTimeout, true));
  FP_RETURN_IF_ERROR(wire::tcp::ParseHandshake(hello).status());
  return SendAll(fd_.get(), wire::tcp::kHandshake);
}

Result<uint64_t> TcpConnection::ReadFrameHeader(bool eof_ok) {
  std::array<uint8_t, wire::tcp::kFrameHeaderSize> header;
  FP_RETURN_IF_ERROR(RecvExact(fd_.get(), header, idle_timeout_, eof_ok, deadline()));
  return wire::tcp::ParseFrameHeader(header);
}

Status TcpConnection::Drain(uint64_t bytes) {
  uint8_t buf[4096];
  while (bytes > 0) {
    size_t n = static_cast<size_t>(std::min<uint64_t>(bytes, sizeof buf));
    FP_RETURN_IF_ERROR(RecvExact(fd_.get(), std::span(buf, n), idle_timeout_, false, deadline()));
    bytes -= n;
  }
  return Status::Ok();
}

Result<std::string> TcpConnection::ReadCommand(size_t max_size) {
  if (frame_left_ > 0) {
    uint64_t extra = std::exchange(frame_left_, 0);
    if (extra > kMaxSkippableFrame) {
      return Corrupt(fmt::format("data frame runs {} bytes past the download", extra));
    }
    FP_RETURN_IF_ERROR(Drain(extra));
    return InvalidArgument(fmt::format("data frame ran {} bytes past the download", extra));
  }
  FP_ASSIGN_OR_RETURN(uint64_t len, ReadFrameHeader(true));
  if (len == 0) return InvalidArgument("empty command frame");
  if (len > max_size) {
    if (len > kMaxSkippableFrame) return Corrupt(fmt::format("frame of {} bytes is not a command", len));
    FP_RETURN_IF_ERROR(Drain(len));
    return InvalidArgument(fmt::format("command of {} bytes, max {}", len, max_size));
  }
  std::string cmd(len, '\0');
  FP_RETURN_IF_ERROR(RecvExact(fd_.get(), std::span(reinterpret_cast<uint8_t*>(cmd.data()), len),
                               idle_timeout_, false, deadline()));
  return cmd;
}

Result<size_t> TcpConnection::ReadData(std::span<uint8_t> out) {
  while (frame_left_ == 0) {
    FP_ASSIGN_OR_RETURN(frame_left_, ReadFrameHeader(false));
  }
  size_t want = static_cast<size_t>(std::min<uint64_t>(out.size(), frame_left_));
  auto n = RecvSome(fd_.get(), out.first(want), idle_timeout_, deadline());
  if (!n.ok()) return n.status().WithContext("data phase");
  frame_left_ -= *n;
  return *n;
}

bool TcpConnection::ClientGone() { return wire::PeerClosed(fd_.get()); }

Status TcpConnection::Send(std::string_view message) {
  constexpr size_t kHeader = wire::tcp::kFrameHeaderSize;
  uint8_t frame[kHeader + wire::kMaxResponse];
  size_t n = std::min(message.size(), wire::kMaxResponse);
  std::memcpy(frame, wire::tcp::FrameHeader(n).data(), kHeader);
  if (n > 0) std::memcpy(frame + kHeader, message.data(), n);
  return SendAll(fd_.get(), std::span<const uint8_t>(frame, kHeader + n));
}

// The frame header waits for the first bytes: the DATA response goes first.
Status TcpConnection::BeginData(uint64_t total) {
  data_frame_ = total;
  return Status::Ok();
}

Status TcpConnection::SendData(std::span<const uint8_t> bytes) {
  if (data_frame_ > 0) FP_RETURN_IF_ERROR(SendAll(fd_.get(), wire::tcp::FrameHeader(std::exchange(data_frame_, 0))));
  return SendAll(fd_.get(), bytes);
}

Result<std::unique_ptr<TcpServer>> TcpServer::Listen(const std::string& host_port, FastbootDevice* device,
                                                     std::chrono::milliseconds idle_timeout) {
  std::unique_ptr<TcpServer> s(new TcpServer());
  FP_ASSIGN_OR_RETURN(s->listen_fd_, wire::BindSocket(host_port, SOCK_STREAM));
  s->device_ = device;
  s->idle_timeout_ = idle_timeout;
  return s;
}

TcpServer::~TcpServer() {
  stop_ = true;
  ::shutdown(listen_fd_.get(), SHUT_RDWR);
  if (thread_.joinable()) thread_.join();
}

uint16_t TcpServer::port() const { return wire::LocalPort(listen_fd_.get()); }

std::string TcpServer::address() const { return wire::LocalAddress(listen_fd_.get()); }

void TcpServer::Start() { thread_ = std::thread([this] { AcceptLoop(); }); }

void TcpServer::AcceptLoop() {
  while (!stop_) {
    sockaddr_storage addr{};
    socklen_t len = sizeof addr;
    int fd = RetryOnEintr(
        [&] { return ::accept4(listen_fd_.get(), reinterpret_cast<sockaddr*>(&addr), &len, SOCK_CLOEXEC); });
    if (fd < 0) {
      if (errno == ECONNABORTED) continue;
      if (!stop_) log::Warn("tcp accept: {}", std::strerror(errno));
      return;
    }
    int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    // A client that stops reading its responses cannot block the session
    // in send() for longer than this.
    timeval send_limit{.tv_sec = kSendTimeout.count(), .tv_usec = 0};
    ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &send_limit, sizeof send_limit);
    std::thread([this, fd, peer = wire::FormatAddress(addr)] { Serve(UniqueFd(fd), peer); }).detach();
  }
}

void TcpServer::Serve(UniqueFd fd, std::string peer) {
  TcpConnection transport(std::move(fd), peer, idle_timeout_);
  if (Status st = transport.Handshake(); !st.ok()) {
    log::Info("tcp {}: {}", peer, st.ToString());
    return;
  }
  std::string owner = transport.peer();
  bool acquired = device_->TryAcquire(owner);
  // A UDP client between commands gives way when asked; a TCP client that
  // has just closed (scripts run `fastboot` back to back) ends its session
  // as soon as its thread reads the EOF, which on a loaded machine can come
  // after this connect. Either way the holder is given kBusyGrace to leave
  // before the newcomer is refused.
  if (!acquired) device_->AskToYield();
  const auto give_up = std::chrono::steady_clock::now() + kBusyGrace;
  while (!acquired && std::chrono::steady_clock::now() < give_up) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    acquired = device_->TryAcquire(owner);
  }
  if (!acquired) {
    std::string busy = fmt::format("busy: another session is active ({})", device_->owner());
    log::Info("{} refused: {}", owner, busy);
    // Answer every command until the client leaves (or the idle timeout):
    // closing under a waiting 29.0.6 client makes it spin.
    for (;;) {
      auto cmd = transport.ReadCommand(wire::kMaxCommand);
      if (!cmd.ok() && cmd.status().code() != Code::kInvalidArgument) return;
      if (!transport.Send(wire::Fail(busy)).ok()) return;
    }
    return;
  }
  log::Info("{}: session start", owner);
  Status st = Session(device_, &transport).Run();
  log::Info("{}: session end{}{}", owner, st.ok() ? "" : ": ", st.ok() ? "" : st.ToString());
  device_->Release();
}

}  // namespace flashpipe::fastboot
