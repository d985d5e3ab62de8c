#include "base/units.h"

#include <gtest/gtest.h>

namespace flashpipe {
namespace {

uint64_t Size(const char* s) {
  auto r = ParseSize(s);
  EXPECT_TRUE(r.ok()) << s << ": " << r.status().ToString();
  return r.ok() ? *r : 0;
}

TEST(UnitsTest, ParseSizeBinarySuffixes) {
  EXPECT_EQ(Size("4096"), 4096u);
  EXPECT_EQ(Size("0x1000"), 4096u);
  EXPECT_EQ(Size("64K"), 65536u);
  EXPECT_EQ(Size("64KiB"), 65536u);
  EXPECT_EQ(Size("1MB"), 1u << 20);
  EXPECT_EQ(Size("8G"), uint64_t{8} << 30);
  EXPECT_EQ(Size("2t"), uint64_t{2} << 40);
  EXPECT_EQ(Size("12B"), 12u);
}

TEST(UnitsTest, ParseSizeErrors) {
  EXPECT_EQ(ParseSize("").status().message(), "empty size");
  EXPECT_EQ(ParseSize("abc").status().message(), "bad size 'abc': not a number (decimal or 0x hex)");
  EXPECT_EQ(ParseSize("5X").status().message(), "bad size suffix in '5X'");
  EXPECT_EQ(ParseSize("0x10K").status().message(), "bad size suffix in '0x10K'");
  EXPECT_EQ(ParseSize("20000000T").status().message(), "size '20000000T' too large");
  EXPECT_EQ(ParseSize("5X").status().code(), Code::kInvalidArgument);
}

TEST(UnitsTest, ParseRateIsDecimal) {
  EXPECT_EQ(*ParseRate("45M"), 45'000'000u);
  EXPECT_EQ(*ParseRate("1k"), 1000u);
  EXPECT_EQ(*ParseRate("2G"), 2'000'000'000u);
}

TEST(UnitsTest, ParseSizeList) {
  auto r = ParseSizeList("4K,1M,512");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r, (std::vector<uint64_t>{4096, 1 << 20, 512}));
  EXPECT_FALSE(ParseSizeList("").ok());
  EXPECT_EQ(ParseSizeList("4K,zz").status().message(), "bad size 'zz': not a number (decimal or 0x hex)");
}

TEST(UnitsTest, FormatBytes) {
  EXPECT_EQ(FormatBytes(100), "100 B");
  EXPECT_EQ(FormatBytes(1536), "1.5 KiB");
  EXPECT_EQ(FormatBytes(3221225472ull), "3.0 GiB");
}

// One rule for plain numbers everywhere (flags, protocol arguments, a
// device's answers): decimal or 0x hex, nothing around them, no leading 0.
TEST(UnitsTest, ParseNumberOneRule) {
  EXPECT_EQ(*ParseNumber("0"), 0u);
  EXPECT_EQ(*ParseNumber("4096"), 4096u);
  EXPECT_EQ(*ParseNumber("0x1000"), 4096u);
  EXPECT_EQ(*ParseNumber("0X00001000"), 4096u);  // leading zeros after 0x are hex digits, not a guess
  EXPECT_EQ(*ParseNumber("18446744073709551615"), UINT64_MAX);
  for (const char* bad : {"", "010", "00", "0x", "-1", "+1", " 1", "1 ", "12z", "4K", "0x1g", "18446744073709551616"}) {
    EXPECT_FALSE(ParseNumber(bad).ok()) << bad;
  }
  EXPECT_EQ(ParseNumber("010").status().message(), "decimal with a leading 0 (octal?)");
  EXPECT_EQ(ParseNumber("99999999999999999999").status().message(), "more than 64 bits");
  EXPECT_FALSE(ParseSize("010M").ok());  // the same digits rule under the suffixes
}

}  // namespace
}  // namespace flashpipe
