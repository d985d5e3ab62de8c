// Device addresses as -s takes them and the USB device they pick (the USB
// transport itself: usb_transport_test.cc).
#include "host/device_address.h"

#include <gtest/gtest.h>

#include "host/usb_backend.h"

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

}  // namespace
}  // namespace flashpipe::host
