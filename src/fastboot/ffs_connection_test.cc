// FfsConnection over a fake USB bus (testing/fake_ffs.h): command and
// response framing at each speed, over-long transfers, downloads landing in
// a real Landing with several reads in flight whatever the host's transfer
// sizes, and every way a host goes away.
#include "fastboot/ffs_connection.h"

#include <gtest/gtest.h>
#include <sys/mman.h>

#include <random>
#include <set>
#include <atomic>
#include <thread>

#include "fastboot/download.h"
#include "sparse/decoder.h"
#include "testing/fake_ffs.h"
#include "testing/sparse_builder.h"
#include "wire/protocol.h"

namespace flashpipe::fastboot {
namespace {

using namespace std::chrono_literals;
using testing::FakeEndpoints;

std::vector<uint8_t> Random(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> v(n);
  for (auto& b : v) b = static_cast<uint8_t>(rng());
  return v;
}

std::string Str(const std::vector<uint8_t>& v) { return {reinterpret_cast<const char*>(v.data()), v.size()}; }

// A download buffer as the device maps it, with a Landing on it.
struct Target {
  explicit Target(uint64_t size) : capacity(Landing::CapacityFor(size)) {
    data = static_cast<uint8_t*>(::mmap(nullptr, capacity, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
    landing.Begin({data, capacity}, size);
  }
  ~Target() { ::munmap(data, capacity); }
  std::vector<uint8_t> Joined() {
    EXPECT_TRUE(landing.Finish().ok());
    std::vector<uint8_t> out;
    for (auto p : landing.pieces()) out.insert(out.end(), p.begin(), p.end());
    return out;
  }
  size_t capacity;
  uint8_t* data;
  Landing landing;
};

class FfsConnectionTest : public ::testing::Test {
 protected:
  void Make(uint32_t mps, UsbOptions options = {}) {
    fake_ = std::make_unique<FakeEndpoints>(mps);
    t_ = std::make_unique<FfsConnection>(fake_.get(), options);
    ASSERT_TRUE(t_->Start("usb test").ok());
  }
  void ExpectNothingQueued() {
    EXPECT_EQ(fake_->reads_queued(), 0u);
    EXPECT_EQ(fake_->writes_queued(), 0u);
  }

  // Receives `image` into `target` while a host thread sends it in
  // transfers of the given sizes (cycled), each once the device has a read
  // queued, as a USB host's transfer waits for one. The host's stop flag
  // belongs to this call and is set before the host starts: a flag kept
  // across calls still said "stop" from the previous download, and a host
  // that started quickly quit without sending a byte.
  Status Receive(Target& target, const std::vector<uint8_t>& image, std::vector<size_t> sizes) {
    std::atomic<bool> receiver_done{false};
    size_t sent = 0;
    std::thread host([&] {
      for (size_t i = 0; sent < image.size() && !receiver_done; ++i) {
        for (int spin = 0; fake_->reads_queued() == 0 && !receiver_done && spin < 2000; ++spin) {
          std::this_thread::sleep_for(1ms);
        }
        size_t n = std::min(sizes[i % sizes.size()], image.size() - sent);
        fake_->HostSend(std::string_view(reinterpret_cast<const char*>(image.data()) + sent, n));
        sent += n;
      }
    });
    Status st = t_->ReceiveDownload(target.landing);
    receiver_done = true;
    host.join();
    EXPECT_EQ(sent, image.size()) << "the host stopped before sending the whole image";
    return st;
  }

  std::unique_ptr<FakeEndpoints> fake_;
  std::unique_ptr<FfsConnection> t_;
};

TEST_F(FfsConnectionTest, CommandsAndResponsesAtHighSpeed) {
  Make(512);
  fake_->HostSend("getvar:version");
  EXPECT_EQ(*t_->ReadCommand(wire::kMaxCommand), "getvar:version");
  ASSERT_TRUE(t_->Send("OKAY0.4").ok());
  EXPECT_EQ(fake_->HostTakeUntilFinal(), std::vector<std::string>{"OKAY0.4"});  // no zero-length packet
  EXPECT_EQ(fake_->read_sizes(), std::vector<size_t>{512});  // one packet per command read
  ASSERT_TRUE(t_->Send(std::string(100, 'I')).ok());
  EXPECT_EQ(fake_->HostTake()->size(), wire::kMaxResponse);
}

TEST_F(FfsConnectionTest, FullSpeedCommandFillsAPacketAndFullResponsesEndWithZlp) {
  Make(64);
  std::string command = "flash:" + std::string(58, 'p');  // exactly one 64-byte packet
  fake_->HostSend(command);
  EXPECT_EQ(*t_->ReadCommand(wire::kMaxCommand), command);
  std::string response = "OKAY" + std::string(60, 'x');
  ASSERT_TRUE(t_->Send(response).ok());
  EXPECT_EQ(*fake_->HostTake(), response);
  EXPECT_EQ(*fake_->HostTake(), "");  // else the host's read waits for more
  ASSERT_TRUE(t_->Send("OKAY").ok());
  EXPECT_EQ(*fake_->HostTake(), "OKAY");
  EXPECT_FALSE(fake_->HostTake(50ms).has_value());
}

TEST_F(FfsConnectionTest, OverlongTransferIsOneFailThenCommandsGoOn) {
  Make(512);
  fake_->HostSend(std::string(1000, 'x'));  // 512 + 488
  EXPECT_EQ(t_->ReadCommand(wire::kMaxCommand).status().message(), "usb: transfer of more than 512 bytes is not a command");
  ASSERT_TRUE(t_->Send(wire::Fail("bad")).ok());
  fake_->HostSend("getvar:a");
  EXPECT_EQ(*t_->ReadCommand(wire::kMaxCommand), "getvar:a");  // the 488-byte tail was dropped
  EXPECT_EQ(fake_->HostTake(), "FAILbad");

  // Whole packets and no short one: dropped until the bus is quiet.
  fake_->HostSend(std::string(1024, 'y'));
  EXPECT_EQ(t_->ReadCommand(wire::kMaxCommand).status().code(), Code::kInvalidArgument);
  ASSERT_TRUE(t_->Send(wire::Fail("bad")).ok());
  std::thread host([&] {
    while (fake_->packets_pending() > 0) std::this_thread::sleep_for(1ms);  // the transfer is done
    EXPECT_EQ(fake_->HostTake(), "FAILbad");
    std::this_thread::sleep_for(150ms);
    fake_->HostSend("getvar:b");
  });
  EXPECT_EQ(*t_->ReadCommand(wire::kMaxCommand), "getvar:b");
  host.join();

  fake_->HostSend(std::string(100, 'z'));  // short, but not a command either
  EXPECT_EQ(t_->ReadCommand(wire::kMaxCommand).status().message(), "command of 100 bytes, max 64");
  fake_->HostSend("", true);  // a zero-length packet is no command
  fake_->HostSend("getvar:c");
  EXPECT_EQ(*t_->ReadCommand(wire::kMaxCommand), "getvar:c");
}

TEST_F(FfsConnectionTest, RawDownloadLandsInPlaceWithReadsInFlight) {
  Make(512, {.read_size = 64 << 10, .read_depth = 6});
  std::vector<uint8_t> image = Random((3 << 20) + 123, 1);
  Target target(image.size());
  Status st = Receive(target, image, {16384});  // the 29.0.6 client's transfers
  ASSERT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(target.Joined(), image);
  EXPECT_GE(fake_->max_reads_queued(), 4u);
  std::vector<size_t> sizes = fake_->read_sizes();
  for (size_t i = 0; i + 1 < sizes.size(); ++i) ASSERT_EQ(sizes[i] % 512, 0u) << "read " << i << " ends mid-packet";
  ExpectNothingQueued();
}

TEST_F(FfsConnectionTest, ShortTransfersAnywhereStillGiveTheImage) {
  Make(512, {.read_size = 16 << 10, .read_depth = 8});
  std::vector<uint8_t> image = Random((1 << 20) + 7, 2);
  Target target(image.size());
  Status st = Receive(target, image, {1, 700, 513, 40000, 511, 4096, 9999});
  ASSERT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(target.Joined(), image);
  ExpectNothingQueued();
}

TEST_F(FfsConnectionTest, SparseDownloadKeepsLargePayloadsOnPages) {
  for (uint32_t mps : {64u, 512u, 1024u}) {
    SCOPED_TRACE(mps);
    Make(mps, {.read_size = 32 << 10, .read_depth = 8});
    testing::SparseBuilder b(4096);
    b.RawBlocks(40, 1).Fill(3, 0xAABBCCDD).DontCare(2).RawBlocks(1, 2).RawBlocks(33, 3).Fill(1, 0).RawBlocks(17, 4);
    std::vector<uint8_t> simg = b.Build();
    Target target(simg.size());
    Status st = Receive(target, simg, {16384, 1024, 777});
    ASSERT_TRUE(st.ok()) << st.ToString();
    ASSERT_TRUE(target.landing.Finish().ok());
    // Decoded from the pieces: the expanded image; large payloads on pages.
    struct Sink : sparse::NullSink {
      Status OnRaw(uint64_t offset, std::span<const uint8_t> data) override {
        if (first.insert(offset / 4096 / 33).second && data.size() >= 64 * 1024) {
          aligned += reinterpret_cast<uintptr_t>(data.data()) % 4096 == 0;
          ++large;
        }
        return Status::Ok();
      }
      std::set<uint64_t> first;
      int large = 0, aligned = 0;
    } sink;
    sparse::Decoder d(&sink, {});
    for (auto piece : target.landing.pieces()) ASSERT_TRUE(d.Feed(piece).ok());
    ASSERT_TRUE(d.Finish().ok());
    EXPECT_GT(target.landing.gaps(), 0u);
    EXPECT_GE(sink.large, 2);
    EXPECT_EQ(sink.aligned, sink.large);
    ExpectNothingQueued();
  }
}

TEST_F(FfsConnectionTest, HostGoneMidDownloadLeavesNoReadQueued) {
  Make(512, {.read_size = 16 << 10, .read_depth = 8});
  Target target(1 << 20);
  std::thread host([&] {
    fake_->HostSend(std::string(600 * 512, 'a'));  // whole packets: the reads wait for more
    while (fake_->packets_pending() > 0 || fake_->reads_queued() < 8) std::this_thread::sleep_for(1ms);
    fake_->Disconnect();
  });
  Status st = t_->ReceiveDownload(target.landing);
  host.join();
  EXPECT_EQ(st.code(), Code::kCancelled);
  EXPECT_EQ(st.message().rfind("usb: host gone", 0), 0u) << st.message();
  ExpectNothingQueued();
  EXPECT_TRUE(t_->gone());
}

TEST_F(FfsConnectionTest, SilentHostMidDownloadTimesOutAndReadsAreCancelled) {
  Make(512, {.read_size = 16 << 10, .read_depth = 8, .data_timeout = 200ms});
  Target target(1 << 20);
  fake_->HostSend(std::string(16384, 'a'));
  Status st = t_->ReceiveDownload(target.landing);
  EXPECT_EQ(st.message(), "usb: no data from the host for 200 ms");
  EXPECT_GT(fake_->cancels(), 0u);
  ExpectNothingQueued();
  // The next host's command goes to a fresh command read.
  fake_->HostSend("getvar:product");
  EXPECT_EQ(*t_->ReadCommand(wire::kMaxCommand), "getvar:product");
}

TEST_F(FfsConnectionTest, MoreDataThanAnnouncedFailsTheDownloadNotTheLink) {
  Make(512);
  Target target(1000);
  fake_->HostSend(std::string(1100, 'd'));  // packets 512, 512 (only 488 fit), 76
  EXPECT_EQ(t_->ReceiveDownload(target.landing).message(), "usb: the host sent more data than announced");
  ExpectNothingQueued();
  EXPECT_EQ(t_->ReadCommand(wire::kMaxCommand).status().message(), "command of 76 bytes, max 64");
  fake_->HostSend("getvar:x");
  EXPECT_EQ(*t_->ReadCommand(wire::kMaxCommand), "getvar:x");
}

TEST_F(FfsConnectionTest, ResponsesTheHostNeverTakesEndTheSession) {
  Make(512, {.write_timeout = 200ms});
  ASSERT_TRUE(t_->Send("INFOone").ok());
  ASSERT_TRUE(t_->Send("FAILtwo").ok());
  Status st = t_->ReadCommand(wire::kMaxCommand).status();
  EXPECT_EQ(st.message(), "usb: the host took no response for 200 ms");
  EXPECT_EQ(fake_->cancels(), 2u);  // no stale response for the next host
  t_->Drain();
  ExpectNothingQueued();
}

TEST_F(FfsConnectionTest, InterruptEndsAnIdleWaitAndKeepsLaterCommands) {
  Make(512);
  EXPECT_FALSE(t_->InterruptIfIdle());  // not waiting
  Status st;
  std::thread session([&] { st = t_->ReadCommand(wire::kMaxCommand).status(); });
  while (!t_->InterruptIfIdle()) std::this_thread::sleep_for(1ms);
  session.join();
  EXPECT_EQ(st.message(), "usb: gave the device to another client");
  EXPECT_FALSE(t_->gone());
  fake_->HostSend("getvar:y");  // into the read still queued
  EXPECT_EQ(*t_->ReadCommand(wire::kMaxCommand), "getvar:y");
}

TEST_F(FfsConnectionTest, HostGoneFromEp0EndsEveryWait) {
  Make(512);
  std::thread ep0([&] {
    while (fake_->reads_queued() == 0) std::this_thread::sleep_for(1ms);
    t_->HostGone();
  });
  EXPECT_EQ(t_->ReadCommand(wire::kMaxCommand).status().message(), "usb: host gone (disabled)");
  ep0.join();
  EXPECT_EQ(t_->Send("OKAY").code(), Code::kCancelled);
  t_->Drain();
  ExpectNothingQueued();
  // A new host: Start() clears it.
  ASSERT_TRUE(t_->Start("usb test").ok());
  fake_->HostSend("getvar:z");
  EXPECT_EQ(*t_->ReadCommand(wire::kMaxCommand), "getvar:z");
}

}  // namespace
}  // namespace flashpipe::fastboot
