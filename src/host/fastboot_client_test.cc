// The client against devices that break the protocol or report sizes it
// cannot read (issue 19): each is a kProtocol or kInvalidArgument error that
// says what the device did, never a size of 0 read as "no limit", never a
// corrupt_image.
#include "host/fastboot_client.h"

#include <gtest/gtest.h>

#include <deque>

#include "host/device_session.h"
#include "input/write_report.h"

namespace flashpipe::host {
namespace {

// Answers each command with the next scripted responses; a missing answer
// is a timeout, as a silent device's.
class ScriptedTransport : public Transport {
 public:
  explicit ScriptedTransport(std::deque<std::string> answers) : answers_(std::move(answers)) {}
  Status Send(std::string_view command) override {
    sent.emplace_back(command);
    return Status::Ok();
  }
  Result<std::string> Receive() override {
    if (answers_.empty()) return Status(Code::kTimedOut, "no response for 3 s");
    std::string a = answers_.front();
    answers_.pop_front();
    return a;
  }
  Status SendData(std::span<const std::span<const uint8_t>>) override { return Status::Ok(); }
  std::string name() const override { return "scripted"; }
  std::vector<std::string> sent;

 private:
  std::deque<std::string> answers_;
};

TEST(FastbootClientTest, OkayToADownloadIsTheDevicesFaultAndSaysSo) {
  FastbootClient c(std::make_unique<ScriptedTransport>(std::deque<std::string>{"OKAY"}), nullptr);
  Status st = c.Download(4096, [](DataOut&) { return Status::Ok(); });
  EXPECT_EQ(st.code(), Code::kProtocol);
  EXPECT_EQ(st.message(), "the device answered OKAY to download, not DATA: it took no data");
  EXPECT_EQ(input::ErrorClass(st.code()), "protocol_error");
}

TEST(FastbootClientTest, AMalformedResponseIsAProtocolError) {
  FastbootClient c(std::make_unique<ScriptedTransport>(std::deque<std::string>{"DATA00001"}), nullptr);
  auto v = c.GetVar("product");
  EXPECT_EQ(v.status().code(), Code::kProtocol) << v.status().ToString();
  FastbootClient d(std::make_unique<ScriptedTransport>(std::deque<std::string>{"DATA00000800"}), nullptr);
  Status st = d.Download(4096, [](DataOut&) { return Status::Ok(); });
  EXPECT_EQ(st.code(), Code::kProtocol);
  EXPECT_EQ(st.message(), "asked to download 4096 bytes, the device said DATA00000800");
}

TEST(FastbootClientTest, DeviceSizesAreNumbersOrErrors) {
  EXPECT_EQ(*ParseDeviceSize("max-download-size", "0x10000000"), 0x10000000u);
  EXPECT_EQ(*ParseDeviceSize("max-download-size", " 268435456\n"), 268435456u);
  for (const char* bad : {"zz", "-5", "0x123456789abcdef012345", "", "0x", "12 34"}) {
    auto n = ParseDeviceSize("max-download-size", bad);
    EXPECT_EQ(n.status().code(), Code::kInvalidArgument) << bad;
  }
  EXPECT_EQ(ParseDeviceSize("max-download-size", "zz").status().message(),
            "the device's max-download-size 'zz' is not a size (decimal or 0x hex, at most 64 bits)");
}

// A session asked for max-download-size: unreadable is an error, never "no
// limit"; a device that refuses the variable has none (as AOSP's client).
TEST(FastbootClientTest, AnUnreadableMaxDownloadSizeIsAnError) {
  DeviceSession bad(std::make_unique<ScriptedTransport>(std::deque<std::string>{"OKAY-5"}), nullptr);
  auto mds = bad.MaxDownloadSize();
  EXPECT_EQ(mds.status().code(), Code::kInvalidArgument) << mds.status().ToString();
  DeviceSession none(std::make_unique<ScriptedTransport>(std::deque<std::string>{"FAILunknown variable"}), nullptr);
  EXPECT_EQ(*none.MaxDownloadSize(), 0u);
}

// A getvar with no answer (a lost reply) is an error for the flashing code,
// never "the device has no slots".
TEST(FastbootClientTest, ASilentSlotCountIsAnErrorNotZeroSlots) {
  DeviceSession silent(std::make_unique<ScriptedTransport>(std::deque<std::string>{}), nullptr);
  auto n = silent.SlotCount();
  EXPECT_EQ(n.status().code(), Code::kTimedOut) << n.status().ToString();
  DeviceSession refused(std::make_unique<ScriptedTransport>(std::deque<std::string>{"FAILunknown variable"}), nullptr);
  EXPECT_EQ(*refused.SlotCount(), 0);
  DeviceSession two(std::make_unique<ScriptedTransport>(std::deque<std::string>{"OKAY2"}), nullptr);
  EXPECT_EQ(*two.SlotCount(), 2);
}

}  // namespace
}  // namespace flashpipe::host
