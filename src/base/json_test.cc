#include "base/json.h"

#include <gtest/gtest.h>

namespace flashpipe {
namespace {

TEST(JsonStringTest, QuotesAndEscapes) {
  EXPECT_EQ(JsonString("plain"), "\"plain\"");
  EXPECT_EQ(JsonString("a\"b\\c\n\x01"), "\"a\\\"b\\\\c\\u000a\\u0001\"");
  EXPECT_EQ(JsonString("gr\xc3\xbc\xc3\x9f"), "\"gr\xc3\xbc\xc3\x9f\"");
}

}  // namespace
}  // namespace flashpipe
