// The device's data phase (fetch, upload) on each transport, framed as the
// clients read it: TCP one frame; UDP one message of continued packets, each
// answering a poll, with no keepalive inside it; USB whole packets with a
// short one only at the end and no zero-length packet.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <random>
#include <thread>

#include "base/endian.h"
#include "fastboot/ffs_connection.h"
#include "fastboot/tcp.h"
#include "fastboot/udp.h"
#include "testing/fake_ffs.h"
#include "testing/fastboot_fakes.h"
#include "testing/fault_queue.h"
#include "wire/protocol.h"
#include "wire/udp_packet.h"

namespace flashpipe::fastboot {
namespace {

using namespace std::chrono_literals;

std::string RandomBytes(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::string s(n, '\0');
  for (auto& c : s) c = static_cast<char>(rng());
  return s;
}
std::span<const uint8_t> Span(std::string_view s) { return {reinterpret_cast<const uint8_t*>(s.data()), s.size()}; }

std::string Frame(std::string_view payload) {
  std::string f(8, '\0');
  StoreBE64(f.data(), payload.size());
  return f + std::string(payload);
}

TEST(TcpDataPhaseTest, OneFrameAfterTheDataResponse) {
  int sv[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
  TcpConnection t(UniqueFd(sv[0]), "test", 2000ms);
  EXPECT_EQ(t.max_data(), UINT32_MAX);
  std::string data = RandomBytes(70000, 1);
  std::thread device([&] {
    ASSERT_TRUE(t.BeginData(data.size()).ok());
    ASSERT_TRUE(t.Send(wire::Data(static_cast<uint32_t>(data.size()))).ok());
    for (size_t at = 0; at < data.size(); at += 9999) {
      ASSERT_TRUE(t.SendData(Span(data).subspan(at, std::min<size_t>(9999, data.size() - at))).ok());
    }
    ASSERT_TRUE(t.Send("OKAY").ok());
  });
  std::string want = Frame("DATA00011170") + Frame(data) + Frame("OKAY");
  std::string got(want.size(), '\0');
  size_t done = 0;
  while (done < got.size()) {
    ssize_t n = read(sv[1], got.data() + done, got.size() - done);
    ASSERT_GT(n, 0);
    done += static_cast<size_t>(n);
  }
  device.join();
  EXPECT_TRUE(got == want);
  close(sv[1]);
}

TEST(UsbDataPhaseTest, WholePacketsThenOneShortNoZeroLengthPacket) {
  for (uint32_t mps : {64u, 512u}) {
    for (size_t size : {size_t{1}, size_t{64 * 1000}, size_t{700001}}) {
      testing::FakeEndpoints fake(mps);
      FfsConnection t(&fake, UsbOptions{.read_size = 16 << 10});
      ASSERT_TRUE(t.Start("usb test").ok());
      std::string data = RandomBytes(size, static_cast<uint32_t>(size));
      std::thread device([&] {
        ASSERT_TRUE(t.BeginData(data.size()).ok());
        ASSERT_TRUE(t.Send(wire::Data(static_cast<uint32_t>(data.size()))).ok());
        for (size_t at = 0; at < data.size(); at += 3333) {  // slices that are no packet multiple
          ASSERT_TRUE(t.SendData(Span(data).subspan(at, std::min<size_t>(3333, data.size() - at))).ok());
        }
        ASSERT_TRUE(t.Send("OKAY").ok());
      });
      EXPECT_EQ(fake.HostTake(), wire::Data(static_cast<uint32_t>(size)));
      std::string got;
      while (got.size() < size) {
        auto w = fake.HostTake();
        ASSERT_TRUE(w.has_value()) << "after " << got.size();
        ASSERT_FALSE(w->empty()) << "zero-length packet inside the data phase";
        got += *w;
        if (got.size() < size) EXPECT_EQ(w->size() % mps, 0u) << "a short packet before the end";
        EXPECT_LE(fake.writes_queued(), 5u);  // 4 data writes at most, and the OKAY
      }
      EXPECT_EQ(fake.HostTake(), "OKAY") << "mps " << mps << " size " << size;  // no zero-length packet first
      device.join();
      EXPECT_TRUE(got == data) << "mps " << mps << " size " << size;
    }
  }
}

// A real socket and the packet thread, so that keepalives run: a data phase
// that waits for a slow medium gets no INFO among its packets.
TEST(UdpDataPhaseTest, ContinuedPacketsAnsweringPollsWithoutKeepalives) {
  constexpr uint64_t kSize = 200000;
  testing::MemQueue mem(1 << 20);
  mem.Allow(0, 1 << 20);
  std::string content = RandomBytes(1 << 20, 3);
  std::memcpy(mem.disk().data(), content.data(), content.size());
  testing::FaultQueue slow(&mem);
  slow.OnSubmit([](const io::IoOp& op) {
    if (op.kind == io::OpKind::kRead) std::this_thread::sleep_for(100ms);  // >> the keepalive
  });
  FastbootDevice device({}, Storage::ForQueue(&slow, {.size = 1 << 20, .direct = false}, {{"misc", 0, 0, 1 << 20}},
                                               {.request_size = 64 << 10}),
                        PersistentState::InMemory());
  auto server = UdpServer::Bind("127.0.0.1:0", &device, UdpOptions{.keepalive = 20ms});
  ASSERT_TRUE(server.ok()) << server.status().ToString();
  (*server)->Start();

  int fd = socket(AF_INET, SOCK_DGRAM, 0);
  ASSERT_GE(fd, 0);
  timeval tv{.tv_sec = 2, .tv_usec = 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = htons((*server)->port());
  to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  uint16_t seq = 0;
  auto exchange = [&](uint8_t id, std::string_view payload) {
    std::string p(4, '\0');
    p[0] = static_cast<char>(id);
    StoreBE16(&p[2], seq);
    p += payload;
    sendto(fd, p.data(), p.size(), 0, reinterpret_cast<sockaddr*>(&to), sizeof to);
    std::string r(2048, '\0');
    ssize_t n = recv(fd, r.data(), r.size(), 0);
    r.resize(n > 0 ? static_cast<size_t>(n) : 0);
    ++seq;
    return r;
  };
  std::string q = exchange(1, "");
  ASSERT_EQ(q.size(), 6u);
  seq = LoadBE16(&q[4]);
  ASSERT_EQ(exchange(2, std::string("\x00\x01\x04\x00", 4)).substr(4), std::string("\x00\x01\x04\x00", 4));
  ASSERT_EQ(exchange(3, "fetch:misc:0x10:200000").size(), 4u);  // the ack
  std::string r = exchange(3, "");
  ASSERT_EQ(r.substr(4), "DATA00030d40");
  std::string got;
  for (;;) {
    r = exchange(3, "");
    ASSERT_GE(r.size(), 4u);
    ASSERT_LE(r.size(), 1024u);
    got += r.substr(4);
    bool continued = r[1] & wire::udp::kFlagContinuation;
    EXPECT_EQ(continued, got.size() < kSize) << "at " << got.size();
    if (!continued) break;
  }
  EXPECT_TRUE(got == content.substr(0x10, kSize)) << "the data phase holds something else (a keepalive?)";
  EXPECT_EQ(exchange(3, "").substr(4), "OKAY");
  close(fd);
}

}  // namespace
}  // namespace flashpipe::fastboot
