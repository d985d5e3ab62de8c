// UsbServer with a fake FunctionFS (ep0 events through a pipe, a fake USB
// bus): the ep0 state machine, whole flashes, the host going away at every
// step of one, busy and yield across transports, stalls, re-enumeration.
#include "fastboot/usb_server.h"

#include <gtest/gtest.h>

#include <random>
#include <thread>

#include "fastboot/ffs_descriptors.h"
#include "testing/fake_ffs.h"
#include "testing/fastboot_fakes.h"

namespace flashpipe::fastboot {
namespace {

using namespace std::chrono_literals;
using ffs::EventType;
using testing::FakeEndpoints;
using testing::FakeEp0;
using testing::MemQueue;

constexpr uint64_t kMiB = 1 << 20;
constexpr uint8_t kGuard = 0xEE;

std::vector<uint8_t> Random(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> v(n);
  for (auto& b : v) b = static_cast<uint8_t>(rng());
  return v;
}

template <typename F>
bool Eventually(F f, std::chrono::milliseconds limit = 3000ms) {
  for (auto end = std::chrono::steady_clock::now() + limit; std::chrono::steady_clock::now() < end;) {
    if (f()) return true;
    std::this_thread::sleep_for(1ms);
  }
  return f();
}

class UsbServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    parts_ = {{"boot_a", 0, 1 * kMiB, kMiB}, {"system", 0, 3 * kMiB, 2 * kMiB}};
    for (const auto& p : parts_) mem_.Allow(p.offset, p.size);
    io::Geometry g{.size = mem_.disk().size(), .logical_block = 512, .physical_block = 4096,
                   .mem_align = 512, .offset_align = 512, .max_request = kMiB, .direct = false};
    DeviceConfig config;
    config.max_download_size = 2 * kMiB;
    device_ = std::make_unique<FastbootDevice>(config, Storage::ForQueue(&mem_, g, parts_), PersistentState::InMemory());
  }
  void TearDown() override {
    if (server_) server_->Stop();
    EXPECT_TRUE(mem_.violations().empty()) << mem_.violations()[0];
  }
  void StartServer(UsbServerOptions options = {}) {
    options.name = "usb test";
    options.transport.data_timeout = 2000ms;
    server_ = std::make_unique<UsbServer>(device_.get(), ep0_.read_fd(), ep0_.write_fd(), &fake_, options);
    server_->Start();
  }
  // A host configures the device.
  void Enable() {
    unsigned hosts = server_->stats().hosts;
    fake_.Reconnect(512);
    ep0_.Send(EventType::kBind);
    ep0_.Send(EventType::kEnable);
    ASSERT_TRUE(Eventually([&] { return server_->stats().hosts > hosts; }));
  }
  // The host goes away as the kernel shows it: requests fail, ep0 says so.
  void Unplug() {
    fake_.Disconnect();
    ep0_.Send(EventType::kDisable);
    ep0_.Send(EventType::kUnbind);
    ASSERT_TRUE(Eventually([&] { return !server_->enabled(); }));
  }
  // As the client does: one transfer, then (once it is all taken) the answer.
  std::string Command(std::string_view command) {
    fake_.HostSend(command);
    EXPECT_TRUE(Eventually([&] { return fake_.packets_pending() == 0; }));
    auto r = fake_.HostTakeUntilFinal();
    return r.empty() ? "" : r.back();
  }
  // download + flash as the client does it; the final response.
  std::string Flash(const std::string& part, const std::vector<uint8_t>& image) {
    EXPECT_EQ(Command(fmt::format("download:{:08x}", image.size())), fmt::format("DATA{:08x}", image.size()));
    for (size_t at = 0; at < image.size(); at += 16384) {
      fake_.HostSend(std::string_view(reinterpret_cast<const char*>(image.data()) + at, std::min<size_t>(16384, image.size() - at)));
    }
    EXPECT_EQ(fake_.HostTakeUntilFinal().back(), "OKAY");
    return Command("flash:" + part);
  }
  std::vector<uint8_t> Bytes(const Partition& p, size_t n) {
    return {mem_.disk().begin() + p.offset, mem_.disk().begin() + p.offset + n};
  }

  MemQueue mem_{6 * kMiB, kGuard};
  std::vector<Partition> parts_;
  std::unique_ptr<FastbootDevice> device_;
  FakeEndpoints fake_{512};
  FakeEp0 ep0_;
  std::unique_ptr<UsbServer> server_;
};

TEST_F(UsbServerTest, WritesDescriptorsThenStrings) {
  ASSERT_TRUE(WriteFunctionDescriptors(ep0_.write_fd(), "ep0").ok());
  std::vector<uint8_t> expected = ffs::FastbootDescriptors();
  std::vector<uint8_t> strings = ffs::FastbootStrings();
  expected.insert(expected.end(), strings.begin(), strings.end());
  EXPECT_EQ(ep0_.Written(), expected);
}

TEST_F(UsbServerTest, NothingIsServedBeforeEnable) {
  StartServer();
  ep0_.Send(EventType::kBind);
  fake_.HostSend("getvar:product");
  EXPECT_FALSE(fake_.HostTake(200ms).has_value());
  EXPECT_EQ(fake_.reads_queued(), 0u);
  ep0_.Send(EventType::kEnable);
  EXPECT_EQ(fake_.HostTakeUntilFinal().back(), "OKAYflashpipe");
}

TEST_F(UsbServerTest, FlashesOverUsb) {
  StartServer();
  Enable();
  EXPECT_EQ(Command("getvar:max-download-size"), "OKAY0x00200000");
  std::vector<uint8_t> image = Random(kMiB / 2 + 1000, 1);
  EXPECT_EQ(Flash("boot_a", image), "OKAY");
  EXPECT_EQ(Bytes(parts_[0], image.size()), image);
  EXPECT_EQ(mem_.disk()[parts_[0].offset - 1], kGuard);
}

// The host vanishes after each step of a flash; nothing is written unless
// the flash command itself arrived, and the next host gets a fresh session.
TEST_F(UsbServerTest, HostGoneAtEveryStepOfAFlash) {
  StartServer();
  const Partition& boot = parts_[0];
  std::vector<uint8_t> before = Bytes(boot, boot.size);
  for (int step = 0; step <= 5; ++step) {
    SCOPED_TRACE(step);
    Enable();
    std::vector<uint8_t> image = Random(kMiB / 2, 100 + step);
    if (step >= 1) EXPECT_EQ(Command("getvar:has-slot:boot_a"), "OKAYno");
    if (step >= 2) EXPECT_EQ(Command("download:00080000"), "DATA00080000");
    if (step >= 3) fake_.HostSend(std::string_view(reinterpret_cast<const char*>(image.data()), image.size() / 2));
    if (step >= 4) {
      fake_.HostSend(std::string_view(reinterpret_cast<const char*>(image.data()) + image.size() / 2, image.size() / 2));
      EXPECT_EQ(fake_.HostTakeUntilFinal().back(), "OKAY");
    }
    if (step >= 5) fake_.HostSend("flash:boot_a");  // gone before the answer
    if (step >= 5) ASSERT_TRUE(Eventually([&] { return Bytes(boot, boot.size) != before; }));
    Unplug();
    if (step < 5) {
      EXPECT_EQ(Bytes(boot, boot.size), before) << "written without a flash command";
    } else {
      EXPECT_EQ(Bytes(boot, image.size()), image) << "a flash whose host left must still finish";
      before = Bytes(boot, boot.size);
    }
    EXPECT_TRUE(Eventually([&] { return device_->owner().empty(); }));
  }
  Enable();
  std::vector<uint8_t> last = Random(kMiB, 7);
  EXPECT_EQ(Flash("boot_a", last), "OKAY");
  EXPECT_EQ(Bytes(boot, boot.size), last);
}

TEST_F(UsbServerTest, ControlRequestsAreStalledAndServingGoesOn) {
  StartServer();
  Enable();
  ep0_.Send(EventType::kSetup, {.request_type = 0xc1, .request = 1, .length = 4});  // vendor IN, interface
  ep0_.Send(EventType::kSetup, {.request_type = 0x41, .request = 2});               // vendor OUT
  ep0_.Send(EventType::kSuspend);
  ep0_.Send(EventType::kResume);
  ASSERT_TRUE(Eventually([&] { return server_->stats().stalled == 2u; }));
  EXPECT_EQ(Command("getvar:version"), "OKAY0.4");
}

TEST_F(UsbServerTest, GarbageIsAnsweredAndTheDeviceKeepsServing) {
  StartServer();
  Enable();
  EXPECT_EQ(Command("bogus"), "FAILunknown command 'bogus'");
  // Not a command: one FAIL for the whole transfer.
  EXPECT_EQ(Command(std::string(5000, '\x01')), "FAILusb: transfer of more than 512 bytes is not a command");
  EXPECT_EQ(Command("download:ffffffff"), "FAILdownload of 4294967295 bytes > max-download-size 2097152");
  EXPECT_EQ(Command(std::string(1000, 'd')).rfind("FAIL", 0), 0u);  // data after the FAIL
  EXPECT_FALSE(fake_.HostTake(100ms).has_value());  // one answer per transfer
  EXPECT_EQ(Command("getvar:version"), "OKAY0.4");
}

TEST_F(UsbServerTest, BusyWhileAnotherTransportHoldsTheDevice) {
  StartServer();
  Enable();
  ASSERT_TRUE(device_->TryAcquire("tcp 127.0.0.1:4000"));
  EXPECT_EQ(Command("getvar:product"), "FAILbusy: another session is active (tcp 127.0.0.1:4000)");
  device_->Release();
  EXPECT_EQ(Command("getvar:product"), "OKAYflashpipe");
}

TEST_F(UsbServerTest, IdleSessionGivesWayToAnotherTransport) {
  StartServer();
  Enable();
  EXPECT_EQ(Command("getvar:product"), "OKAYflashpipe");
  EXPECT_EQ(device_->owner(), "usb test");  // the session waits for the next command
  ASSERT_TRUE(Eventually([&] { return device_->AskToYield(); }));
  ASSERT_TRUE(Eventually([&] { return device_->TryAcquire("tcp 127.0.0.1:4001"); }));
  EXPECT_EQ(Command("getvar:product"), "FAILbusy: another session is active (tcp 127.0.0.1:4001)");
  device_->Release();
  EXPECT_EQ(Command("getvar:product"), "OKAYflashpipe");
}

TEST_F(UsbServerTest, RebootReenumeratesOnceTheOkayIsTaken) {
  std::atomic<int> calls{0};
  std::atomic<size_t> unsent{99};
  StartServer({.reenumerate = [&] {
    unsent = fake_.writes_queued();
    ++calls;
  }});
  Enable();
  fake_.HostSend("reboot-bootloader");
  std::this_thread::sleep_for(100ms);
  EXPECT_EQ(calls, 0);  // not before the host has its OKAY
  EXPECT_EQ(fake_.HostTakeUntilFinal().back(), "OKAY");
  ASSERT_TRUE(Eventually([&] { return calls == 1; }));
  EXPECT_EQ(unsent, 0u);
}

TEST_F(UsbServerTest, StopEndsAWaitingAndADownloadingHost) {
  StartServer();
  Enable();
  EXPECT_EQ(Command("download:00100000"), "DATA00100000");
  fake_.HostSend(std::string(4096, 'x'));
  auto start = std::chrono::steady_clock::now();
  server_->Stop();
  EXPECT_LT(std::chrono::steady_clock::now() - start, 1500ms);
  EXPECT_EQ(fake_.reads_queued(), 0u);
}

// --min-download-rate holds over USB as over TCP: a host that trickles a
// download gets a FAIL at the first judged window, not an OKAY much later.
TEST_F(UsbServerTest, SlowDownloadFailsOverUsb) {
  DeviceConfig config;
  config.max_download_size = 2 * kMiB;
  config.limits = {.min_download_rate = 1 << 20, .rate_window = 300ms};
  device_ = std::make_unique<FastbootDevice>(config, Storage::ForQueue(&mem_, io::Geometry{.size = mem_.disk().size(),
      .logical_block = 512, .physical_block = 4096, .mem_align = 512, .offset_align = 512, .max_request = kMiB,
      .direct = false}, parts_), PersistentState::InMemory());
  UsbServerOptions options;
  options.transport.read_size = 16384;
  StartServer(options);
  Enable();
  EXPECT_EQ(Command("download:00080000"), "DATA00080000");  // 512 KiB at 160 KiB/s: 3.2 s
  auto start = std::chrono::steady_clock::now();
  std::string piece(16384, 'x');
  std::vector<std::string> answers;
  for (int i = 0; i < 32 && answers.empty(); ++i) {
    fake_.HostSend(piece);
    answers = fake_.HostTakeUntilFinal(100ms);
  }
  ASSERT_FALSE(answers.empty());
  EXPECT_TRUE(answers.back().starts_with("FAILdownload at byte")) << answers.back();
  EXPECT_NE(answers.back().find("too slow"), std::string::npos) << answers.back();
  EXPECT_LT(std::chrono::steady_clock::now() - start, 2500ms);
}

}  // namespace
}  // namespace flashpipe::fastboot
