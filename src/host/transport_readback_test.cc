// ReceiveData of the TCP and UDP transports against a scripted device on
// loopback: the bytes of a data phase come out exactly, whatever frames or
// packets carried them and however the reads are cut; bytes beyond the data
// phase make the next response a protocol error; silence is kTimedOut, a
// closed connection kCancelled.
#include <sys/socket.h>

#include <gtest/gtest.h>

#include <atomic>
#include <functional>
#include <numeric>
#include <thread>

#include "host/tcp_transport.h"
#include "host/udp_transport.h"
#include "wire/net.h"
#include "wire/tcp_frame.h"
#include "wire/udp_packet.h"

namespace flashpipe::host {
namespace {

using namespace std::chrono_literals;

std::vector<uint8_t> Pattern(size_t n) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<uint8_t>(i * 131 + (i >> 9));
  return v;
}

// Reads `total` bytes in pieces of the given sizes (the last repeats).
std::vector<uint8_t> ReadIn(Transport& t, size_t total, std::vector<size_t> pieces, Status* st) {
  std::vector<uint8_t> got(total);
  size_t done = 0, i = 0;
  while (done < total) {
    size_t n = std::min(pieces[std::min(i++, pieces.size() - 1)], total - done);
    *st = t.ReceiveData(std::span(got).subspan(done, n));
    if (!st->ok()) return got;
    done += n;
  }
  return got;
}

// A TCP device: the handshake, then `script` with the connection, then
// it waits for the host to close.
class TcpDevice {
 public:
  explicit TcpDevice(std::function<void(int fd)> script) {
    listener_ = wire::BindSocket("127.0.0.1:0", SOCK_STREAM).value();
    port_ = wire::LocalPort(listener_.get());
    thread_ = std::thread([this, script = std::move(script)] {
      int fd = ::accept(listener_.get(), nullptr, nullptr);
      if (fd < 0) return;
      uint8_t hello[4];
      if (wire::RecvExact(fd, hello, 2000ms, false).ok() && wire::SendAll(fd, wire::tcp::kHandshake).ok()) {
        script(fd);
      }
      uint8_t sink[64];
      while (!close_early_ && ::recv(fd, sink, sizeof sink, 0) > 0) {
      }
      ::close(fd);
    });
  }
  ~TcpDevice() { thread_.join(); }
  std::unique_ptr<TcpTransport> Connect(std::chrono::milliseconds idle = 5000ms) {
    auto t = TcpTransport::Connect({"127.0.0.1", port_}, {.idle = idle});
    EXPECT_TRUE(t.ok()) << t.status().ToString();
    return t.ok() ? std::move(*t) : nullptr;
  }
  static void Frame(int fd, std::span<const uint8_t> bytes) {
    auto h = wire::tcp::FrameHeader(bytes.size());
    ASSERT_TRUE(wire::SendAll(fd, h).ok());
    if (!bytes.empty()) {
      ASSERT_TRUE(wire::SendAll(fd, bytes).ok());
    }
  }
  static void Frame(int fd, std::string_view s) {
    Frame(fd, std::span(reinterpret_cast<const uint8_t*>(s.data()), s.size()));
  }
  // A frame the host may have stopped reading for (it found an error in
  // what came before and closed): sent if it can be.
  static void LastFrame(int fd, std::string_view s) {
    auto h = wire::tcp::FrameHeader(s.size());
    if (wire::SendAll(fd, h).ok()) (void)wire::SendAll(fd, std::span(reinterpret_cast<const uint8_t*>(s.data()), s.size()));
  }
  std::atomic<bool> close_early_{false};

 private:
  UniqueFd listener_;
  uint16_t port_ = 0;
  std::thread thread_;
};

TEST(TcpReceiveDataTest, BytesAcrossFramesOfAnySizeThenTheResponse) {
  std::vector<uint8_t> data = Pattern(100000);
  TcpDevice dev([&](int fd) {
    std::span<const uint8_t> d(data);
    TcpDevice::Frame(fd, d.first(0));  // an empty frame carries nothing
    TcpDevice::Frame(fd, d.subspan(0, 1));
    TcpDevice::Frame(fd, d.subspan(1, 65536));
    TcpDevice::Frame(fd, d.subspan(65537));
    TcpDevice::Frame(fd, "OKAY");
  });
  auto t = dev.Connect();
  ASSERT_NE(t, nullptr);
  ASSERT_TRUE(t->ReceiveData({}).ok());  // it reads data phases
  Status st;
  auto got = ReadIn(*t, data.size(), {4096, 30000, 7}, &st);
  ASSERT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(got, data);
  auto r = t->Receive();
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(*r, "OKAY");
}

TEST(TcpReceiveDataTest, MoreDataThanReadIsAProtocolErrorAtTheResponse) {
  std::vector<uint8_t> data = Pattern(10);
  TcpDevice dev([&](int fd) {
    TcpDevice::Frame(fd, data);
    TcpDevice::LastFrame(fd, "OKAY");  // the host stops at the 4 extra bytes and may close first
  });
  auto t = dev.Connect();
  ASSERT_NE(t, nullptr);
  std::vector<uint8_t> six(6);
  ASSERT_TRUE(t->ReceiveData(six).ok());
  EXPECT_EQ(six, std::vector<uint8_t>(data.begin(), data.begin() + 6));
  auto r = t->Receive();
  EXPECT_EQ(r.status().code(), Code::kProtocol) << r.status().ToString();
  EXPECT_EQ(r.status().message(), "the device sent 4 bytes more data than it announced");
}

TEST(TcpReceiveDataTest, SilenceIsTimedOutAndACloseIsCancelled) {
  {
    TcpDevice dev([](int fd) { TcpDevice::Frame(fd, std::string_view("ab")); });  // 2 of the 8 asked
    auto t = dev.Connect(300ms);
    ASSERT_NE(t, nullptr);
    std::vector<uint8_t> buf(8);
    Status st = t->ReceiveData(buf);
    EXPECT_EQ(st.code(), Code::kTimedOut) << st.ToString();
  }
  TcpDevice gone([](int) {});
  gone.close_early_ = true;
  auto t = gone.Connect();
  ASSERT_NE(t, nullptr);
  std::vector<uint8_t> buf(8);
  Status st = t->ReceiveData(buf);
  EXPECT_EQ(st.code(), Code::kCancelled) << st.ToString();
}

// A UDP device: answers the query and init (packets of `packet` bytes),
// then each fastboot packet with the next of `answers` (payload, flags),
// empty when they run out, echoing the sequence number.
class UdpDevice {
 public:
  UdpDevice(uint16_t packet, std::vector<std::pair<std::vector<uint8_t>, uint8_t>> answers)
      : answers_(std::move(answers)) {
    sock_ = wire::BindSocket("127.0.0.1:0", SOCK_DGRAM).value();
    port_ = wire::LocalPort(sock_.get());
    thread_ = std::thread([this, packet] {
      std::vector<uint8_t> in(65536);
      size_t next = 0;
      while (!stop_) {
        sockaddr_storage from{};
        socklen_t len = sizeof from;
        if (!wire::WaitReadable(sock_.get(), 0ms, std::chrono::steady_clock::now() + 50ms).ok()) continue;
        ssize_t n = ::recvfrom(sock_.get(), in.data(), in.size(), 0, reinterpret_cast<sockaddr*>(&from), &len);
        if (n < 4) continue;
        auto h = *wire::udp::ParseHeader(std::span<const uint8_t>(in).first(n));
        std::vector<uint8_t> out;
        if (h.id == wire::udp::kIdQuery) {
          out = wire::udp::Packet(h, wire::udp::QueryPayload(0x100));
        } else if (h.id == wire::udp::kIdInit) {
          out = wire::udp::Packet(h, wire::udp::InitPayload({.version = 1, .max_packet = packet}));
        } else if (n > 4 || next >= answers_.size()) {
          out = wire::udp::Packet({h.id, 0, h.seq});  // a command's ack, or nothing to say
        } else {
          auto& [payload, flags] = answers_[next++];
          out = wire::udp::Packet({h.id, flags, h.seq}, payload);
          ++polls;
        }
        ::sendto(sock_.get(), out.data(), out.size(), 0, reinterpret_cast<sockaddr*>(&from), len);
      }
    });
  }
  ~UdpDevice() {
    stop_ = true;
    thread_.join();
  }
  std::unique_ptr<UdpTransport> Connect(std::chrono::milliseconds idle = 5000ms) {
    auto t = UdpTransport::Connect({"127.0.0.1", port_}, {.idle = idle});
    EXPECT_TRUE(t.ok()) << t.status().ToString();
    return t.ok() ? std::move(*t) : nullptr;
  }
  std::atomic<int> polls{0};

 private:
  std::vector<std::pair<std::vector<uint8_t>, uint8_t>> answers_;
  UniqueFd sock_;
  uint16_t port_ = 0;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

// The data phase as the device's packets: `step` bytes each, continued
// but the last; `empty_first` "nothing yet" answers before it.
std::vector<std::pair<std::vector<uint8_t>, uint8_t>> Packets(const std::vector<uint8_t>& data, size_t step,
                                                              int empty_first, std::string_view then) {
  std::vector<std::pair<std::vector<uint8_t>, uint8_t>> out;
  for (int i = 0; i < empty_first; ++i) out.push_back({{}, 0});
  for (size_t i = 0; i < data.size(); i += step) {
    size_t n = std::min(step, data.size() - i);
    out.push_back({{data.begin() + i, data.begin() + i + n}, uint8_t{i + n < data.size() ? wire::udp::kFlagContinuation : uint8_t{0}}});
  }
  out.push_back({{then.begin(), then.end()}, 0});
  return out;
}

TEST(UdpReceiveDataTest, PacketsStraddlingReadsComeOutExactlyThenTheResponse) {
  std::vector<uint8_t> data = Pattern(3000);
  UdpDevice dev(600, Packets(data, 596, 3, "OKAY"));
  auto t = dev.Connect();
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->max_payload(), 596u);
  Status st;
  auto got = ReadIn(*t, data.size(), {1000, 1, 777}, &st);
  ASSERT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(got, data);
  auto r = t->Receive();
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(*r, "OKAY");
  EXPECT_EQ(dev.polls.load(), 3 + 6 + 1);  // the empty answers, the data packets, the OKAY
}

TEST(UdpReceiveDataTest, MoreDataThanReadIsAProtocolErrorAtTheResponse) {
  std::vector<uint8_t> data = Pattern(1000);
  UdpDevice dev(600, Packets(data, 596, 0, "OKAY"));
  auto t = dev.Connect();
  ASSERT_NE(t, nullptr);
  std::vector<uint8_t> buf(990);
  ASSERT_TRUE(t->ReceiveData(buf).ok());
  auto r = t->Receive();
  EXPECT_EQ(r.status().code(), Code::kProtocol) << r.status().ToString();
  EXPECT_EQ(r.status().message(), "the device sent 10 bytes more data than it announced");
}

TEST(UdpReceiveDataTest, ADeviceThatOnlyAnswersEmptyIsTimedOut) {
  UdpDevice dev(600, {});
  auto t = dev.Connect(300ms);
  ASSERT_NE(t, nullptr);
  std::vector<uint8_t> buf(10);
  auto t0 = std::chrono::steady_clock::now();
  Status st = t->ReceiveData(buf);
  EXPECT_EQ(st.code(), Code::kTimedOut) << st.ToString();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 3s);
}

}  // namespace
}  // namespace flashpipe::host
