// The host's USB transport over a scripted handle (testing/fake_usb_handle.h):
// a command is one transfer sent only after the data before it landed, a
// data phase goes through the queue (several transfers in flight, returned
// before they land), a failed data phase fails what follows, and a
// fetch:/upload data phase is read exactly.
#include "host/usb_transport.h"

#include <gtest/gtest.h>

#include "testing/fake_usb_handle.h"

namespace flashpipe::host {
namespace {

using namespace std::chrono_literals;
using testing::FakeUsbHandle;

constexpr UsbQueueOptions kQueue{.transfer_bytes = 1 << 20, .depth = 4, .idle = 100ms};

TEST(UsbTransportTest, DataCutIntoQueuedTransfersAndDrainedBeforeTheAnswer) {
  FakeUsbHandle::Record rec;
  auto h = std::make_unique<FakeUsbHandle>(&rec);
  UsbTransport t(std::move(h), "x", TransportOptions{.idle = 100ms}, kQueue);
  ASSERT_TRUE(t.Send("download:00280003").ok());
  EXPECT_EQ(rec.commands, (std::vector<std::string>{"download:00280003"}));
  std::vector<uint8_t> big((5 << 19) + 3);  // 2.5 MiB + 3
  for (size_t i = 0; i < big.size(); ++i) big[i] = static_cast<uint8_t>(i * 7);
  std::array<std::span<const uint8_t>, 1> pieces{std::span<const uint8_t>(big)};
  ASSERT_TRUE(t.SendData(pieces).ok());
  EXPECT_EQ(rec.out_transfers, (std::vector<size_t>{1 << 20, 1 << 20})) << "the partial last transfer waits";
  auto r = t.Receive();
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(*r, "OKAY");
  EXPECT_EQ(rec.out_transfers, (std::vector<size_t>{1 << 20, 1 << 20, (1 << 19) + 3}));
  EXPECT_EQ(rec.out_bytes, big);
  EXPECT_EQ(rec.in_flight, 0u) << "Receive read the answer with data still in flight";
}

TEST(UsbTransportTest, ADataPhaseThatFailedFailsTheNextCommand) {
  FakeUsbHandle::Record rec;
  auto h = std::make_unique<FakeUsbHandle>(&rec);
  h->out_stall_at = 0;
  UsbTransport t(std::move(h), "x", TransportOptions{.idle = 100ms}, kQueue);
  std::vector<uint8_t> data(100);
  std::array<std::span<const uint8_t>, 1> pieces{std::span<const uint8_t>(data)};
  ASSERT_TRUE(t.SendData(pieces).ok());  // staged
  EXPECT_EQ(t.Receive().status().code(), Code::kTimedOut);
  EXPECT_EQ(rec.in_flight, 0u);
  EXPECT_EQ(t.Send("getvar:product").code(), Code::kTimedOut);
  EXPECT_TRUE(rec.commands.empty()) << "a command went after a data phase with a hole";
}

TEST(UsbTransportTest, ReceiveDataReadsTheDataPhaseAndLeavesTheOkay) {
  FakeUsbHandle::Record rec;
  auto h = std::make_unique<FakeUsbHandle>(&rec);
  std::vector<uint8_t> data(3 << 20);
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<uint8_t>(i * 13 + 1);
  h->DeviceWrites({data, {'O', 'K', 'A', 'Y'}});
  FakeUsbHandle* fake = h.get();
  UsbTransport t(std::move(h), "x", TransportOptions{.idle = 100ms}, kQueue);
  std::vector<uint8_t> got(data.size());
  ASSERT_TRUE(t.ReceiveData(got).ok());
  EXPECT_EQ(got, data);
  EXPECT_EQ(fake->unread(), 4u);
}

TEST(UsbTransportTest, TransportsWithoutReadBackSayUnsupported) {
  struct Minimal : Transport {
    Status Send(std::string_view) override { return Status::Ok(); }
    Result<std::string> Receive() override { return std::string("OKAY"); }
    Status SendData(std::span<const std::span<const uint8_t>>) override { return Status::Ok(); }
    std::string name() const override { return "m"; }
  } m;
  std::vector<uint8_t> buf(4);
  EXPECT_EQ(m.ReceiveData(buf).code(), Code::kUnsupported);
}

}  // namespace
}  // namespace flashpipe::host
