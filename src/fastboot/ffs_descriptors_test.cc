// The exact bytes written to ep0 (what the kernel parses: a wrong count or
// length is EINVAL at mount time on a board), and ep0 event decoding.
#include "fastboot/ffs_descriptors.h"

#include <gtest/gtest.h>

namespace flashpipe::fastboot::ffs {
namespace {

TEST(FfsDescriptorsTest, V2BlobWithFullHighAndSuperSpeedSets) {
  const std::vector<uint8_t> expected = {
      // header: magic 3, length 105, flags FS|HS|SS; counts 3, 3, 5
      0x03, 0, 0, 0, 105, 0, 0, 0, 0x07, 0, 0, 0, 3, 0, 0, 0, 3, 0, 0, 0, 5, 0, 0, 0,
      // full speed: interface ff/42/03 with 2 endpoints, string 1; bulk OUT 0x01 and IN 0x82 of 64
      9, 4, 0, 0, 2, 0xff, 0x42, 0x03, 1,
      7, 5, 0x01, 2, 64, 0, 0,
      7, 5, 0x82, 2, 64, 0, 0,
      // high speed: 512-byte packets
      9, 4, 0, 0, 2, 0xff, 0x42, 0x03, 1,
      7, 5, 0x01, 2, 0x00, 0x02, 0,
      7, 5, 0x82, 2, 0x00, 0x02, 0,
      // super speed: 1024-byte packets, each endpoint with a companion (burst 16)
      9, 4, 0, 0, 2, 0xff, 0x42, 0x03, 1,
      7, 5, 0x01, 2, 0x00, 0x04, 0,
      6, 0x30, 15, 0, 0, 0,
      7, 5, 0x82, 2, 0x00, 0x04, 0,
      6, 0x30, 15, 0, 0, 0,
  };
  EXPECT_EQ(FastbootDescriptors(), expected);
}

TEST(FfsDescriptorsTest, StringsBlobIsEnglishFastboot) {
  const std::vector<uint8_t> expected = {
      0x02, 0, 0, 0, 27, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0,  // magic 2, length, 1 string, 1 language
      0x09, 0x04, 'f', 'a', 's', 't', 'b', 'o', 'o', 't', 0,
  };
  EXPECT_EQ(FastbootStrings(), expected);
}

TEST(FfsDescriptorsTest, ParsesEventsAndSetupRequests) {
  std::vector<uint8_t> bytes(36, 0);
  bytes[8] = 0;  // BIND
  uint8_t setup[12] = {0xc1, 0x05, 0x34, 0x12, 0x01, 0x00, 0x40, 0x00, 4, 0, 0, 0};
  std::copy(setup, setup + 12, bytes.begin() + 12);
  bytes[24 + 8] = 3;  // DISABLE
  auto events = ParseEvents(bytes);
  ASSERT_TRUE(events.ok()) << events.status().ToString();
  ASSERT_EQ(events->size(), 3u);
  EXPECT_EQ((*events)[0].type, EventType::kBind);
  EXPECT_EQ((*events)[1].type, EventType::kSetup);
  EXPECT_TRUE((*events)[1].setup.in());
  EXPECT_EQ((*events)[1].setup.request, 0x05);
  EXPECT_EQ((*events)[1].setup.value, 0x1234);
  EXPECT_EQ((*events)[1].setup.index, 1);
  EXPECT_EQ((*events)[1].setup.length, 64);
  EXPECT_EQ((*events)[2].type, EventType::kDisable);
  EXPECT_EQ(EventName(EventType::kResume), "RESUME");
}

TEST(FfsDescriptorsTest, RejectsPartialAndUnknownEvents) {
  std::vector<uint8_t> bytes(13, 0);
  EXPECT_EQ(ParseEvents(bytes).status().message(), "ep0 read of 13 bytes is not whole 12-byte events");
  bytes.resize(24);
  bytes[12 + 8] = 9;
  EXPECT_EQ(ParseEvents(bytes).status().message(), "ep0 event 1: unknown type 9");
}

}  // namespace
}  // namespace flashpipe::fastboot::ffs
