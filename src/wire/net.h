// Small socket helpers shared by both ends: the servers bind, the host
// connects; both receive and send through the same waits. The waits take two
// limits: `idle`, the longest silence allowed (0 = none), which ends with
// kCancelled (the peer is taken to be gone), and `deadline`, an absolute
// time (a session or download limit), which ends with kTimedOut.
#pragma once

#include <netinet/in.h>

#include <chrono>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "base/status.h"
#include "base/unique_fd.h"

namespace flashpipe::wire {

using Deadline = std::chrono::steady_clock::time_point;
inline constexpr Deadline kNoDeadline = Deadline::max();

// "127.0.0.1:5554", "[::1]:5554", ":5554" (loopback), "0.0.0.0:0".
Result<sockaddr_storage> ParseHostPort(std::string_view text, socklen_t* len);
std::string FormatAddress(const sockaddr_storage& addr);
// A bound socket (SOCK_STREAM listening, or SOCK_DGRAM).
Result<UniqueFd> BindSocket(std::string_view host_port, int type);

// "board.lab", "board.lab:5555", "10.0.0.2", "[::1]:5554", "::1" as a host
// name or address and a port (default_port when none is given).
struct HostPort {
  std::string host;
  uint16_t port = 0;
};
Result<HostPort> SplitHostPort(std::string_view text, uint16_t default_port);
// A socket connected to the first address of `to` that answers within
// `timeout` (SOCK_STREAM: TCP_NODELAY set; SOCK_DGRAM: the peer fixed, so
// recv takes only its datagrams). Names are resolved with getaddrinfo.
Result<UniqueFd> ConnectSocket(const HostPort& to, int type, std::chrono::milliseconds timeout);
uint16_t LocalPort(int fd);
// The address a socket is bound to, as FormatAddress writes it.
std::string LocalAddress(int fd);

// Waits until fd is readable.
Status WaitReadable(int fd, std::chrono::milliseconds idle, Deadline deadline = kNoDeadline);
// recv(2) of 1..out.size() bytes once fd is readable; kCancelled at end of
// stream.
Result<size_t> RecvSome(int fd, std::span<uint8_t> out, std::chrono::milliseconds idle,
                        Deadline deadline = kNoDeadline);
// Exactly out.size() bytes. An end of stream before the first byte is
// "connection closed" when eof_ok (a client leaving between messages).
Status RecvExact(int fd, std::span<uint8_t> out, std::chrono::milliseconds idle, bool eof_ok,
                 Deadline deadline = kNoDeadline);
// send(2) with MSG_NOSIGNAL until every byte is sent.
Status SendAll(int fd, std::span<const uint8_t> data);
// The pieces in order, in as few sendmsg(2) calls as the kernel takes
// them. A socket with SO_SNDTIMEO that takes nothing that long gives
// kTimedOut.
// `more`: MSG_MORE, more bytes follow at once (SendFileRange), so the
// pieces need not leave in a segment of their own.
Status SendGather(int fd, std::span<const std::span<const uint8_t>> pieces, bool more = false);
// `n` bytes of `file` from `offset` on, with sendfile(2): from the page
// cache to the socket without a copy in this process. A file that ends
// before them is kCorrupt naming the offset; a socket with SO_SNDTIMEO
// that takes nothing that long gives kTimedOut. A file sendfile cannot read
// (a file system without splice) is read and sent through a buffer.
Status SendFileRange(int fd, int file, uint64_t offset, uint64_t n);
// Whether the peer of a connected stream socket has closed or reset it
// (without waiting).
bool PeerClosed(int fd);

}  // namespace flashpipe::wire
