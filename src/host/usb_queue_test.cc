// The USB data-phase queues over a scripted handle (testing/fake_usb_handle.h):
// the bytes go in order with `depth` transfers in flight, a failure or a
// silent device anywhere in the ring leaves no transfer outstanding, and a
// read never asks for more than is due, also after short transfers.
#include "host/usb_queue.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <array>
#include <cstdlib>
#include <numeric>

#include "testing/fake_usb_handle.h"

namespace flashpipe::host {
namespace {

using namespace std::chrono_literals;
using testing::FakeUsbHandle;

std::vector<uint8_t> Pattern(size_t n, uint32_t seed = 1) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i) {
    seed = seed * 1103515245 + 12345;
    v[i] = static_cast<uint8_t>(seed >> 16);
  }
  return v;
}

constexpr UsbQueueOptions kSmall{.transfer_bytes = 4096, .depth = 3, .idle = 2000ms};

// Writes `data` in the uneven calls a part writer makes: headers of 28
// and 12 bytes between payloads of various sizes.
Status WriteUnevenly(UsbOutQueue& q, std::span<const uint8_t> data) {
  const size_t sizes[] = {28, 12, 10000, 12, 1, 4096, 12, 6000};
  for (size_t i = 0; !data.empty(); ++i) {
    auto p = data.first(std::min(data.size(), sizes[i % std::size(sizes)]));
    std::array<std::span<const uint8_t>, 1> one{p};
    FP_RETURN_IF_ERROR(q.Write(one));
    data = data.subspan(p.size());
  }
  return Status::Ok();
}

TEST(UsbOutQueueTest, BytesGoInOrderWithDepthTransfersInFlight) {
  FakeUsbHandle::Record rec;
  FakeUsbHandle h(&rec);
  auto data = Pattern(50000);
  {
    UsbOutQueue q(h, kSmall);
    ASSERT_TRUE(WriteUnevenly(q, data).ok());
    EXPECT_GT(q.in_flight(), 0u) << "Write waited for its transfers";
    ASSERT_TRUE(q.Drain().ok());
    EXPECT_EQ(q.in_flight(), 0u);
  }
  EXPECT_EQ(rec.out_bytes, data);
  EXPECT_EQ(rec.max_in_flight, 3u);
  ASSERT_EQ(rec.out_transfers.size(), 13u);  // 12 whole transfers and the rest
  for (size_t i = 0; i + 1 < rec.out_transfers.size(); ++i) EXPECT_EQ(rec.out_transfers[i], 4096u) << i;
  EXPECT_EQ(rec.out_transfers.back(), 50000u - 12 * 4096);
  EXPECT_FALSE(rec.contract_broken);
}

TEST(UsbOutQueueTest, AFailureInTheMiddleOfTheRingLeavesNoTransferOutstanding) {
  FakeUsbHandle::Record rec;
  FakeUsbHandle h(&rec);
  h.fail_out_at = 4;
  auto data = Pattern(50000);
  UsbOutQueue q(h, kSmall);
  Status st = WriteUnevenly(q, data);
  EXPECT_EQ(st.code(), Code::kCancelled) << st.ToString();
  EXPECT_NE(st.message().find("went away"), std::string::npos) << st.ToString();
  EXPECT_EQ(rec.in_flight, 0u);
  EXPECT_GT(rec.cancels, 0u);
  EXPECT_EQ(rec.out_bytes.size(), 4u * 4096) << "only the transfers before the failure landed";
  // The stream has a hole: nothing more goes out.
  size_t sent = rec.out_transfers.size();
  std::array<std::span<const uint8_t>, 1> more{std::span<const uint8_t>(data).first(100)};
  EXPECT_EQ(q.Write(more).code(), Code::kCancelled);
  EXPECT_EQ(q.Drain().code(), Code::kCancelled);
  EXPECT_EQ(rec.out_transfers.size(), sent);
  EXPECT_FALSE(rec.contract_broken);
}

TEST(UsbOutQueueTest, ADeviceThatTakesNothingIsATimeoutNamingTheSeconds) {
  FakeUsbHandle::Record rec;
  FakeUsbHandle h(&rec);
  h.out_stall_at = 2;
  auto data = Pattern(50000);
  UsbOutQueue q(h, kSmall);
  Status st = WriteUnevenly(q, data);
  EXPECT_EQ(st.code(), Code::kTimedOut) << st.ToString();
  EXPECT_NE(st.message().find("took no data for 2 s"), std::string::npos) << st.ToString();
  EXPECT_EQ(rec.in_flight, 0u);
  EXPECT_EQ(rec.cancels, 3u);  // the whole ring
  EXPECT_FALSE(rec.contract_broken);
}

TEST(UsbOutQueueTest, ATransferTheDeviceTookPartlyIsAnError) {
  FakeUsbHandle::Record rec;
  FakeUsbHandle h(&rec);
  h.short_out_at = 1;
  auto data = Pattern(20000);
  UsbOutQueue q(h, kSmall);
  Status st = WriteUnevenly(q, data);
  if (st.ok()) st = q.Drain();
  EXPECT_EQ(st.code(), Code::kIoError) << st.ToString();
  EXPECT_NE(st.message().find("took 2048 of 4096 bytes"), std::string::npos) << st.ToString();
  EXPECT_EQ(rec.in_flight, 0u);
}

TEST(UsbOutQueueTest, KernelMemoryUsedUpWaitsForOneOfOurOwn) {
  FakeUsbHandle::Record rec;
  FakeUsbHandle h(&rec);
  h.busy_above = 1;
  auto data = Pattern(30000);
  UsbOutQueue q(h, kSmall);
  ASSERT_TRUE(WriteUnevenly(q, data).ok());
  ASSERT_TRUE(q.Drain().ok());
  EXPECT_EQ(rec.out_bytes, data);
  EXPECT_EQ(rec.max_in_flight, 1u);
}

TEST(UsbOutQueueTest, DestroyedWithTransfersInFlightReapsThem) {
  FakeUsbHandle::Record rec;
  FakeUsbHandle h(&rec);
  h.out_stall_at = 0;
  {
    UsbOutQueue q(h, kSmall);
    auto data = Pattern(3 * 4096);
    std::array<std::span<const uint8_t>, 1> one{std::span<const uint8_t>(data)};
    ASSERT_TRUE(q.Write(one).ok());
    EXPECT_EQ(q.in_flight(), 3u);
  }
  EXPECT_EQ(rec.in_flight, 0u);
  EXPECT_FALSE(rec.contract_broken);
}

TEST(UsbOutQueueTest, FileRangesAreReadIntoTheTransfersAndAShortFileIsTheImagesFault) {
  FakeUsbHandle::Record rec;
  FakeUsbHandle h(&rec);
  auto data = Pattern(20000);
  char path[] = "/tmp/usb_queue_test.XXXXXX";
  int fd = ::mkstemp(path);
  ASSERT_GE(fd, 0);
  ::unlink(path);
  ASSERT_EQ(::write(fd, data.data(), data.size()), static_cast<ssize_t>(data.size()));
  UsbOutQueue q(h, kSmall);
  std::array<uint8_t, 28> header{};
  std::array<std::span<const uint8_t>, 1> head{std::span<const uint8_t>(header)};
  ASSERT_TRUE(q.Write(head).ok());
  ASSERT_TRUE(q.WriteFile(fd, 100, 15000).ok());
  ASSERT_TRUE(q.Drain().ok());
  std::vector<uint8_t> want(header.begin(), header.end());
  want.insert(want.end(), data.begin() + 100, data.begin() + 15100);
  EXPECT_EQ(rec.out_bytes, want);
  Status st = q.WriteFile(fd, 19000, 5000);  // past the end of the file
  EXPECT_EQ(st.code(), Code::kCorrupt) << st.ToString();
  EXPECT_EQ(q.Drain().code(), Code::kCorrupt) << "the stream has a hole";
  EXPECT_EQ(rec.in_flight, 0u);
  ::close(fd);
}

// ---- IN ----

// The device's data phase as writes of `sizes`, then its OKAY.
std::vector<uint8_t> DeviceSends(FakeUsbHandle& h, const std::vector<size_t>& sizes) {
  size_t total = std::accumulate(sizes.begin(), sizes.end(), size_t{0});
  auto data = Pattern(total, 7);
  std::vector<std::vector<uint8_t>> writes;
  size_t at = 0;
  for (size_t s : sizes) {
    writes.emplace_back(data.begin() + at, data.begin() + at + s);
    at += s;
  }
  writes.push_back({'O', 'K', 'A', 'Y'});
  h.DeviceWrites(writes);
  return data;
}

TEST(UsbReadExactTest, WholePacketWritesFillTheBufferInOrderAndLeaveTheOkay) {
  FakeUsbHandle::Record rec;
  FakeUsbHandle h(&rec);
  auto data = DeviceSends(h, {16384, 16384, 1000});  // whole packets, then a short end
  std::vector<uint8_t> got(data.size());
  ASSERT_TRUE(UsbReadExact(h, got, kSmall).ok());
  EXPECT_EQ(got, data);
  EXPECT_EQ(h.unread(), 4u) << "the read took bytes past the data phase";
  EXPECT_EQ(rec.max_in_flight, 3u);
  size_t asked = std::accumulate(rec.in_transfers.begin(), rec.in_transfers.end(), size_t{0});
  EXPECT_EQ(asked, data.size()) << "asked for more than was due";
  EXPECT_EQ(rec.in_flight, 0u);
  EXPECT_FALSE(rec.contract_broken);
}

TEST(UsbReadExactTest, TransfersEndedEarlyAreMovedDownAndTheRestAskedForAgain) {
  FakeUsbHandle::Record rec;
  FakeUsbHandle h(&rec);
  // Writes that end mid-packet: each ends the host's transfer early.
  auto data = DeviceSends(h, {1000, 5000, 4096, 3, 12000, 777});
  std::vector<uint8_t> got(data.size());
  Status st = UsbReadExact(h, got, kSmall);
  ASSERT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(got, data);
  EXPECT_EQ(h.unread(), 4u) << "the read took the device's OKAY";
  EXPECT_GT(rec.cancels, 0u);
  EXPECT_EQ(rec.in_flight, 0u);
  EXPECT_FALSE(rec.contract_broken);
}

TEST(UsbReadExactTest, ADeviceGoneInTheMiddleLeavesNoTransferOutstanding) {
  FakeUsbHandle::Record rec;
  FakeUsbHandle h(&rec);
  h.fail_in_at = 2;
  auto data = DeviceSends(h, {40000});
  std::vector<uint8_t> got(data.size());
  Status st = UsbReadExact(h, got, kSmall);
  EXPECT_EQ(st.code(), Code::kCancelled) << st.ToString();
  EXPECT_NE(st.message().find("reading data"), std::string::npos) << st.ToString();
  EXPECT_EQ(rec.in_flight, 0u);
  EXPECT_FALSE(rec.contract_broken);
}

TEST(UsbReadExactTest, ADeviceThatSendsTooLittleIsATimeoutNamingTheSeconds) {
  FakeUsbHandle::Record rec;
  FakeUsbHandle h(&rec);
  h.DeviceWrites({Pattern(8192)});  // whole packets, then nothing
  std::vector<uint8_t> got(20000);
  Status st = UsbReadExact(h, got, kSmall);
  EXPECT_EQ(st.code(), Code::kTimedOut) << st.ToString();
  EXPECT_NE(st.message().find("sent nothing for 2 s"), std::string::npos) << st.ToString();
  EXPECT_EQ(rec.in_flight, 0u);
  EXPECT_FALSE(rec.contract_broken);
}

TEST(UsbQueueOptionsTest, EnvironmentOverridesOnlyWhenWellFormed) {
  ::setenv("FLASHPIPE_USB_QUEUE", "256K:8", 1);
  UsbQueueOptions o = UsbQueueFromEnv(5000ms);
  EXPECT_EQ(o.transfer_bytes, 256u << 10);
  EXPECT_EQ(o.depth, 8u);
  EXPECT_EQ(o.idle, 5000ms);
  ::setenv("FLASHPIPE_USB_QUEUE", "1000:4", 1);  // not whole packets
  EXPECT_EQ(UsbQueueFromEnv(5000ms).transfer_bytes, kUsbTransferBytes);
  ::unsetenv("FLASHPIPE_USB_QUEUE");
  EXPECT_EQ(UsbQueueFromEnv(5000ms).depth, kUsbQueueDepth);
}

}  // namespace
}  // namespace flashpipe::host
