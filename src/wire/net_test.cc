// Addresses both ways and a loopback connection, TCP and UDP.
#include "wire/net.h"

#include <gtest/gtest.h>
#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <thread>
#include <vector>

#include "testing/temp_dir.h"

namespace flashpipe::wire {
namespace {

using std::chrono::milliseconds;

TEST(NetTest, SplitHostPortTakesNamesAddressesAndDefaults) {
  auto hp = SplitHostPort("board.lab", 5554);
  ASSERT_TRUE(hp.ok());
  EXPECT_EQ(hp->host, "board.lab");
  EXPECT_EQ(hp->port, 5554);
  hp = SplitHostPort("10.0.0.2:5555", 5554);
  EXPECT_EQ(hp->host, "10.0.0.2");
  EXPECT_EQ(hp->port, 5555);
  hp = SplitHostPort("[::1]:7", 5554);
  EXPECT_EQ(hp->host, "::1");
  EXPECT_EQ(hp->port, 7);
  hp = SplitHostPort("::1", 5554);
  EXPECT_EQ(hp->host, "::1");
  EXPECT_EQ(hp->port, 5554);
  EXPECT_EQ(SplitHostPort("h:0", 1).status().message(), "'h:0': bad port '0'");
  EXPECT_EQ(SplitHostPort("h:", 1).status().message(), "'h:': bad port ''");
  EXPECT_EQ(SplitHostPort("h:x1", 1).status().message(), "'h:x1': bad port 'x1'");
  EXPECT_EQ(SplitHostPort(":5", 1).status().message(), "':5': no host");
  EXPECT_FALSE(SplitHostPort("[::1", 1).ok());
  EXPECT_FALSE(SplitHostPort("h:70000", 1).ok());
}

TEST(NetTest, ConnectTcpAndUdpOverLoopback) {
  auto listener = BindSocket("127.0.0.1:0", SOCK_STREAM);
  ASSERT_TRUE(listener.ok());
  auto fd = ConnectSocket({"127.0.0.1", LocalPort(listener->get())}, SOCK_STREAM, milliseconds(2000));
  ASSERT_TRUE(fd.ok()) << fd.status().ToString();
  UniqueFd server(::accept(listener->get(), nullptr, nullptr));
  const uint8_t hello[] = {'h', 'i'};
  ASSERT_TRUE(SendAll(fd->get(), hello).ok());
  uint8_t got[2];
  ASSERT_TRUE(RecvExact(server.get(), got, milliseconds(2000), false).ok());
  EXPECT_EQ(got[1], 'i');

  auto udp = BindSocket("127.0.0.1:0", SOCK_DGRAM);
  ASSERT_TRUE(udp.ok());
  auto ufd = ConnectSocket({"localhost", LocalPort(udp->get())}, SOCK_DGRAM, milliseconds(2000));
  ASSERT_TRUE(ufd.ok()) << ufd.status().ToString();
  ASSERT_TRUE(SendAll(ufd->get(), hello).ok());
  auto n = RecvSome(udp->get(), got, milliseconds(2000));
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(*n, 2u);
}

TEST(NetTest, ConnectToAClosedPortFailsAndNamesIt) {
  auto listener = BindSocket("127.0.0.1:0", SOCK_STREAM);
  uint16_t port = LocalPort(listener->get());
  listener->Reset();
  auto fd = ConnectSocket({"127.0.0.1", port}, SOCK_STREAM, milliseconds(2000));
  ASSERT_FALSE(fd.ok());
  EXPECT_EQ(fd.status().sys_errno(), ECONNREFUSED);
  EXPECT_NE(fd.status().message().find(fmt::format("127.0.0.1:{}", port)), std::string::npos);
  EXPECT_EQ(ConnectSocket({"no-such-host.invalid", 1}, SOCK_STREAM, milliseconds(500)).status().code(),
            Code::kNotFound);
}

// A file range goes to the socket as it is in the file; a file that ends
// before the range is kCorrupt naming where; a peer that went away is an
// error, not a SIGPIPE that ends the process.
TEST(NetTest, SendFileRangeSendsTheFileBytesAndFailsCleanly) {
  testing::TempDir dir;
  std::vector<uint8_t> file(3 << 20);
  for (size_t i = 0; i < file.size(); ++i) file[i] = static_cast<uint8_t>(i * 7 + i / 4096);
  testing::WriteFile(dir / "f", file);
  UniqueFd f(::open((dir / "f").c_str(), O_RDONLY | O_CLOEXEC));
  int sv[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
  UniqueFd a(sv[0]), b(sv[1]);
  const uint64_t from = 4097, n = file.size() - from - 3;
  std::vector<uint8_t> got(n);
  std::thread reader([&] { ASSERT_TRUE(RecvExact(b.get(), got, milliseconds(5000), false).ok()); });
  ASSERT_TRUE(SendFileRange(a.get(), f.get(), from, n).ok());
  reader.join();
  EXPECT_TRUE(std::equal(got.begin(), got.end(), file.begin() + from));
  Status short_file = SendFileRange(a.get(), f.get(), file.size() - 10, 20);
  EXPECT_EQ(short_file.code(), Code::kCorrupt);
  EXPECT_NE(short_file.message().find(std::to_string(file.size())), std::string::npos) << short_file.ToString();
  b.Reset();
  EXPECT_FALSE(SendFileRange(a.get(), f.get(), 0, file.size()).ok());
}

TEST(NetTest, SendGatherSendsEveryPieceInOrderAndTimesOut) {
  int sv[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
  UniqueFd a(sv[0]), b(sv[1]);
  std::vector<uint8_t> big(3 << 20, 7);
  const uint8_t head[] = {1, 2, 3};
  std::vector<std::span<const uint8_t>> pieces{head, {}, big, head};
  std::vector<uint8_t> got(big.size() + 6);
  std::thread reader([&] { ASSERT_TRUE(RecvExact(b.get(), got, milliseconds(5000), false).ok()); });
  ASSERT_TRUE(SendGather(a.get(), pieces).ok());
  reader.join();
  EXPECT_EQ(got[0], 1);
  EXPECT_EQ(got[3], 7);
  EXPECT_EQ(got[got.size() - 1], 3);
  timeval t{0, 100000};
  ::setsockopt(a.get(), SOL_SOCKET, SO_SNDTIMEO, &t, sizeof t);
  std::vector<std::span<const uint8_t>> more{big, big, big};
  EXPECT_EQ(SendGather(a.get(), more).code(), Code::kTimedOut);  // nobody reads
}

}  // namespace
}  // namespace flashpipe::wire
