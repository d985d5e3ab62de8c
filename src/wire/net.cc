#include "wire/net.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cstring>
#include <memory>
#include <vector>

#include "base/fd_io.h"

namespace flashpipe::wire {

Result<sockaddr_storage> ParseHostPort(std::string_view text, socklen_t* len) {
  size_t colon = text.rfind(':');
  if (colon == std::string_view::npos) return InvalidArgument(fmt::format("'{}': expected ADDR:PORT", text));
  std::string host(text.substr(0, colon));
  std::string port_text(text.substr(colon + 1));
  char* end = nullptr;
  unsigned long port = std::strtoul(port_text.c_str(), &end, 10);
  if (port_text.empty() || *end != '\0' || port > 65535) {
    return InvalidArgument(fmt::format("'{}': bad port '{}'", text, port_text));
  }
  if (host.empty()) host = "127.0.0.1";
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  sockaddr_storage ss{};
  auto* v4 = reinterpret_cast<sockaddr_in*>(&ss);
  auto* v6 = reinterpret_cast<sockaddr_in6*>(&ss);
  if (inet_pton(AF_INET, host.c_str(), &v4->sin_addr) == 1) {
    v4->sin_family = AF_INET;
    v4->sin_port = htons(static_cast<uint16_t>(port));
    *len = sizeof(sockaddr_in);
  } else if (inet_pton(AF_INET6, host.c_str(), &v6->sin6_addr) == 1) {
    v6->sin6_family = AF_INET6;
    v6->sin6_port = htons(static_cast<uint16_t>(port));
    *len = sizeof(sockaddr_in6);
  } else {
    return InvalidArgument(fmt::format("'{}': '{}' is not a numeric address", text, host));
  }
  return ss;
}

std::string FormatAddress(const sockaddr_storage& addr) {
  char buf[INET6_ADDRSTRLEN] = "?";
  if (addr.ss_family == AF_INET) {
    const auto* v4 = reinterpret_cast<const sockaddr_in*>(&addr);
    inet_ntop(AF_INET, &v4->sin_addr, buf, sizeof buf);
    return fmt::format("{}:{}", buf, ntohs(v4->sin_port));
  }
  const auto* v6 = reinterpret_cast<const sockaddr_in6*>(&addr);
  inet_ntop(AF_INET6, &v6->sin6_addr, buf, sizeof buf);
  return fmt::format("[{}]:{}", buf, ntohs(v6->sin6_port));
}

Result<UniqueFd> BindSocket(std::string_view host_port, int type) {
  socklen_t len = 0;
  FP_ASSIGN_OR_RETURN(sockaddr_storage addr, ParseHostPort(host_port, &len));
  UniqueFd fd(::socket(addr.ss_family, type | SOCK_CLOEXEC, 0));
  if (!fd.valid()) return ErrnoError("socket");
  int one = 1;
  ::setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (::bind(fd.get(), reinterpret_cast<sockaddr*>(&addr), len) != 0) {
    return ErrnoError(fmt::format("bind {}", host_port));
  }
  if (type == SOCK_STREAM && ::listen(fd.get(), 8) != 0) return ErrnoError(fmt::format("listen {}", host_port));
  return fd;
}

Result<HostPort> SplitHostPort(std::string_view text, uint16_t default_port) {
  HostPort out{std::string(text), default_port};
  std::string_view port_text;
  if (text.starts_with('[')) {
    size_t close = text.find(']');
    if (close == std::string_view::npos) return InvalidArgument(fmt::format("'{}': no ']' after the address", text));
    out.host = std::string(text.substr(1, close - 1));
    std::string_view rest = text.substr(close + 1);
    if (!rest.empty() && rest[0] != ':') return InvalidArgument(fmt::format("'{}': expected ':PORT' after ']'", text));
    if (!rest.empty()) port_text = rest.substr(1);
  } else if (size_t colon = text.find(':'); colon != std::string_view::npos && text.rfind(':') == colon) {
    out.host = std::string(text.substr(0, colon));  // one ':' is a port; more is a bare IPv6 address
    port_text = text.substr(colon + 1);
  }
  if (out.host.empty()) return InvalidArgument(fmt::format("'{}': no host", text));
  if (!port_text.empty() || text.ends_with(':')) {
    unsigned port = 0;
    auto [end, ec] = std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
    if (ec != std::errc() || end != port_text.data() + port_text.size() || port == 0 || port > 65535) {
      return InvalidArgument(fmt::format("'{}': bad port '{}'", text, port_text));
    }
    out.port = static_cast<uint16_t>(port);
  }
  return out;
}

namespace {

// connect(2) without blocking past `timeout`.
Status ConnectWithin(int fd, const addrinfo& ai, std::chrono::milliseconds timeout) {
  int flags = ::fcntl(fd, F_GETFL);
  if (flags < 0 || ::fcntl(fd, F_SETFL, flags | O_NONBLOCK) != 0) return ErrnoError("fcntl");
  if (::connect(fd, ai.ai_addr, ai.ai_addrlen) != 0) {
    if (errno != EINPROGRESS) return ErrnoError("connect");
    pollfd p{fd, POLLOUT, 0};
    int r = RetryOnEintr([&] { return ::poll(&p, 1, static_cast<int>(timeout.count())); });
    if (r < 0) return ErrnoError("poll");
    if (r == 0) return TimedOut(fmt::format("connect: no answer in {} ms", timeout.count()));
    int err = 0;
    socklen_t len = sizeof err;
    ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
    if (err != 0) return IoError("connect", err);
  }
  if (::fcntl(fd, F_SETFL, flags) != 0) return ErrnoError("fcntl");
  return Status::Ok();
}

}  // namespace

Result<UniqueFd> ConnectSocket(const HostPort& to, int type, std::chrono::milliseconds timeout) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = type;
  addrinfo* list = nullptr;
  std::string port = std::to_string(to.port);
  if (int e = ::getaddrinfo(to.host.c_str(), port.c_str(), &hints, &list); e != 0) {
    return NotFound(fmt::format("{}: {}", to.host, ::gai_strerror(e)));
  }
  std::unique_ptr<addrinfo, decltype(&::freeaddrinfo)> hold(list, ::freeaddrinfo);
  Status last = NotFound(fmt::format("{}: no address", to.host));
  for (addrinfo* ai = list; ai != nullptr; ai = ai->ai_next) {
    UniqueFd fd(::socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol));
    if (!fd.valid()) {
      last = ErrnoError("socket");
      continue;
    }
    last = ConnectWithin(fd.get(), *ai, timeout);
    if (!last.ok()) continue;
    if (type == SOCK_STREAM) {
      int one = 1;
      ::setsockopt(fd.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    }
    return fd;
  }
  return last.WithContext(fmt::format("{}:{}", to.host, to.port));
}

uint16_t LocalPort(int fd) {
  sockaddr_storage ss{};
  socklen_t len = sizeof ss;
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &len) != 0) return 0;
  if (ss.ss_family == AF_INET) return ntohs(reinterpret_cast<sockaddr_in*>(&ss)->sin_port);
  return ntohs(reinterpret_cast<sockaddr_in6*>(&ss)->sin6_port);
}

std::string LocalAddress(int fd) {
  sockaddr_storage ss{};
  socklen_t len = sizeof ss;
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &len) != 0) return "?";
  return FormatAddress(ss);
}

Status WaitReadable(int fd, std::chrono::milliseconds idle, Deadline deadline) {
  using Clock = std::chrono::steady_clock;
  auto start = Clock::now();
  auto idle_end = idle.count() > 0 ? start + idle : kNoDeadline;
  auto end = std::min(idle_end, deadline);
  for (;;) {
    auto now = Clock::now();
    if (now >= deadline) return TimedOut("deadline passed");
    if (now >= idle_end) return Cancelled(fmt::format("no data for {} ms", idle.count()));
    int ms = -1;
    if (end != kNoDeadline) {
      auto left = std::chrono::ceil<std::chrono::milliseconds>(end - now).count();
      ms = static_cast<int>(std::min<int64_t>(left, 1 << 30));
    }
    pollfd p{fd, POLLIN, 0};
    int r = RetryOnEintr([&] { return ::poll(&p, 1, ms); });
    if (r < 0) return ErrnoError("poll");
    if (r > 0) return Status::Ok();
  }
}

Result<size_t> RecvSome(int fd, std::span<uint8_t> out, std::chrono::milliseconds idle, Deadline deadline) {
  FP_RETURN_IF_ERROR(WaitReadable(fd, idle, deadline));
  ssize_t n = RetryOnEintr([&] { return ::recv(fd, out.data(), out.size(), 0); });
  if (n < 0) return ErrnoError("recv");
  if (n == 0) return Cancelled("connection closed");
  return static_cast<size_t>(n);
}

Status RecvExact(int fd, std::span<uint8_t> out, std::chrono::milliseconds idle, bool eof_ok, Deadline deadline) {
  size_t done = 0;
  while (done < out.size()) {
    auto n = RecvSome(fd, out.subspan(done), idle, deadline);
    if (!n.ok() && n.status().code() == Code::kCancelled && (done > 0 || !eof_ok)) {
      return n.status().WithContext(fmt::format("after {} of {} bytes", done, out.size()));
    }
    if (!n.ok()) return n.status();
    done += *n;
  }
  return Status::Ok();
}

Status SendAll(int fd, std::span<const uint8_t> data) {
  size_t done = 0;
  while (done < data.size()) {
    ssize_t n = RetryOnEintr([&] { return ::send(fd, data.data() + done, data.size() - done, MSG_NOSIGNAL); });
    if (n < 0) return ErrnoError("send");
    done += static_cast<size_t>(n);
  }
  return Status::Ok();
}

Status SendGather(int fd, std::span<const std::span<const uint8_t>> pieces, bool more) {
  constexpr size_t kMaxIov = 64;
  iovec iov[kMaxIov];
  size_t first = 0, skip = 0;  // the first piece not fully sent, bytes of it sent
  while (first < pieces.size()) {
    size_t n = 0;
    for (size_t i = first; i < pieces.size() && n < kMaxIov; ++i) {
      size_t off = i == first ? skip : 0;
      if (pieces[i].size() == off) continue;
      iov[n++] = {const_cast<uint8_t*>(pieces[i].data()) + off, pieces[i].size() - off};
    }
    if (n == 0) break;
    msghdr msg{};
    msg.msg_iov = iov;
    msg.msg_iovlen = n;
    ssize_t sent = RetryOnEintr([&] { return ::sendmsg(fd, &msg, MSG_NOSIGNAL | (more ? MSG_MORE : 0)); });
    if (sent < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return TimedOut("send: the peer took no data");
    if (sent < 0) return ErrnoError("send");
    for (size_t left = static_cast<size_t>(sent); first < pieces.size();) {
      size_t rest = pieces[first].size() - skip;
      if (left < rest) {
        skip += left;
        break;
      }
      left -= rest;
      ++first;
      skip = 0;
    }
  }
  return Status::Ok();
}

namespace {

// sendfile(2) has no MSG_NOSIGNAL: SIGPIPE is blocked on this thread while
// it runs, and one it raised (a peer gone) is taken back, so that a device
// that goes away is an error, not the end of the process.
class SigpipeBlock {
 public:
  SigpipeBlock() {
    sigemptyset(&pipe_);
    sigaddset(&pipe_, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe_, &old_);
  }
  ~SigpipeBlock() {
    if (raised_ && !sigismember(&old_, SIGPIPE)) {
      timespec now{};
      RetryOnEintr([&] { return ::sigtimedwait(&pipe_, nullptr, &now); });
    }
    pthread_sigmask(SIG_SETMASK, &old_, nullptr);
  }
  SigpipeBlock(const SigpipeBlock&) = delete;
  SigpipeBlock& operator=(const SigpipeBlock&) = delete;
  void Raised() { raised_ = true; }

 private:
  sigset_t pipe_, old_;
  bool raised_ = false;
};

// A file that sendfile(2) cannot read (a file system without splice):
// read and sent through a buffer.
Status SendFileByCopy(int fd, int file, uint64_t offset, uint64_t n) {
  std::vector<uint8_t> buf(static_cast<size_t>(std::min<uint64_t>(n, 1 << 20)));
  while (n > 0) {
    auto piece = std::span(buf).first(static_cast<size_t>(std::min<uint64_t>(n, buf.size())));
    FP_ASSIGN_OR_RETURN(size_t got, PreadUpTo(file, piece, offset, "the file"));
    if (got == 0) return Corrupt(fmt::format("the file ends at byte {}, {} bytes short", offset, n));
    FP_RETURN_IF_ERROR(SendAll(fd, piece.first(got)));
    offset += got;
    n -= got;
  }
  return Status::Ok();
}

}  // namespace

Status SendFileRange(int fd, int file, uint64_t offset, uint64_t n) {
  constexpr uint64_t kMaxPiece = 1 << 30;  // sendfile(2) moves at most ~2 GiB a call
  SigpipeBlock block;
  while (n > 0) {
    auto at = static_cast<off_t>(offset);
    size_t want = static_cast<size_t>(std::min(n, kMaxPiece));
    ssize_t sent = RetryOnEintr([&] { return ::sendfile(fd, file, &at, want); });
    if (sent < 0 && (errno == EINVAL || errno == ENOSYS)) return SendFileByCopy(fd, file, offset, n);
    if (sent < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return TimedOut("send: the peer took no data");
    if (sent < 0 && errno == EPIPE) block.Raised();
    if (sent < 0) return ErrnoError(fmt::format("sendfile at file byte {}", offset));
    if (sent == 0) return Corrupt(fmt::format("the file ends at byte {}, {} bytes short", offset, n));
    offset += static_cast<uint64_t>(sent);
    n -= static_cast<uint64_t>(sent);
  }
  return Status::Ok();
}

bool PeerClosed(int fd) {
  pollfd p{fd, POLLRDHUP, 0};
  int r = RetryOnEintr([&] { return ::poll(&p, 1, 0); });
  return r > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR)) != 0;
}

}  // namespace flashpipe::wire
