#include "fastboot/udp.h"

#include <arpa/inet.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cstring>

#include "base/fd_io.h"
#include "base/log.h"
#include "fastboot/session.h"
#include "wire/net.h"
#include "wire/protocol.h"

namespace flashpipe::fastboot {
namespace {

namespace udp = wire::udp;
using wire::FormatAddress;

void Wake(int fd) {
  uint64_t one = 1;
  (void)!::write(fd, &one, sizeof one);
}

// A client that sends nothing this long in the middle of a command is gone
// (the 29.0.6 client retransmits every 500 ms while it waits).
constexpr auto kDeadAfter = std::chrono::seconds(10);

// Data-phase bytes queued for the packet thread at most (a few packets'
// worth at once; the session reads the storage meanwhile).
constexpr size_t kOutboundDataLimit = 256 << 10;

}  // namespace

// --- UdpChannel -------------------------------------------------------------

UdpChannel::UdpChannel(std::string peer, size_t inbound_limit, int wake_fd)
    : peer_(std::move(peer)), inbound_limit_(inbound_limit), wake_fd_(wake_fd) {}

// Waits (lock held) until there is inbound data or the channel is closed;
// false when the session's deadline passed first.
bool UdpChannel::WaitInbound(std::unique_lock<std::mutex>& lock) {
  auto ready = [this] { return !inbound_.empty() || closed_; };
  if (deadline() == Deadline::max()) {
    cv_.wait(lock, ready);
    return true;
  }
  return cv_.wait_until(lock, deadline(), ready);
}

Result<std::string> UdpChannel::ReadCommand(size_t max_size) {
  std::unique_lock lock(mu_);
  std::string msg;
  size_t total = 0;
  for (;;) {
    waiting_for_command_ = total == 0;
    bool in_time = WaitInbound(lock);
    waiting_for_command_ = false;
    if (!in_time) return TimedOut("deadline passed");
    if (inbound_.empty()) return Cancelled("udp client gone");
    Chunk& c = inbound_.front();
    size_t n = c.bytes.size() - head_offset_;
    if (total + n <= max_size) msg.append(reinterpret_cast<const char*>(c.bytes.data()) + head_offset_, n);
    total += n;
    bool end = c.end_of_message;
    inbound_bytes_ -= c.bytes.size();
    inbound_.pop_front();
    head_offset_ = 0;
    cv_.notify_all();
    if (end) break;
  }
  if (total > max_size) return InvalidArgument(fmt::format("command of {} bytes, max {}", total, max_size));
  return msg;
}

Result<size_t> UdpChannel::ReadData(std::span<uint8_t> out) {
  std::unique_lock lock(mu_);
  if (!WaitInbound(lock)) return TimedOut("deadline passed");
  if (inbound_.empty()) return Cancelled("udp client gone in the data phase");
  Chunk& c = inbound_.front();
  size_t n = std::min(out.size(), c.bytes.size() - head_offset_);
  std::memcpy(out.data(), c.bytes.data() + head_offset_, n);
  head_offset_ += n;
  if (head_offset_ == c.bytes.size()) {
    inbound_bytes_ -= c.bytes.size();
    inbound_.pop_front();
    head_offset_ = 0;
    cv_.notify_all();
  }
  return n;
}

Status UdpChannel::Send(std::string_view message) {
  {
    std::lock_guard lock(mu_);
    if (closed_) return Cancelled("udp client gone");
    outbound_.push_back({std::string(message.substr(0, wire::kMaxResponse)), false, 0});
  }
  Wake(wake_fd_);
  return Status::Ok();
}

Status UdpChannel::BeginData(uint64_t total) {
  std::lock_guard lock(mu_);
  if (closed_) return Cancelled("udp client gone");
  data_left_ = total;
  return Status::Ok();
}

Status UdpChannel::SendData(std::span<const uint8_t> bytes) {
  while (!bytes.empty()) {
    size_t n = std::min(bytes.size(), kOutboundDataLimit);
    {
      std::unique_lock lock(mu_);
      cv_.wait(lock, [&] { return outbound_data_ + n <= kOutboundDataLimit || closed_; });
      if (closed_) return Cancelled("udp client gone in the data phase");
      outbound_.push_back({std::string(reinterpret_cast<const char*>(bytes.data()), n), true, 0});
      outbound_data_ += n;
    }
    Wake(wake_fd_);
    bytes = bytes.subspan(n);
  }
  return Status::Ok();
}

void UdpChannel::PushInbound(std::span<const uint8_t> bytes, bool end_of_message) {
  std::unique_lock lock(mu_);
  cv_.wait(lock, [this] { return inbound_bytes_ < inbound_limit_ || closed_; });
  if (closed_) return;
  inbound_.push_back({{bytes.begin(), bytes.end()}, end_of_message});
  inbound_bytes_ += bytes.size();
  cv_.notify_all();
}

std::optional<UdpChannel::Packet> UdpChannel::TakeOutbound(size_t max_payload) {
  std::lock_guard lock(mu_);
  if (outbound_.empty()) return std::nullopt;
  if (!outbound_.front().data) {
    Packet p{std::move(outbound_.front().bytes), false};
    outbound_.pop_front();
    return p;
  }
  // A data packet: as full as the queued data allows.
  Packet p;
  while (p.payload.size() < max_payload && !outbound_.empty() && outbound_.front().data) {
    Outbound& front = outbound_.front();
    size_t n = std::min(front.bytes.size() - front.taken, max_payload - p.payload.size());
    p.payload.append(front.bytes, front.taken, n);
    front.taken += n;
    if (front.taken == front.bytes.size()) outbound_.pop_front();
  }
  outbound_data_ -= p.payload.size();
  data_left_ -= std::min<uint64_t>(data_left_, p.payload.size());
  p.continued = data_left_ > 0;
  cv_.notify_all();
  return p;
}

bool UdpChannel::in_data() const {
  std::lock_guard lock(mu_);
  return data_left_ > 0;
}

void UdpChannel::Close(bool resumable) {
  {
    std::lock_guard lock(mu_);
    if (!closed_) resumable_ = resumable;
    closed_ = true;
  }
  cv_.notify_all();
  Wake(wake_fd_);
}

bool UdpChannel::closed() const {
  std::lock_guard lock(mu_);
  return closed_;
}

bool UdpChannel::resumable() const {
  std::lock_guard lock(mu_);
  return closed_ && resumable_;
}

bool UdpChannel::idle() const {
  std::lock_guard lock(mu_);
  return waiting_for_command_ && inbound_.empty() && outbound_.empty();
}

// --- UdpServer --------------------------------------------------------------

bool UdpServer::Peer::operator==(const Peer& o) const {
  return len == o.len && std::memcmp(&addr, &o.addr, len) == 0;
}

Result<std::unique_ptr<UdpServer>> UdpServer::Bind(const std::string& host_port, FastbootDevice* device,
                                                   UdpOptions options) {
  std::unique_ptr<UdpServer> s(new UdpServer());
  FP_ASSIGN_OR_RETURN(s->fd_, wire::BindSocket(host_port, SOCK_DGRAM));
  s->wake_fd_.Reset(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  if (!s->wake_fd_.valid()) return ErrnoError("eventfd");
  s->device_ = device;
  s->options_ = options;
  s->expected_seq_ = 1;
  return s;
}

Result<std::unique_ptr<UdpServer>> UdpServer::ForTest(FastbootDevice* device, UdpOptions options, SendFn send) {
  std::unique_ptr<UdpServer> s(new UdpServer());
  s->wake_fd_.Reset(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  if (!s->wake_fd_.valid()) return ErrnoError("eventfd");
  s->device_ = device;
  s->options_ = options;
  s->expected_seq_ = 1;
  s->send_hook_ = std::move(send);
  s->session_thread_ = std::thread([p = s.get()] { p->SessionLoop(); });
  return s;
}

void UdpServer::InjectPacket(uint16_t from_port, std::span<const uint8_t> packet) {
  Peer from;
  auto* v4 = reinterpret_cast<sockaddr_in*>(&from.addr);
  v4->sin_family = AF_INET;
  v4->sin_port = htons(from_port);
  v4->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  from.len = sizeof(sockaddr_in);
  HandlePacket(from, packet);
  // Let the session answer a poll before the next packet, as a real client
  // would wait for it (keeps fuzz runs close to deterministic).
  for (int i = 0; i < 20 && poll_pending_; ++i) {
    AnswerPendingPoll(false);
    std::shared_ptr<UdpChannel> ch;
    {
      std::lock_guard lock(mu_);
      ch = channel_;
    }
    if (!poll_pending_ || (ch && ch->idle())) break;  // nothing will come
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

UdpServer::~UdpServer() {
  stop_ = true;
  {
    std::lock_guard lock(mu_);
    if (channel_) channel_->Close();
  }
  cv_.notify_all();
  if (packet_thread_.joinable()) packet_thread_.join();
  if (session_thread_.joinable()) session_thread_.join();
}

uint16_t UdpServer::port() const { return wire::LocalPort(fd_.get()); }

std::string UdpServer::address() const { return wire::LocalAddress(fd_.get()); }

void UdpServer::Start() {
  packet_thread_ = std::thread([this] { PacketLoop(); });
  session_thread_ = std::thread([this] { SessionLoop(); });
}

void UdpServer::SessionLoop() {
  for (;;) {
    std::shared_ptr<UdpChannel> ch;
    {
      std::unique_lock lock(mu_);
      cv_.wait(lock, [this] { return stop_ || next_session_ != nullptr; });
      if (stop_) return;
      ch = std::move(next_session_);
    }
    bool acquired = false;
    auto yield = [this, ch] { return YieldIfIdle(ch); };
    while (!ch->closed() && !(acquired = device_->TryAcquire(ch->peer(), yield))) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    if (acquired) {
      log::Info("{}: session start", ch->peer());
      Status st = Session(device_, ch.get()).Run();
      log::Info("{}: session end{}{}", ch->peer(), st.ok() ? "" : ": ", st.ok() ? "" : st.ToString());
    }
    ch->Close();
    if (acquired) device_->Release();
  }
}

void UdpServer::PacketLoop() {
  std::vector<uint8_t> buf(65536);
  while (!stop_) {
    pollfd fds[2] = {{fd_.get(), POLLIN, 0}, {wake_fd_.get(), POLLIN, 0}};
    int r = RetryOnEintr([&] { return ::poll(fds, 2, 100); });
    if (r < 0) break;
    if (fds[1].revents & POLLIN) {
      uint64_t v;
      (void)!::read(wake_fd_.get(), &v, sizeof v);
      AnswerPendingPoll(false);
    }
    if (fds[0].revents & POLLIN) {
      Peer from;
      from.len = sizeof from.addr;
      ssize_t n = ::recvfrom(fd_.get(), buf.data(), buf.size(), 0, reinterpret_cast<sockaddr*>(&from.addr),
                             &from.len);
      if (n >= 0) HandlePacket(from, std::span<const uint8_t>(buf.data(), static_cast<size_t>(n)));
    }
    auto now = Clock::now();
    if (poll_pending_ && now - poll_since_ >= options_.keepalive) AnswerPendingPoll(true);
    std::lock_guard lock(mu_);
    if (channel_ && !channel_->closed()) {
      bool idle = channel_->idle() && !poll_pending_;
      // Either ends the session and frees the device for others; a client
      // that was only quiet between commands may carry on (HandleFastboot).
      if (idle && now - last_heard_.load() > options_.stale_after) channel_->Close(/*resumable=*/true);
      if (!idle && now - last_heard_.load() > kDeadAfter) channel_->Close();
    }
  }
}

void UdpServer::SendRaw(const Peer& to, std::span<const uint8_t> pkt) {
  if (send_hook_) return send_hook_(pkt);
  ::sendto(fd_.get(), pkt.data(), pkt.size(), 0, reinterpret_cast<const sockaddr*>(&to.addr), to.len);
}

void UdpServer::SendTo(const Peer& to, uint8_t id, uint16_t seq, std::string_view payload, bool save,
                       uint8_t flags) {
  std::vector<uint8_t> pkt = udp::Packet({.id = id, .flags = flags, .seq = seq}, payload);
  SendRaw(to, pkt);
  if (save) saved_ = std::move(pkt);
}

void UdpServer::HandlePacket(const Peer& from, std::span<const uint8_t> packet) {
  std::optional<udp::Header> h = udp::ParseHeader(packet);
  if (!h) return;  // no seq to answer
  auto payload = udp::Payload(packet);
  if (peer_ && from == *peer_) last_heard_ = Clock::now();
  switch (h->id) {
    case udp::kIdQuery: {
      std::vector<uint8_t> next = udp::QueryPayload(expected_seq_);
      SendTo(from, udp::kIdQuery, h->seq, std::string_view(reinterpret_cast<char*>(next.data()), next.size()), false);
      return;
    }
    case udp::kIdInit:
      return HandleInit(from, h->seq, payload);
    case udp::kIdFastboot:
      return HandleFastboot(from, h->flags, h->seq, payload);
    default:
      SendTo(from, udp::kIdError, h->seq, fmt::format("unknown packet id {}", h->id), false);
  }
}

bool UdpServer::YieldIfIdle(const std::shared_ptr<UdpChannel>& ch) {
  std::lock_guard lock(mu_);
  if (channel_ != ch || ch->closed()) return true;  // ending already
  bool idle = ch->idle() && !poll_pending_;
  if (!idle && Clock::now() - last_heard_.load() <= options_.gone_after) return false;
  ch->Close();
  return true;
}

bool UdpServer::CanTakeOver(const Peer& from) const {
  std::string owner = device_->owner();
  if (!owner.empty() && owner.rfind("udp ", 0) != 0) return false;  // a TCP session
  if (!channel_ || channel_->closed() || (peer_ && from == *peer_)) return true;
  if (channel_->idle() && !poll_pending_) return true;
  return Clock::now() - last_heard_.load() > options_.gone_after;
}

void UdpServer::HandleInit(const Peer& from, uint16_t seq, std::span<const uint8_t> payload) {
  if (peer_ && from == *peer_ && seq == static_cast<uint16_t>(expected_seq_ - 1) && !saved_.empty() &&
      saved_[0] == udp::kIdInit) {
    SendRaw(from, saved_);
    return;
  }
  Result<udp::Init> init = udp::ParseInit(payload);
  if (!init.ok()) return SendTo(from, udp::kIdError, seq, init.status().message(), false);
  uint16_t host_max = init->max_packet;
  if (init->version < 1) return SendTo(from, udp::kIdError, seq, "init: protocol version 0", false);
  if (host_max < udp::kMinPacketSize) {
    return SendTo(from, udp::kIdError, seq, fmt::format("init: packet size {} < 512", host_max), false);
  }
  // A TCP client that has just left may not have been seen to close yet:
  // give its session a moment to end before refusing.
  for (int i = 0; i < 30; ++i) {
    std::string owner = device_->owner();
    if (owner.empty() || owner.rfind("udp ", 0) == 0) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  std::lock_guard lock(mu_);
  if (!CanTakeOver(from)) {
    std::string owner = device_->owner();
    log::Info("udp {} refused: busy ({})", FormatAddress(from.addr), owner);
    return SendTo(from, udp::kIdError, seq, fmt::format("busy: another session is active ({})", owner), false);
  }
  if (channel_) channel_->Close();
  channel_ = std::make_shared<UdpChannel>(FormatAddress(from.addr), options_.inbound_limit, wake_fd_.get());
  next_session_ = channel_;
  cv_.notify_all();
  peer_ = from;
  last_heard_ = Clock::now();
  poll_pending_ = false;
  packet_size_ = std::min(host_max, options_.max_packet_size);
  expected_seq_ = static_cast<uint16_t>(seq + 1);
  std::vector<uint8_t> reply = udp::InitPayload({.version = udp::kProtocolVersion, .max_packet = packet_size_});
  SendTo(from, udp::kIdInit, seq, std::string_view(reinterpret_cast<char*>(reply.data()), reply.size()), true);
}

void UdpServer::HandleFastboot(const Peer& from, uint8_t flags, uint16_t seq, std::span<const uint8_t> payload) {
  if (!peer_ || !(from == *peer_)) {
    return SendTo(from, udp::kIdError, seq, "no session: send init first", false);
  }
  if (seq == static_cast<uint16_t>(expected_seq_ - 1) && !saved_.empty()) {
    SendRaw(from, saved_);
    return;
  }
  if (seq != expected_seq_ || (poll_pending_ && seq == poll_seq_)) return;
  std::shared_ptr<UdpChannel> ch;
  {
    std::lock_guard lock(mu_);
    if (channel_->closed() && !payload.empty()) {
      // The session ended while the client was quiet between commands
      // (e.g. resparsing the next part): carry on in a new session, which
      // starts without a download like any other. A session that ended
      // for another reason (a reboot, its time limit) stays ended. A poll
      // instead still collects what the ended session said last.
      if (!channel_->resumable()) {
        return SendTo(from, udp::kIdError, seq, "session ended: send init to start a new one", false);
      }
      if (!CanTakeOver(from)) {
        return SendTo(from, udp::kIdError, seq, fmt::format("busy: another session is active ({})", device_->owner()), false);
      }
      channel_ = std::make_shared<UdpChannel>(FormatAddress(from.addr), options_.inbound_limit, wake_fd_.get());
      next_session_ = channel_;
      cv_.notify_all();
    }
    ch = channel_;
  }
  if (!payload.empty()) {
    ch->PushInbound(payload, (flags & udp::kFlagContinuation) == 0);
    SendTo(from, udp::kIdFastboot, seq, {}, true);
    expected_seq_ = static_cast<uint16_t>(seq + 1);
    return;
  }
  poll_pending_ = true;
  poll_seq_ = seq;
  poll_since_ = Clock::now();
  AnswerPendingPoll(false);
}

void UdpServer::AnswerPendingPoll(bool keepalive_due) {
  if (!poll_pending_ || !peer_) return;
  std::shared_ptr<UdpChannel> ch;
  {
    std::lock_guard lock(mu_);
    ch = channel_;
  }
  if (!ch) return;
  std::optional<UdpChannel::Packet> msg = ch->TakeOutbound(packet_size_ - udp::kHeaderSize);
  if (!msg && ch->closed()) msg = UdpChannel::Packet{wire::Fail("session ended")};
  if (!msg && keepalive_due && !ch->in_data()) msg = UdpChannel::Packet{wire::Info("still working")};
  if (!msg) return;
  SendTo(*peer_, udp::kIdFastboot, poll_seq_, msg->payload, true, msg->continued ? udp::kFlagContinuation : 0);
  expected_seq_ = static_cast<uint16_t>(poll_seq_ + 1);
  poll_pending_ = false;
}

}  // namespace flashpipe::fastboot
