// Fastboot over UDP, the device side (the bytes: wire/udp_packet.h).
//
// Every host packet starts with [id][flags][seq_hi][seq_lo] and gets exactly
// one answer echoing its seq: query (1) -> the next expected seq; init (2) ->
// version 1 and the packet size (min of the host's and ours, >= 512);
// fastboot (3) -> an empty ack for a packet carrying bytes (a command or
// download data; flag bit 0 = continuation), or the next response for an
// empty packet (a poll). A repeated seq gets the saved answer again; other
// seqs are ignored. Errors go back as id 0 packets with a message.
//
// The packet engine (UdpServer::HandlePacket) runs on the server thread; the
// session runs on its own thread and talks to it through a UdpChannel, the
// Connection whose inbound bytes are the packets' payloads and whose outbound
// messages answer polls. While the session is busy (a flash, an erase) a poll
// stays pending; it is answered as soon as the session has something to say,
// or every keepalive interval with an INFO line, so the client, which gives
// up after 60 s of silence, keeps waiting.
//
// The device's data phase (fetch, upload) is one message: each poll gets the
// next packet of it, with the continuation flag on all but the last, as the
// client reads one message per read. No keepalive is sent from BeginData to
// the last packet (it would land in the data). The 29.0.6 client reads the
// whole phase with one read and newer ones read 1 MiB at a time, so a phase
// is at most 1 MiB (max_data): then both read it as one message.
//
// One client at a time: an init from another address while the session is in
// the middle of a command (and its client was heard within gone_after) is
// answered with an error packet "busy: ..."; otherwise the new client takes
// over (each fastboot invocation is a new UDP client, there is no close).
// A TCP client takes over an idle UDP session the same way (YieldIfIdle).
#pragma once

#include <sys/socket.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "base/unique_fd.h"
#include "fastboot/device.h"
#include "fastboot/connection.h"
#include "wire/udp_packet.h"

namespace flashpipe::fastboot {

// The session side of one UDP client. Thread-safe between the server thread
// (Push*, TakeOutbound, Close) and the session thread (Connection methods).
class UdpChannel : public StreamConnection {
 public:
  UdpChannel(std::string peer, size_t inbound_limit, int wake_fd);

  Result<std::string> ReadCommand(size_t max_size) override;
  Result<size_t> ReadData(std::span<uint8_t> out) override;
  Status Send(std::string_view message) override;
  std::string peer() const override { return "udp " + peer_; }
  bool ClientGone() override { return closed(); }
  // The largest data phase both the 29.0.6 client (one read) and newer
  // ones (1 MiB reads) take as one message.
  static constexpr uint64_t kMaxDataPhase = 1 << 20;
  uint64_t max_data() const override { return kMaxDataPhase; }
  Status BeginData(uint64_t total) override;
  // Blocks while the queued data is over its limit (the client polls it out).
  Status SendData(std::span<const uint8_t> bytes) override;

  // Server side. PushInbound blocks while the inbound queue is over its limit.
  void PushInbound(std::span<const uint8_t> bytes, bool end_of_message);
  // What answers the next poll: a response, or the next packet of a data
  // phase, up to max_payload bytes (`continued`: more of it follows).
  struct Packet {
    std::string payload;
    bool continued = false;
  };
  std::optional<Packet> TakeOutbound(size_t max_payload);
  // Between BeginData and the data phase's last packet taken.
  bool in_data() const;
  // Ends the session. resumable: the client was only quiet between
  // commands, and its next command may start a new session.
  void Close(bool resumable = false);
  bool closed() const;
  bool resumable() const;
  // True while the session waits for a command with nothing queued either way.
  bool idle() const;

 private:
  struct Chunk {
    std::vector<uint8_t> bytes;
    bool end_of_message;
  };
  bool WaitInbound(std::unique_lock<std::mutex>& lock);

  std::string peer_;
  size_t inbound_limit_;
  int wake_fd_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Chunk> inbound_;
  size_t inbound_bytes_ = 0;
  size_t head_offset_ = 0;  // bytes of inbound_.front() already read
  struct Outbound {
    std::string bytes;
    bool data;  // part of a data phase, else a response
    size_t taken;  // bytes of it already in packets
  };
  std::deque<Outbound> outbound_;
  size_t outbound_data_ = 0;  // data bytes queued
  uint64_t data_left_ = 0;    // of the data phase, not yet taken
  bool closed_ = false;
  bool resumable_ = false;
  bool waiting_for_command_ = false;
};

struct UdpOptions {
  uint16_t max_packet_size = 8192;
  std::chrono::milliseconds keepalive{5000};
  std::chrono::milliseconds stale_after{3000};  // an idle session is ended (its client resumes it)
  // A client silent this long in the middle of a command is gone (29.0.6
  // sends every 500 ms while it waits): another client may take over.
  std::chrono::milliseconds gone_after{1200};
  size_t inbound_limit = 4 << 20;
};

class UdpServer {
 public:
  static Result<std::unique_ptr<UdpServer>> Bind(const std::string& host_port, FastbootDevice* device,
                                                 UdpOptions options = {});
  ~UdpServer();
  uint16_t port() const;
  // "127.0.0.1:5554": the address it is bound to.
  std::string address() const;
  void Start();

  // Tests and the fuzzer: no socket; packets go in through InjectPacket (on
  // the caller's thread) and answers out through `send`. The session thread
  // runs as usual.
  using SendFn = std::function<void(std::span<const uint8_t> packet)>;
  static Result<std::unique_ptr<UdpServer>> ForTest(FastbootDevice* device, UdpOptions options, SendFn send);
  // `from_port` tells clients apart.
  void InjectPacket(uint16_t from_port, std::span<const uint8_t> packet);

 private:
  using Clock = std::chrono::steady_clock;
  struct Peer {
    sockaddr_storage addr{};
    socklen_t len = 0;
    bool operator==(const Peer& o) const;
  };
  UdpServer() = default;
  void PacketLoop();
  void SessionLoop();
  void HandlePacket(const Peer& from, std::span<const uint8_t> packet);
  void HandleInit(const Peer& from, uint16_t seq, std::span<const uint8_t> payload);
  void HandleFastboot(const Peer& from, uint8_t flags, uint16_t seq, std::span<const uint8_t> payload);
  void AnswerPendingPoll(bool keepalive_due);
  void SendRaw(const Peer& to, std::span<const uint8_t> packet);
  void SendTo(const Peer& to, uint8_t id, uint16_t seq, std::string_view payload, bool save, uint8_t flags = 0);
  bool CanTakeOver(const Peer& from) const;
  // The device's yield offer for a session (any thread): ends `ch` when its
  // client is between commands or gone.
  bool YieldIfIdle(const std::shared_ptr<UdpChannel>& ch);

  UniqueFd fd_;
  SendFn send_hook_;
  UniqueFd wake_fd_;  // eventfd: the session queued a response
  FastbootDevice* device_ = nullptr;
  UdpOptions options_;
  std::atomic<bool> stop_{false};
  std::thread packet_thread_;
  std::thread session_thread_;

  // Packet-thread state.
  uint16_t expected_seq_ = 0;
  std::optional<Peer> peer_;
  uint16_t packet_size_ = wire::udp::kMinPacketSize;
  std::vector<uint8_t> saved_;  // last answer to peer_, for a repeated seq
  std::atomic<Clock::time_point> last_heard_{};  // read by YieldIfIdle too
  std::atomic<bool> poll_pending_{false};  // read by YieldIfIdle too
  uint16_t poll_seq_ = 0;
  Clock::time_point poll_since_{};

  // Handed from the packet thread to the session thread.
  std::mutex mu_;
  std::condition_variable cv_;
  std::shared_ptr<UdpChannel> channel_;        // current client
  std::shared_ptr<UdpChannel> next_session_;   // waiting to run
};

}  // namespace flashpipe::fastboot
