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
  EXPECT_EQ(ParseSize("abc").status().message(), "bad size 'abc'");
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
  EXPECT_EQ(ParseSizeList("4K,zz").status().message(), "bad size 'zz'");
}

TEST(UnitsTest, FormatBytes) {
  EXPECT_EQ(FormatBytes(100), "100 B");
  EXPECT_EQ(FormatBytes(1536), "1.5 KiB");
  EXPECT_EQ(FormatBytes(3221225472ull), "3.0 GiB");
}

}  // namespace
}  // namespace flashpipe
