#include "host/tcp_transport.h"

#include <sys/socket.h>

#include <array>
#include <vector>

#include "wire/protocol.h"
#include "wire/tcp_frame.h"

namespace flashpipe::host {
namespace {

constexpr auto kHandshakeTimeout = std::chrono::milliseconds(2000);
// A response longer than this is not a fastboot response.
constexpr uint64_t kMaxResponseFrame = 4096;

}  // namespace

TcpTransport::TcpTransport(UniqueFd fd, std::string name, const TransportOptions& options)
    : fd_(std::move(fd)), name_(std::move(name)), options_(options) {}

Result<std::unique_ptr<TcpTransport>> TcpTransport::Connect(const wire::HostPort& to, const TransportOptions& options) {
  FP_ASSIGN_OR_RETURN(UniqueFd fd, wire::ConnectSocket(to, SOCK_STREAM, options.connect));
  std::string name = fmt::format("tcp:{}:{}", to.host, to.port);
  auto idle = std::chrono::duration_cast<std::chrono::microseconds>(options.idle);
  timeval limit{.tv_sec = static_cast<time_t>(idle.count() / 1000000), .tv_usec = idle.count() % 1000000};
  ::setsockopt(fd.get(), SOL_SOCKET, SO_SNDTIMEO, &limit, sizeof limit);
  FP_RETURN_IF_ERROR(wire::SendAll(fd.get(), wire::tcp::kHandshake).WithContext(name));
  std::array<uint8_t, wire::tcp::kHandshakeSize> hello;
  Status st = wire::RecvExact(fd.get(), hello, kHandshakeTimeout, false);
  if (!st.ok()) return st.WithContext(fmt::format("{}: handshake", name));
  FP_RETURN_IF_ERROR(wire::tcp::ParseHandshake(hello).status().WithContext(name));
  return std::unique_ptr<TcpTransport>(new TcpTransport(std::move(fd), std::move(name), options));
}

Status TcpTransport::Frame(std::span<const std::span<const uint8_t>> pieces, int file, uint64_t offset,
                           uint64_t file_bytes) {
  uint64_t total = file_bytes;
  for (auto p : pieces) total += p.size();
  auto header = wire::tcp::FrameHeader(total);
  std::vector<std::span<const uint8_t>> all;
  all.reserve(pieces.size() + 1);
  all.emplace_back(header);
  all.insert(all.end(), pieces.begin(), pieces.end());
  Status st = wire::SendGather(fd_.get(), all, file_bytes > 0);
  if (st.ok() && file_bytes > 0) st = wire::SendFileRange(fd_.get(), file, offset, file_bytes);
  if (st.code() == Code::kTimedOut) {
    return TimedOut(fmt::format("the device took no data for {} s", options_.idle.count() / 1000));
  }
  return st;
}

Status TcpTransport::Send(std::string_view command) {
  std::array<std::span<const uint8_t>, 1> one{
      std::span(reinterpret_cast<const uint8_t*>(command.data()), command.size())};
  return Frame(one);
}

Status TcpTransport::SendData(std::span<const std::span<const uint8_t>> pieces) { return Frame(pieces); }

Status TcpTransport::SendDataFile(std::span<const std::span<const uint8_t>> head, int file, uint64_t offset,
                                  uint64_t n) {
  return Frame(head, file, offset, n);
}

Result<std::string> TcpTransport::Receive() {
  if (frame_left_ > 0) {
    return ProtocolError(fmt::format("the device sent {} bytes more data than it announced", frame_left_));
  }
  // The idle limit as a deadline: kTimedOut when the device is silent,
  // kCancelled when it closed the connection.
  auto deadline = std::chrono::steady_clock::now() + options_.idle;
  std::array<uint8_t, wire::tcp::kFrameHeaderSize> header;
  Status st = wire::RecvExact(fd_.get(), header, {}, false, deadline);
  if (st.code() == Code::kTimedOut) return TimedOut(fmt::format("no response for {} s", options_.idle.count() / 1000));
  FP_RETURN_IF_ERROR(st);
  uint64_t len = wire::tcp::ParseFrameHeader(header);
  if (len > kMaxResponseFrame) return ProtocolError(fmt::format("a response frame of {} bytes", len));
  std::string message(len, '\0');
  FP_RETURN_IF_ERROR(wire::RecvExact(fd_.get(), std::span(reinterpret_cast<uint8_t*>(message.data()), len), {},
                                     false, deadline));
  return message;
}

Status TcpTransport::ReceiveData(std::span<uint8_t> buf) {
  auto silent = [&] { return TimedOut(fmt::format("the device sent no data for {} s", options_.idle.count() / 1000)); };
  while (!buf.empty()) {
    // The idle limit restarts with every byte that comes.
    auto deadline = std::chrono::steady_clock::now() + options_.idle;
    if (frame_left_ == 0) {
      std::array<uint8_t, wire::tcp::kFrameHeaderSize> header;
      Status st = wire::RecvExact(fd_.get(), header, {}, false, deadline);
      if (st.code() == Code::kTimedOut) return silent();
      FP_RETURN_IF_ERROR(st.WithContext("data phase"));
      frame_left_ = wire::tcp::ParseFrameHeader(header);
      continue;  // an empty frame carries nothing
    }
    size_t want = static_cast<size_t>(std::min<uint64_t>(buf.size(), frame_left_));
    auto n = wire::RecvSome(fd_.get(), buf.first(want), {}, deadline);
    if (n.status().code() == Code::kTimedOut) return silent();
    FP_RETURN_IF_ERROR(n.status().WithContext("data phase"));
    frame_left_ -= *n;
    buf = buf.subspan(*n);
  }
  return Status::Ok();
}

}  // namespace flashpipe::host
