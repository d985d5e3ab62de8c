// UTF-8 judged byte by byte: well-formed sequences kept, everything a
// terminal or a JSON parser would stumble on escaped or replaced.
#include "base/utf8.h"

#include <gtest/gtest.h>

#include "base/json.h"

namespace flashpipe {
namespace {

TEST(Utf8Test, WellFormedAndNot) {
  EXPECT_EQ(Utf8Length("a", 0), 1u);
  EXPECT_EQ(Utf8Length("\xc3\xa9", 0), 2u);          // é
  EXPECT_EQ(Utf8Length("\xe2\x82\xac", 0), 3u);      // €
  EXPECT_EQ(Utf8Length("\xf0\x9f\x98\x80", 0), 4u);  // an emoji
  EXPECT_EQ(Utf8Length("\xff", 0), 0u);
  EXPECT_EQ(Utf8Length("\x80", 0), 0u);              // a stray continuation
  EXPECT_EQ(Utf8Length("\xc0\xaf", 0), 0u);          // overlong '/'
  EXPECT_EQ(Utf8Length("\xe0\x80\xaf", 0), 0u);      // overlong
  EXPECT_EQ(Utf8Length("\xed\xa0\x80", 0), 0u);      // a surrogate
  EXPECT_EQ(Utf8Length("\xf4\x90\x80\x80", 0), 0u);  // past U+10FFFF
  EXPECT_EQ(Utf8Length("\xe2\x82", 0), 0u);          // cut short
}

TEST(Utf8Test, TerminalTextEscapesWhatATerminalActsOn) {
  EXPECT_EQ(TerminalText("partition 'boot' \\ ok"), "partition 'boot' \\ ok");
  EXPECT_EQ(TerminalText("caf\xc3\xa9"), "caf\xc3\xa9");
  EXPECT_EQ(TerminalText("\x1b]0;pwned\x07"), "\\x1b]0;pwned\\x07");
  EXPECT_EQ(TerminalText("\x1b[2J"), "\\x1b[2J");
  EXPECT_EQ(TerminalText("a\r\nb\x7f"), "a\\x0d\\x0ab\\x7f");
  EXPECT_EQ(TerminalText("\xc2\x9b" "2J"), "\\xc2\\x9b2J");  // C1 CSI in UTF-8
  EXPECT_EQ(TerminalText("\x9b" "2J\xff\xfe"), "\\x9b2J\\xff\\xfe");
}

TEST(Utf8Test, JsonStringIsAlwaysValidUtf8) {
  EXPECT_EQ(JsonString("ab\xff\xfe" "c"), "\"ab\\ufffd\\ufffdc\"");
  EXPECT_EQ(JsonString("caf\xc3\xa9"), "\"caf\xc3\xa9\"");
  EXPECT_EQ(JsonString("\xe2\x82"), "\"\\ufffd\\ufffd\"");
  EXPECT_EQ(JsonString("q\"\\\n"), "\"q\\\"\\\\\\u000a\"");
}

}  // namespace
}  // namespace flashpipe
