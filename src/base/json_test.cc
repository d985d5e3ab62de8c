#include "base/json.h"

#include <gtest/gtest.h>

namespace flashpipe {
namespace {

TEST(JsonStringTest, EscapesQuotesBackslashesAndControlCharacters) {
  EXPECT_EQ(JsonString(""), "\"\"");
  EXPECT_EQ(JsonString("a\"b\\c\n"), "\"a\\\"b\\\\c\\u000a\"");
  EXPECT_EQ(JsonString(std::string_view("\0\x1f", 2)), "\"\\u0000\\u001f\"");
  EXPECT_EQ(JsonString("sim:size=8G,bw=45M"), "\"sim:size=8G,bw=45M\"");
  EXPECT_EQ(JsonString("\xc3\xa9"), "\"\xc3\xa9\"");  // UTF-8 passes through
}

TEST(JsonSchemaMembersTest, NameAndVersionAsTheReportsStart) {
  EXPECT_EQ(JsonSchemaMembers("write", 1), "\"schema\": \"flashpipe-write\", \"schema_version\": 1");
  EXPECT_EQ(JsonSchemaMembers("lp-dump", 2), "\"schema\": \"flashpipe-lp-dump\", \"schema_version\": 2");
}

}  // namespace
}  // namespace flashpipe
