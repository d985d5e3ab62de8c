// AioEndpoints' plumbing (submit, reap by tag, wake, limits) on regular
// files, which Linux AIO serves too; the FunctionFS side runs in tests/vm.
#include "fastboot/ffs_aio.h"

#include <fcntl.h>
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "testing/temp_dir.h"

namespace flashpipe::fastboot {
namespace {

using namespace std::chrono_literals;

class AioEndpointsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::vector<uint8_t> data(8192);
    for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<uint8_t>(i * 7);
    testing::WriteFile(dir_ / "out", data);
    testing::WriteFile(dir_ / "in", {});
    auto e = AioEndpoints::Create(UniqueFd(::open((dir_ / "out").c_str(), O_RDWR)),
                                  UniqueFd(::open((dir_ / "in").c_str(), O_RDWR)), 4);
    ASSERT_TRUE(e.ok()) << e.status().ToString();
    ep_ = std::move(*e);
  }
  std::vector<EndpointDone> ReapAll(size_t n) {
    std::vector<EndpointDone> done;
    for (int i = 0; i < 50 && done.size() < n; ++i) EXPECT_TRUE(ep_->Reap(&done, 100ms).ok());
    return done;
  }

  testing::TempDir dir_;
  std::unique_ptr<AioEndpoints> ep_;
};

TEST_F(AioEndpointsTest, ReadsAndWritesCompleteWithTheirTags) {
  uint8_t buf[4096];
  ASSERT_TRUE(ep_->SubmitRead(buf, 7).ok());
  const char hello[] = "hello";
  ASSERT_TRUE(ep_->SubmitWrite({reinterpret_cast<const uint8_t*>(hello), 5}, 8).ok());
  auto done = ReapAll(2);
  ASSERT_EQ(done.size(), 2u);
  std::sort(done.begin(), done.end(), [](auto a, auto b) { return a.tag < b.tag; });
  EXPECT_EQ(done[0].tag, 7u);
  EXPECT_EQ(done[0].result, 4096);
  EXPECT_EQ(buf[100], static_cast<uint8_t>(700));
  EXPECT_EQ(done[1].tag, 8u);
  EXPECT_EQ(done[1].result, 5);
  EXPECT_EQ(testing::ReadFile(dir_ / "in"), std::vector<uint8_t>(hello, hello + 5));
}

TEST_F(AioEndpointsTest, WakeEndsAWaitAndTimeoutsReturnEmpty) {
  std::vector<EndpointDone> done;
  auto start = std::chrono::steady_clock::now();
  ASSERT_TRUE(ep_->Reap(&done, 50ms).ok());
  EXPECT_TRUE(done.empty());
  EXPECT_GE(std::chrono::steady_clock::now() - start, 45ms);
  std::thread waker([&] {
    std::this_thread::sleep_for(50ms);
    ep_->Wake();
  });
  start = std::chrono::steady_clock::now();
  ASSERT_TRUE(ep_->Reap(&done, 10000ms).ok());
  waker.join();
  EXPECT_LT(std::chrono::steady_clock::now() - start, 5000ms);
  EXPECT_TRUE(done.empty());
}

TEST_F(AioEndpointsTest, RefusesMoreRequestsThanItsContextHolds) {
  uint8_t buf[4][16];
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(ep_->SubmitRead(buf[i], i).ok());
  EXPECT_EQ(ep_->SubmitRead(buf[0], 9).code(), Code::kInternal);
  ReapAll(4);
  EXPECT_TRUE(ep_->SubmitRead(buf[0], 9).ok());  // room again once reaped
  ep_->Cancel(12345);                            // unknown: nothing happens
}

TEST_F(AioEndpointsTest, PacketSizeNeedsAFunctionFsEndpoint) {
  EXPECT_EQ(ep_->MaxPacketSize().status().message(), "usb: FUNCTIONFS_ENDPOINT_DESC");
}

}  // namespace
}  // namespace flashpipe::fastboot
