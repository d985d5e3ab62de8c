#include "wire/protocol.h"

#include <gtest/gtest.h>

namespace flashpipe::wire {
namespace {

TEST(ProtocolTest, ParseCommandSplitsAtColonOrSpace) {
  auto c = ParseCommand("flash:boot_a");
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->name, "flash");
  EXPECT_EQ(c->arg, "boot_a");
  c = ParseCommand("getvar:partition-size:system");
  EXPECT_EQ(c->name, "getvar");
  EXPECT_EQ(c->arg, "partition-size:system");
  c = ParseCommand("oem run a:b");
  EXPECT_EQ(c->name, "oem");
  EXPECT_EQ(c->arg, "run a:b");
  c = ParseCommand("flashing unlock");
  EXPECT_EQ(c->name, "flashing");
  EXPECT_EQ(c->arg, "unlock");
  c = ParseCommand("reboot");
  EXPECT_EQ(c->name, "reboot");
  EXPECT_EQ(c->arg, "");
}

TEST(ProtocolTest, ParseCommandRejectsMalformed) {
  EXPECT_EQ(ParseCommand("").status().message(), "empty command");
  EXPECT_EQ(ParseCommand(std::string(65, 'a')).status().message(), "command of 65 bytes, max 64");
  EXPECT_TRUE(ParseCommand(std::string(64, 'a')).ok());
  EXPECT_EQ(ParseCommand(std::string("a\0b", 3)).status().message(),
            "command byte 1 is 0x00, not printable ASCII");
  EXPECT_FALSE(ParseCommand("getvar:\xff").ok());
}

TEST(ProtocolTest, ResponsesAreCutTo64BytesAndSanitized) {
  EXPECT_EQ(Okay(), "OKAY");
  EXPECT_EQ(Fail("x"), "FAILx");
  EXPECT_EQ(Info("a\nb"), "INFOa?b");
  EXPECT_EQ(Fail(std::string(100, 'z')).size(), kMaxResponse);
  EXPECT_EQ(Data(0x1234), "DATA00001234");
  EXPECT_EQ(Hex32(256u << 20), "0x10000000");
  EXPECT_EQ(Hex64(0x200000), "0x0000000000200000");
}

TEST(ProtocolTest, DownloadSize) {
  EXPECT_EQ(*ParseDownloadSize("0000ABcd"), 0xABCDu);
  EXPECT_EQ(*ParseDownloadSize("ffffffff"), 0xFFFFFFFFu);
  EXPECT_FALSE(ParseDownloadSize("00000000").ok());
  EXPECT_FALSE(ParseDownloadSize("1000").ok());
  EXPECT_FALSE(ParseDownloadSize("000000001").ok());
  EXPECT_FALSE(ParseDownloadSize("0000000g").ok());
  EXPECT_FALSE(ParseDownloadSize("-0000001").ok());
}

TEST(ProtocolTest, ResponsesParseAsTheHostReadsThem) {
  using Kind = Response::Kind;
  auto r = ParseResponse("OKAY0.4");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->kind, Kind::kOkay);
  EXPECT_EQ(r->message, "0.4");
  EXPECT_TRUE(r->final());
  EXPECT_EQ(ParseResponse("OKAY")->message, "");
  EXPECT_EQ(ParseResponse("FAILdevice is locked")->kind, Kind::kFail);
  EXPECT_FALSE(ParseResponse("INFOwriting")->final());
  EXPECT_FALSE(ParseResponse("TEXTpart")->final());
  r = ParseResponse("DATA0000abcd");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->data_size, 0xabcdu);
  EXPECT_EQ(ParseResponse("DATA00001").status().message(),
            "response 'DATA00001': download size '00001' is not 8 hex digits");
  EXPECT_EQ(ParseResponse("OKA").status().message(), "response 'OKA' is not OKAY, FAIL, INFO, TEXT or DATA");
  EXPECT_EQ(ParseResponse(std::string("NOPE\x01", 5)).status().message(),
            "response 'NOPE?' is not OKAY, FAIL, INFO, TEXT or DATA");
  EXPECT_EQ(DownloadCommand(0x1234), "download:00001234");
  EXPECT_EQ(ParseResponse(Data(77))->data_size, 77u);
}

}  // namespace
}  // namespace flashpipe::wire
