// The packets of AOSP's README, byte for byte.
#include "wire/udp_packet.h"

#include <gtest/gtest.h>

namespace flashpipe::wire::udp {
namespace {

std::vector<uint8_t> V(std::initializer_list<int> b) { return {b.begin(), b.end()}; }

TEST(UdpPacketTest, QueryAndInitAsTheReadmeShowsThem) {
  EXPECT_EQ(Packet({.id = kIdQuery}), V({1, 0, 0, 0}));
  EXPECT_EQ(Packet({.id = kIdQuery}, QueryPayload(0x1234)), V({1, 0, 0, 0, 0x12, 0x34}));
  EXPECT_EQ(*ParseQuery(QueryPayload(0x1234)), 0x1234);
  EXPECT_EQ(Packet({.id = kIdInit, .seq = 0x1234}, InitPayload({.version = 1, .max_packet = 0x2000})),
            V({2, 0, 0x12, 0x34, 0, 1, 0x20, 0}));
  auto init = ParseInit(V({0, 1, 4, 0}));
  ASSERT_TRUE(init.ok());
  EXPECT_EQ(init->version, 1);
  EXPECT_EQ(init->max_packet, 1024);
  EXPECT_EQ(ParseInit(V({0, 1, 4})).status().message(), "init: 3 payload bytes, need 4");
  EXPECT_FALSE(ParseQuery(V({1})).ok());
}

TEST(UdpPacketTest, HeaderCarriesIdFlagsAndSeq) {
  auto pkt = Packet({.id = kIdFastboot, .flags = kFlagContinuation, .seq = 0x1235}, "getvar:version");
  auto h = ParseHeader(pkt);
  ASSERT_TRUE(h.has_value());
  EXPECT_EQ(h->id, kIdFastboot);
  EXPECT_TRUE(h->continuation());
  EXPECT_EQ(h->seq, 0x1235);
  auto payload = Payload(pkt);
  EXPECT_EQ(std::string(payload.begin(), payload.end()), "getvar:version");
  EXPECT_FALSE(ParseHeader(V({3, 0, 0})).has_value());
  EXPECT_TRUE(Payload(V({3, 0, 0, 1})).empty());
}

}  // namespace
}  // namespace flashpipe::wire::udp
