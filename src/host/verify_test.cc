// Verify's digests: one SHA-256 per run of bytes the image defines (RAW and
// FILL that follow on), a DONT_CARE ends a run; a raw image of odd size is
// one range of exactly its bytes; the device's two INFO halves put together.
// On a device: oem digest first, read-back with fetch: (in pieces of the
// device's max-fetch-size, hashed as they come) where there is no digest, a
// flipped byte found and named, a wrong DATA size refused, and a device
// with neither command left "not verified" with what each one answered.
#include "host/verify.h"

#include <gtest/gtest.h>

#include "base/sha256.h"
#include "testing/fake_fastboot_device.h"
#include "testing/sparse_builder.h"
#include "testing/temp_dir.h"

namespace flashpipe::host {
namespace {

std::string Hex(std::span<const uint8_t> bytes) {
  Sha256 h;
  h.Update(bytes);
  return Sha256::Hex(h.Final());
}

TEST(VerifyTest, SparseImageGapsSplitRanges) {
  testing::TempDir dir;
  testing::SparseBuilder b(4096);
  b.RawBlocks(2, 1).Fill(3, 0xAABBCCDD).DontCare(4).RawBlocks(1, 2).Fill(1, 0);
  testing::WriteFile(dir.File("a.simg"), b.Build());
  auto ranges = ImageDigests({.path = dir.File("a.simg")});
  ASSERT_TRUE(ranges.ok()) << ranges.status().ToString();
  ASSERT_EQ(ranges->size(), 2u);
  const auto& img = b.expanded();
  EXPECT_EQ((*ranges)[0].offset, 0u);
  EXPECT_EQ((*ranges)[0].size, 5u * 4096);
  EXPECT_EQ((*ranges)[0].sha256, Hex(std::span(img).first(5 * 4096)));
  EXPECT_EQ((*ranges)[1].offset, 9u * 4096);
  EXPECT_EQ((*ranges)[1].size, 2u * 4096);
  EXPECT_EQ((*ranges)[1].sha256, Hex(std::span(img).subspan(9 * 4096, 2 * 4096)));
}

TEST(VerifyTest, OddRawImageIsOneRangeOfItsBytes) {
  testing::TempDir dir;
  std::vector<uint8_t> raw(3 * 4096 + 77, 0x5A);
  raw[5] = 1;
  testing::WriteFile(dir.File("a.raw"), raw);
  auto ranges = ImageDigests({.path = dir.File("a.raw")});
  ASSERT_TRUE(ranges.ok()) << ranges.status().ToString();
  ASSERT_EQ(ranges->size(), 1u);
  EXPECT_EQ((*ranges)[0].size, raw.size());
  EXPECT_EQ((*ranges)[0].sha256, Hex(raw));
}

TEST(VerifyTest, StdinCannotBeVerified) {
  auto ranges = ImageDigests({.path = "-"});
  ASSERT_FALSE(ranges.ok());
  EXPECT_EQ(ranges.status().code(), Code::kInvalidArgument);
}

TEST(VerifyTest, DigestFromTwoInfoHalves) {
  std::string a(32, 'a'), b(32, 'b');
  EXPECT_EQ(DigestFromInfo({"reading", "sha256 1/2 " + a, "sha256 2/2 " + b}), a + b);
  EXPECT_EQ(DigestFromInfo({"sha256 1/2 " + a}), "");
  EXPECT_EQ(DigestFromInfo({"sha256 1/2 " + a, "sha256 2/2 short"}), "");
}

// A device whose `system` holds a sparse image's bytes (two ranges, the
// second 3 blocks of RAW at 9 * 4096), and the image's digests.
class OnDeviceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    b_.RawBlocks(2, 1).Fill(3, 0xAABBCCDD).DontCare(4).RawBlocks(3, 2);
    testing::WriteFile(dir_.File("a.simg"), b_.Build());
    auto r = ImageDigests({.path = dir_.File("a.simg")});
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    ranges_ = *r;
    ASSERT_EQ(ranges_.size(), 2u);
  }
  // A client of a new device with `config`, `system` holding the image.
  FastbootClient& Device(testing::FakeDeviceConfig config) {
    auto d = std::make_unique<testing::FakeFastbootDevice>(std::move(config));
    dev_ = d.get();
    dev_->AddPartition("system", 1 << 20, 0);
    std::copy(b_.expanded().begin(), b_.expanded().end(), dev_->partitions["system"].begin());
    client_ = std::make_unique<FastbootClient>(std::move(d));
    return *client_;
  }
  std::vector<std::string> Commands(std::string_view prefix) const {
    std::vector<std::string> out;
    for (const std::string& c : dev_->commands) {
      if (c.starts_with(prefix)) out.push_back(c);
    }
    return out;
  }

  testing::TempDir dir_;
  testing::SparseBuilder b_{4096};
  std::vector<DigestRange> ranges_;
  testing::FakeFastbootDevice* dev_ = nullptr;
  std::unique_ptr<FastbootClient> client_;
};

TEST_F(OnDeviceTest, DigestFirst) {
  auto& c = Device({.digest = true, .fetch = true});
  VerifyResult how;
  Status st = VerifyOnDevice(c, "system", ranges_, &how);
  ASSERT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(how.method, "digest");
  EXPECT_EQ(how.unavailable, "");
  EXPECT_EQ(Commands("oem digest").size(), 2u);
  EXPECT_TRUE(Commands("fetch").empty());
  EXPECT_EQ(dev_->fetched_bytes, 0u);
}

TEST_F(OnDeviceTest, ReadBackInPiecesOfMaxFetchSizeWhereThereIsNoDigest) {
  auto& c = Device({.fetch = true, .max_fetch = 8192});
  VerifyResult how;
  Status st = VerifyOnDevice(c, "system", ranges_, &how);
  ASSERT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(how.method, "readback");
  EXPECT_EQ(Commands("oem digest").size(), 1u);  // refused once, not asked again
  // 5 blocks in 8 KiB fetches, then 3.
  EXPECT_EQ(Commands("fetch"), (std::vector<std::string>{
                                   "fetch:system:0x00000000:0x00002000", "fetch:system:0x00002000:0x00002000",
                                   "fetch:system:0x00004000:0x00001000", "fetch:system:0x00009000:0x00002000",
                                   "fetch:system:0x0000b000:0x00001000"}));
  EXPECT_EQ(dev_->fetched_bytes, 8u * 4096);
}

TEST_F(OnDeviceTest, ReadBackWithoutMaxFetchSizeUsesMaxDownloadSizeAndHoldsAtMostOneMiB) {
  // One range of 3 MiB + 5 bytes, max-download-size 1 MiB: 4 fetches.
  std::vector<uint8_t> raw((3 << 20) + 5);
  for (size_t i = 0; i < raw.size(); ++i) raw[i] = static_cast<uint8_t>(i * 7 + (i >> 12));
  testing::WriteFile(dir_.File("big.raw"), raw);
  auto r = ImageDigests({.path = dir_.File("big.raw")});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  auto d = std::make_unique<testing::FakeFastbootDevice>(testing::FakeDeviceConfig{.max_download = 1 << 20, .fetch = true});
  auto* dev = d.get();
  dev->partitions["userdata"] = raw;
  dev->partitions["userdata"].resize(4 << 20, 0x11);
  FastbootClient c(std::move(d));
  VerifyResult how;
  Status st = VerifyOnDevice(c, "userdata", *r, &how);
  ASSERT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(how.method, "readback");
  size_t fetches = 0;
  for (const std::string& cmd : dev->commands) fetches += cmd.starts_with("fetch:");
  EXPECT_EQ(fetches, 4u);
  EXPECT_EQ(dev->fetched_bytes, raw.size());
  EXPECT_LE(dev->largest_receive, size_t{1} << 20);
  EXPECT_EQ(c.fetched_bytes(), raw.size());
}

TEST_F(OnDeviceTest, AFlippedByteIsAMismatchNamingPartitionAndRange) {
  auto& c = Device({.fetch = true});
  dev_->partitions["system"][10 * 4096 + 3] ^= 0x40;  // in the second range
  VerifyResult how;
  Status st = VerifyOnDevice(c, "system", ranges_, &how);
  EXPECT_EQ(st.code(), Code::kMismatch) << st.ToString();
  EXPECT_EQ(how.method, "readback");
  EXPECT_NE(st.message().find("verify: system bytes 36864..49152: read back sha256 "), std::string::npos) << st.message();
  EXPECT_NE(st.message().find(", the image " + ranges_[1].sha256), std::string::npos) << st.message();
}

TEST_F(OnDeviceTest, ADataSizeOtherThanAskedIsAProtocolError) {
  for (int64_t skew : {4096, -1}) {
    auto& c = Device({.fetch = true, .fetch_skew = skew});
    VerifyResult how;
    Status st = VerifyOnDevice(c, "system", ranges_, &how);
    EXPECT_EQ(st.code(), Code::kProtocol) << st.ToString();
    uint64_t announced = 5 * 4096 + skew;
    EXPECT_NE(st.message().find(fmt::format("fetch:system:0x00000000:0x00005000: asked for 20480 bytes, the device "
                                            "announced DATA{:08x} ({} bytes)", announced, announced)),
              std::string::npos)
        << st.message();
    EXPECT_EQ(dev_->fetched_bytes, 0u);  // not one byte taken as the partition's
  }
}

// The device sent the bytes (zeros for what it could not read), then FAIL:
// a failed verify, not a device without read-back, and not a mismatch.
TEST_F(OnDeviceTest, AFailAfterTheDataIsAFailedReadNotAMissingCommand) {
  auto& c = Device({.fetch = true, .fetch_fail = "read error at block 3"});
  VerifyResult how;
  Status st = VerifyOnDevice(c, "system", ranges_, &how);
  EXPECT_EQ(st.code(), Code::kIoError) << st.ToString();
  EXPECT_EQ(how.method, "readback");
  EXPECT_EQ(how.unavailable, "");
  EXPECT_EQ(st.message(),
            "verify: reading back system bytes 0..20480: fetch:system:0x00000000:0x00005000: the device failed after "
            "the data phase: remote: 'read error at block 3'");
}

TEST_F(OnDeviceTest, NeitherCommandLeavesItNotVerifiedAndSaysWhatTheDeviceAnswered) {
  auto& c = Device({});
  VerifyResult how;
  Status st = VerifyOnDevice(c, "system", ranges_, &how);
  ASSERT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(how.method, "");
  EXPECT_EQ(how.unavailable, "oem digest: remote: 'unknown command'; fetch: remote: 'unknown command'");
}

// A transport that reads no data phases: fetch is never sent.
class NoReadBack : public Transport {
 public:
  explicit NoReadBack(testing::FakeFastbootDevice* d) : d_(d) {}
  Status Send(std::string_view c) override { return d_->Send(c); }
  Result<std::string> Receive() override { return d_->Receive(); }
  Status SendData(std::span<const std::span<const uint8_t>> p) override { return d_->SendData(p); }
  std::string name() const override { return "usb:1-1"; }

 private:
  testing::FakeFastbootDevice* d_;
};

TEST_F(OnDeviceTest, ALinkWithoutReadBackSendsNoFetch) {
  testing::FakeFastbootDevice dev({.fetch = true});
  dev.AddPartition("system", 1 << 20, 0);
  FastbootClient c(std::make_unique<NoReadBack>(&dev));
  VerifyResult how;
  Status st = VerifyOnDevice(c, "system", ranges_, &how);
  ASSERT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(how.unavailable, "oem digest: remote: 'unknown command'; fetch: usb:1-1 cannot read data from a device yet");
  for (const std::string& cmd : dev.commands) EXPECT_FALSE(cmd.starts_with("fetch")) << cmd;
}

}  // namespace
}  // namespace flashpipe::host
