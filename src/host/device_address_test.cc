// Device addresses as -s takes them, the USB device they pick, and the USB
// transport's framing over a fake handle: a command is one transfer, a data
// phase is cut at 1 MiB, a device that takes nothing is a timeout.
#include "host/device_address.h"

#include <gtest/gtest.h>

#include "host/usb_transport.h"

namespace flashpipe::host {
namespace {

using namespace std::chrono_literals;

TEST(DeviceAddressTest, NetworkAddressesWithAndWithoutPort) {
  auto tcp = ParseDeviceAddress("tcp:127.0.0.1:1234");
  ASSERT_TRUE(tcp.ok()) << tcp.status().ToString();
  EXPECT_EQ(tcp->via, DeviceAddress::Via::kTcp);
  EXPECT_EQ(tcp->net.host, "127.0.0.1");
  EXPECT_EQ(tcp->net.port, 1234);
  auto udp = ParseDeviceAddress("udp:localhost");
  ASSERT_TRUE(udp.ok()) << udp.status().ToString();
  EXPECT_EQ(udp->via, DeviceAddress::Via::kUdp);
  EXPECT_EQ(udp->net.host, "localhost");
  EXPECT_EQ(udp->net.port, 5554);
}

TEST(DeviceAddressTest, BadPortIsAnErrorNamingTheAddress) {
  auto a = ParseDeviceAddress("tcp:127.0.0.1:99999");
  ASSERT_FALSE(a.ok());
  EXPECT_NE(a.status().message().find("tcp:127.0.0.1:99999"), std::string::npos) << a.status().ToString();
}

TEST(DeviceAddressTest, AnythingElseIsUsbBySerialOrPath) {
  auto a = ParseDeviceAddress("0123ABCD");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->via, DeviceAddress::Via::kUsb);
  UsbDeviceInfo d{.path = "1-1.2", .serial = "0123ABCD"};
  EXPECT_TRUE(UsbMatches(d, "0123ABCD"));
  EXPECT_TRUE(UsbMatches(d, "usb:1-1.2"));
  EXPECT_TRUE(UsbMatches(d, ""));
  EXPECT_FALSE(UsbMatches(d, "usb:1-1"));
  EXPECT_FALSE(UsbMatches(d, "0123ABC"));
}

// Records the transfers; takes at most `take` bytes per OUT transfer.
class FakeHandle : public UsbHandle {
 public:
  std::vector<size_t>* outs;
  size_t take = SIZE_MAX;
  std::string response = "OKAY";
  Result<size_t> Out(std::span<const uint8_t> data, std::chrono::milliseconds) override {
    size_t n = std::min(data.size(), take);
    outs->push_back(n);
    return n;
  }
  Result<size_t> In(std::span<uint8_t> buf, std::chrono::milliseconds) override {
    size_t n = std::min(buf.size(), response.size());
    std::copy_n(response.begin(), n, buf.begin());
    return n;
  }
};

TEST(UsbTransportTest, DataCutAtOneMiBAndShortTransfersResumed) {
  std::vector<size_t> outs;
  auto h = std::make_unique<FakeHandle>();
  h->outs = &outs;
  UsbTransport t(std::move(h), "x", TransportOptions{.idle = 100ms});
  ASSERT_TRUE(t.Send("getvar:product").ok());
  EXPECT_EQ(outs, (std::vector<size_t>{14}));
  outs.clear();
  std::vector<uint8_t> big((5 << 19) + 3);  // 2.5 MiB + 3
  std::array<std::span<const uint8_t>, 1> pieces{std::span<const uint8_t>(big)};
  ASSERT_TRUE(t.SendData(pieces).ok());
  EXPECT_EQ(outs, (std::vector<size_t>{1 << 20, 1 << 20, (1 << 19) + 3}));
  auto r = t.Receive();
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r, "OKAY");

  // A handle that takes 300000 bytes a transfer: the rest is sent again.
  std::vector<size_t> short_outs;
  auto s = std::make_unique<FakeHandle>();
  s->outs = &short_outs;
  s->take = 300000;
  UsbTransport u(std::move(s), "y", TransportOptions{.idle = 100ms});
  std::vector<uint8_t> small(700000);
  std::array<std::span<const uint8_t>, 1> one{std::span<const uint8_t>(small)};
  ASSERT_TRUE(u.SendData(one).ok());
  EXPECT_EQ(short_outs, (std::vector<size_t>{300000, 300000, 100000}));
}

TEST(UsbTransportTest, DeviceThatTakesNothingIsATimeout) {
  std::vector<size_t> outs;
  auto h = std::make_unique<FakeHandle>();
  h->outs = &outs;
  h->take = 0;
  UsbTransport t(std::move(h), "x", TransportOptions{.idle = 100ms});
  Status st = t.Send("download:00001000");
  EXPECT_EQ(st.code(), Code::kTimedOut) << st.ToString();
}

}  // namespace
}  // namespace flashpipe::host
