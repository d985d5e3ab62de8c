// TcpConnection over a socketpair and UdpServer's packet engine without a
// socket: framing, byte counting across frames, malformed input.
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <mutex>
#include <thread>

#include "base/endian.h"
#include "fastboot/session.h"
#include "fastboot/tcp.h"
#include "fastboot/udp.h"
#include "testing/fastboot_fakes.h"

namespace flashpipe::fastboot {
namespace {

std::string Frame(std::string_view payload, uint64_t length = UINT64_MAX) {
  std::string f(8, '\0');
  StoreBE64(f.data(), length == UINT64_MAX ? payload.size() : length);
  return f + std::string(payload);
}

class TcpTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, sv_), 0);
    t_ = std::make_unique<TcpConnection>(UniqueFd(sv_[0]), "test", std::chrono::milliseconds(2000));
  }
  void TearDown() override { close(sv_[1]); }
  void Put(const std::string& bytes) { ASSERT_EQ(write(sv_[1], bytes.data(), bytes.size()), (ssize_t)bytes.size()); }
  std::string Get(size_t n) {
    std::string s(n, '\0');
    size_t done = 0;
    while (done < n) {
      ssize_t r = read(sv_[1], s.data() + done, n - done);
      if (r <= 0) break;
      done += r;
    }
    s.resize(done);
    return s;
  }
  int sv_[2];
  std::unique_ptr<TcpConnection> t_;
};

TEST_F(TcpTest, HandshakeAndFramesBothWays) {
  Put("FB01");
  ASSERT_TRUE(t_->Handshake().ok());
  EXPECT_EQ(Get(4), "FB01");
  Put(Frame("getvar:version"));
  EXPECT_EQ(*t_->ReadCommand(64), "getvar:version");
  ASSERT_TRUE(t_->Send("OKAY0.4").ok());
  EXPECT_EQ(Get(15), Frame("OKAY0.4"));
}

TEST_F(TcpTest, RejectsBadHandshake) {
  Put("FB00");
  EXPECT_EQ(t_->Handshake().code(), Code::kCorrupt);
}

TEST_F(TcpTest, DataIsCountedAcrossArbitraryFrames) {
  Put(Frame("ab") + Frame("") + Frame("cdefg") + Frame("h") + Frame("getvar:x"));
  std::string got;
  uint8_t buf[3];
  while (got.size() < 8) {
    auto n = t_->ReadData(std::span(buf, std::min<size_t>(3, 8 - got.size())));
    ASSERT_TRUE(n.ok()) << n.status().ToString();
    got.append(reinterpret_cast<char*>(buf), *n);
  }
  EXPECT_EQ(got, "abcdefgh");
  EXPECT_EQ(*t_->ReadCommand(64), "getvar:x");
}

TEST_F(TcpTest, OversizedAndOverrunFramesAreReportedThenSkipped) {
  Put(Frame(std::string(100, 'x')) + Frame("ok"));
  EXPECT_EQ(t_->ReadCommand(64).status().message(), "command of 100 bytes, max 64");
  EXPECT_EQ(*t_->ReadCommand(64), "ok");
  Put(Frame("12345678") + Frame("next"));
  uint8_t buf[4];
  ASSERT_EQ(*t_->ReadData(buf), 4u);  // the download was 4 bytes
  EXPECT_EQ(t_->ReadCommand(64).status().message(), "data frame ran 4 bytes past the download");
  EXPECT_EQ(*t_->ReadCommand(64), "next");
  Put(Frame("", 1ull << 40));
  EXPECT_EQ(t_->ReadCommand(64).status().code(), Code::kCorrupt);
}

TEST_F(TcpTest, CloseIsCancelled) {
  Put(Frame("getvar:x").substr(0, 5));
  shutdown(sv_[1], SHUT_WR);
  EXPECT_EQ(t_->ReadCommand(64).status().code(), Code::kCancelled);
}

TEST_F(TcpTest, DeadlineIsTimedOutIdleIsCancelledCloseIsGone) {
  t_->set_deadline(std::chrono::steady_clock::now() + std::chrono::milliseconds(100));
  EXPECT_EQ(t_->ReadCommand(64).status().code(), Code::kTimedOut);
  uint8_t buf[4];
  EXPECT_EQ(t_->ReadData(buf).status().code(), Code::kTimedOut);
  t_->set_deadline(Connection::Deadline::max());
  TcpConnection idle(UniqueFd(dup(sv_[0])), "idle", std::chrono::milliseconds(100));
  EXPECT_EQ(idle.ReadCommand(64).status().code(), Code::kCancelled);
  EXPECT_FALSE(t_->ClientGone());
  shutdown(sv_[1], SHUT_WR);
  EXPECT_TRUE(t_->ClientGone());
}

TEST_F(TcpTest, SendNeverExceeds64Bytes) {
  ASSERT_TRUE(t_->Send(std::string(300, 'F')).ok());
  EXPECT_EQ(Get(8 + 64), Frame(std::string(64, 'F')));
}

// --- UDP --------------------------------------------------------------------

class UdpTest : public ::testing::Test {
 protected:
  void SetUp() override {
    mem_.Allow(0, 1 << 20);
    io::Geometry g{.size = 1 << 20, .direct = false};
    DeviceConfig config;
    config.max_download_size = 1 << 16;
    device_ = std::make_unique<FastbootDevice>(config, Storage::ForQueue(&mem_, g, {{"misc", 0, 0, 1 << 20}}),
                                               PersistentState::InMemory());
    UdpOptions o;
    o.keepalive = std::chrono::milliseconds(100000);
    MakeServer(o);
  }
  void MakeServer(UdpOptions o) {
    server_.reset();
    auto server = UdpServer::ForTest(device_.get(), o, [this](std::span<const uint8_t> p) {
      std::lock_guard lock(mu_);
      out_.emplace_back(p.begin(), p.end());
    });
    ASSERT_TRUE(server.ok());
    server_ = std::move(server).value();
  }
  void TearDown() override { server_.reset(); }

  // Sends one packet from `port`; returns the answer ("" when none).
  std::string Send(std::string pkt, uint16_t port = 1000) {
    {
      std::lock_guard lock(mu_);
      out_.clear();
    }
    server_->InjectPacket(port, std::span(reinterpret_cast<const uint8_t*>(pkt.data()), pkt.size()));
    for (int i = 0; i < 200; ++i) {
      {
        std::lock_guard lock(mu_);
        if (!out_.empty()) return std::string(out_.back().begin(), out_.back().end());
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
      server_->InjectPacket(port, {});  // lets the engine answer a pending poll
    }
    return "";
  }
  static std::string Pkt(uint8_t id, uint8_t flags, uint16_t seq, std::string_view payload = {}) {
    std::string p(4, '\0');
    p[0] = static_cast<char>(id);
    p[1] = static_cast<char>(flags);
    StoreBE16(&p[2], seq);
    return p + std::string(payload);
  }
  uint16_t Init(uint16_t port = 1000) {
    std::string q = Send(Pkt(1, 0, 0), port);
    EXPECT_EQ(q.size(), 6u);
    uint16_t seq = LoadBE16(&q[4]);
    std::string r = Send(Pkt(2, 0, seq, std::string("\x00\x01\x20\x00", 4)), port);
    EXPECT_EQ(r, Pkt(2, 0, seq, std::string("\x00\x01\x20\x00", 4)));  // min(8192, ours 8192)
    return seq + 1;
  }

  testing::MemQueue mem_{1 << 20};
  std::unique_ptr<FastbootDevice> device_;
  std::unique_ptr<UdpServer> server_;
  std::mutex mu_;
  std::vector<std::vector<uint8_t>> out_;
};

TEST_F(UdpTest, QueryInitCommandPoll) {
  uint16_t seq = Init();
  EXPECT_EQ(Send(Pkt(3, 0, seq, "getvar:version")), Pkt(3, 0, seq));
  EXPECT_EQ(Send(Pkt(3, 0, seq + 1)), Pkt(3, 0, seq + 1, "OKAY0.4"));
  // Repeated seq: the saved answer again; a stale one: nothing.
  EXPECT_EQ(Send(Pkt(3, 0, seq + 1)), Pkt(3, 0, seq + 1, "OKAY0.4"));
}

TEST_F(UdpTest, DownloadAcrossContinuationPackets) {
  uint16_t s = Init();
  EXPECT_EQ(Send(Pkt(3, 1, s, "download:0000")), Pkt(3, 0, s));
  EXPECT_EQ(Send(Pkt(3, 0, s + 1, "0006")), Pkt(3, 0, s + 1));
  EXPECT_EQ(Send(Pkt(3, 0, s + 2)), Pkt(3, 0, s + 2, "DATA00000006"));
  EXPECT_EQ(Send(Pkt(3, 1, s + 3, "abc")), Pkt(3, 0, s + 3));
  EXPECT_EQ(Send(Pkt(3, 0, s + 4, "def")), Pkt(3, 0, s + 4));
  EXPECT_EQ(Send(Pkt(3, 0, s + 5)), Pkt(3, 0, s + 5, "OKAY"));
  EXPECT_EQ(Send(Pkt(3, 0, s + 6, "flash:misc")), Pkt(3, 0, s + 6));
  EXPECT_EQ(Send(Pkt(3, 0, s + 7)), Pkt(3, 0, s + 7, "OKAY"));
  EXPECT_EQ(std::string(mem_.disk().begin(), mem_.disk().begin() + 6), "abcdef");
}

TEST_F(UdpTest, MalformedPackets) {
  EXPECT_EQ(Send("\x03\x00"), "");  // no seq to answer
  EXPECT_EQ(Send(Pkt(7, 0, 5))[0], 0);
  EXPECT_EQ(Send(Pkt(3, 0, 5, "getvar:x")), Pkt(0, 0, 5, "no session: send init first"));
  EXPECT_EQ(Send(Pkt(2, 0, 1, std::string("\x00\x01\x01\x00", 4))), Pkt(0, 0, 1, "init: packet size 256 < 512"));
  EXPECT_EQ(Send(Pkt(2, 0, 1, std::string("\x00\x00\x20\x00", 4))), Pkt(0, 0, 1, "init: protocol version 0"));
  EXPECT_EQ(Send(Pkt(2, 0, 1, "x")), Pkt(0, 0, 1, "init: 1 payload bytes, need 4"));
  uint16_t seq = Init();
  EXPECT_EQ(Send(Pkt(3, 0, seq + 5, "getvar:version")), "");  // future seq ignored
  EXPECT_EQ(Send(Pkt(3, 0, seq, std::string(70, 'x'))), Pkt(3, 0, seq));
  EXPECT_EQ(Send(Pkt(3, 0, seq + 1)), Pkt(3, 0, seq + 1, "FAILcommand of 70 bytes, max 64"));
}

TEST_F(UdpTest, SecondClientRefusedMidCommandThenTakesOverWhenIdle) {
  uint16_t seq = Init(1000);
  EXPECT_EQ(Send(Pkt(3, 0, seq, "download:00000010"), 1000), Pkt(3, 0, seq));
  EXPECT_EQ(Send(Pkt(3, 0, seq + 1), 1000), Pkt(3, 0, seq + 1, "DATA00000010"));
  // Client 1 is mid-download and was just heard: client 2 is refused.
  std::string r = Send(Pkt(2, 0, seq + 2, std::string("\x00\x01\x20\x00", 4)), 2000);
  ASSERT_FALSE(r.empty());
  EXPECT_EQ(r[0], 0);
  EXPECT_NE(r.find("busy: another session is active"), std::string::npos);
  // Client 1 finishes; idle at a command boundary, client 2 may take over.
  EXPECT_EQ(Send(Pkt(3, 0, seq + 2, std::string(16, 'z')), 1000), Pkt(3, 0, seq + 2));
  EXPECT_EQ(Send(Pkt(3, 0, seq + 3), 1000), Pkt(3, 0, seq + 3, "OKAY"));
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  uint16_t s2 = Init(2000);
  EXPECT_EQ(Send(Pkt(3, 0, s2, "getvar:product"), 2000), Pkt(3, 0, s2));
  EXPECT_EQ(Send(Pkt(3, 0, s2 + 1), 2000), Pkt(3, 0, s2 + 1, "OKAYflashpipe"));
}

// A client killed mid-download goes silent: after gone_after another UDP
// client takes over, and the device yields to a TCP one; nothing was written.
TEST_F(UdpTest, ClientSilentMidCommandIsGone) {
  UdpOptions o;
  o.keepalive = std::chrono::milliseconds(100000);
  o.gone_after = std::chrono::milliseconds(300);
  MakeServer(o);
  uint16_t seq = Init(1000);
  EXPECT_EQ(Send(Pkt(3, 0, seq, "download:00000010"), 1000), Pkt(3, 0, seq));
  EXPECT_EQ(Send(Pkt(3, 0, seq + 1), 1000), Pkt(3, 0, seq + 1, "DATA00000010"));
  EXPECT_EQ(Send(Pkt(3, 1, seq + 2, "abc"), 1000), Pkt(3, 0, seq + 2));  // then killed
  std::this_thread::sleep_for(std::chrono::milliseconds(400));
  EXPECT_TRUE(device_->AskToYield());
  uint16_t s2 = Init(2000);
  EXPECT_EQ(Send(Pkt(3, 0, s2, "getvar:product"), 2000), Pkt(3, 0, s2));
  EXPECT_EQ(Send(Pkt(3, 0, s2 + 1), 2000), Pkt(3, 0, s2 + 1, "OKAYflashpipe"));
  EXPECT_EQ(Send(Pkt(3, 0, s2 + 2, "flash:misc"), 2000), Pkt(3, 0, s2 + 2));
  EXPECT_EQ(Send(Pkt(3, 0, s2 + 3), 2000), Pkt(3, 0, s2 + 3, "FAILno image downloaded"));
  EXPECT_EQ(mem_.bytes_written(), 0u);
}

// A download belongs to the session that made it: a client taking over
// between commands cannot flash what the previous one sent.
TEST_F(UdpTest, ClientTakingOverStartsWithoutTheDownload) {
  uint16_t seq = Init(1000);
  EXPECT_EQ(Send(Pkt(3, 0, seq, "download:00000010"), 1000), Pkt(3, 0, seq));
  EXPECT_EQ(Send(Pkt(3, 0, seq + 1), 1000), Pkt(3, 0, seq + 1, "DATA00000010"));
  EXPECT_EQ(Send(Pkt(3, 0, seq + 2, std::string(16, 'z')), 1000), Pkt(3, 0, seq + 2));
  EXPECT_EQ(Send(Pkt(3, 0, seq + 3), 1000), Pkt(3, 0, seq + 3, "OKAY"));
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  uint16_t s2 = Init(2000);
  EXPECT_EQ(Send(Pkt(3, 0, s2, "flash:misc"), 2000), Pkt(3, 0, s2));
  EXPECT_EQ(Send(Pkt(3, 0, s2 + 1), 2000), Pkt(3, 0, s2 + 1, "FAILno image downloaded"));
  EXPECT_EQ(mem_.bytes_written(), 0u);
}

// A session ended by a reboot stays ended: the client's next command gets
// an error packet, not a new session.
TEST_F(UdpTest, SessionEndedByRebootIsNotResumed) {
  uint16_t seq = Init(1000);
  EXPECT_EQ(Send(Pkt(3, 0, seq, "reboot"), 1000), Pkt(3, 0, seq));
  EXPECT_EQ(Send(Pkt(3, 0, seq + 1), 1000), Pkt(3, 0, seq + 1, "OKAY"));
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  std::string r = Send(Pkt(3, 0, seq + 2, "getvar:version"), 1000);
  ASSERT_FALSE(r.empty());
  EXPECT_EQ(r, Pkt(0, 0, seq + 2, "session ended: send init to start a new one"));
}

// A download that stops arriving FAILs (the client polls for it) and ends
// the session.
TEST_F(UdpTest, StalledDownloadFailsAtTheRateFloor) {
  DeviceConfig config;
  config.max_download_size = 1 << 16;
  config.limits = {.min_download_rate = 64 << 10, .rate_window = std::chrono::milliseconds(100)};
  server_.reset();
  device_ = std::make_unique<FastbootDevice>(config, Storage::ForQueue(&mem_, {.size = 1 << 20, .direct = false},
                                                                       {{"misc", 0, 0, 1 << 20}}),
                                             PersistentState::InMemory());
  UdpOptions o;
  o.keepalive = std::chrono::milliseconds(100000);
  MakeServer(o);
  uint16_t seq = Init(1000);
  EXPECT_EQ(Send(Pkt(3, 0, seq, "download:00001000"), 1000), Pkt(3, 0, seq));
  EXPECT_EQ(Send(Pkt(3, 0, seq + 1), 1000), Pkt(3, 0, seq + 1, "DATA00001000"));
  EXPECT_EQ(Send(Pkt(3, 1, seq + 2, "abc"), 1000), Pkt(3, 0, seq + 2));
  std::this_thread::sleep_for(std::chrono::milliseconds(400));
  std::string said;  // the long reason comes as INFO lines, then the FAIL
  uint16_t s = seq + 3;
  for (std::string r; (r = Send(Pkt(3, 0, s), 1000)).substr(4, 4) == "INFO"; ++s) said += r.substr(8);
  EXPECT_EQ(said.rfind("download at byte 3 of 4096: download too slow", 0), 0u) << said;
  EXPECT_EQ(Send(Pkt(3, 0, s), 1000).substr(0, 8), Pkt(3, 0, s, "FAIL"));
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(Send(Pkt(3, 0, s + 1, "flash:misc"), 1000),
            Pkt(0, 0, s + 1, "session ended: send init to start a new one"));
}

// A TCP client asks the device to yield: a UDP session in the middle of a
// command refuses, one between commands gives way (no 3 s wait for it to go
// stale).
TEST_F(UdpTest, IdleSessionYieldsToAnotherTransport) {
  uint16_t seq = Init(1000);
  EXPECT_EQ(Send(Pkt(3, 0, seq, "download:00000010"), 1000), Pkt(3, 0, seq));
  EXPECT_EQ(Send(Pkt(3, 0, seq + 1), 1000), Pkt(3, 0, seq + 1, "DATA00000010"));
  EXPECT_FALSE(device_->TryAcquire("tcp test"));
  EXPECT_FALSE(device_->AskToYield());  // mid-download
  EXPECT_EQ(Send(Pkt(3, 0, seq + 2, std::string(16, 'z')), 1000), Pkt(3, 0, seq + 2));
  EXPECT_EQ(Send(Pkt(3, 0, seq + 3), 1000), Pkt(3, 0, seq + 3, "OKAY"));
  bool acquired = false;
  EXPECT_TRUE(device_->AskToYield());
  for (int i = 0; i < 100 && !(acquired = device_->TryAcquire("tcp test")); ++i) {  // < stale_after
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_TRUE(acquired) << "owner: " << device_->owner();
  if (acquired) device_->Release();
}

}  // namespace
}  // namespace flashpipe::fastboot
