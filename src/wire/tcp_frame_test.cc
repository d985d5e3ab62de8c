#include "wire/tcp_frame.h"

#include <gtest/gtest.h>

namespace flashpipe::wire::tcp {
namespace {

std::array<uint8_t, 4> Bytes(const char (&s)[5]) { return {uint8_t(s[0]), uint8_t(s[1]), uint8_t(s[2]), uint8_t(s[3])}; }

TEST(TcpFrameTest, HandshakeNamesTheVersion) {
  EXPECT_EQ(*ParseHandshake(Bytes("FB01")), 1);
  EXPECT_EQ(*ParseHandshake(Bytes("FB42")), 42);
  EXPECT_EQ(ParseHandshake(Bytes("FB00")).status().message(), "bad handshake 46423030");
  EXPECT_FALSE(ParseHandshake(Bytes("FB0x")).ok());
  EXPECT_FALSE(ParseHandshake(Bytes("fb01")).ok());
  EXPECT_EQ(std::string(kHandshake.begin(), kHandshake.end()), "FB01");
}

TEST(TcpFrameTest, LengthIsEightBytesBigEndian) {
  auto h = FrameHeader(0x0102030405060708ull);
  EXPECT_EQ(h, (std::array<uint8_t, 8>{1, 2, 3, 4, 5, 6, 7, 8}));
  EXPECT_EQ(ParseFrameHeader(h), 0x0102030405060708ull);
  EXPECT_EQ(FrameHeader(14), (std::array<uint8_t, 8>{0, 0, 0, 0, 0, 0, 0, 14}));
}

}  // namespace
}  // namespace flashpipe::wire::tcp
