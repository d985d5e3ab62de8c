// android-info.txt lines as the AOSP client reads them: require, reject,
// require-for-product, "board" meaning "product", '*' as a prefix match.
#include "host/product_out.h"

#include <gtest/gtest.h>

namespace flashpipe::host {
namespace {

TEST(ProductOutTest, RequireBoardIsProductWithAlternatives) {
  auto r = ParseRequirement("require board=alpha|beta");
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->name, "product");
  EXPECT_FALSE(r->reject);
  EXPECT_EQ(r->options, (std::vector<std::string>{"alpha", "beta"}));
  EXPECT_TRUE(RequirementMet(*r, "beta"));
  EXPECT_FALSE(RequirementMet(*r, "gamma"));
}

TEST(ProductOutTest, RejectAndPrefix) {
  auto r = ParseRequirement("reject version-bootloader=1.0*");
  ASSERT_TRUE(r.has_value());
  EXPECT_TRUE(r->reject);
  EXPECT_FALSE(RequirementMet(*r, "1.0.3"));
  EXPECT_TRUE(RequirementMet(*r, "2.0"));
}

TEST(ProductOutTest, RequireForProductAndSyntaxError) {
  auto r = ParseRequirement("require-for-product:flashpipe version-baseband=x");
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->product, "flashpipe");
  EXPECT_EQ(r->name, "version-baseband");
  EXPECT_FALSE(ParseRequirement("no equals sign here").has_value());
}

TEST(ProductOutTest, SpacesAroundTheEqualsSignAndEqualsInTheName) {
  auto r = ParseRequirement("require  board = alpha | beta ");
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->name, "product");
  EXPECT_EQ(r->options, (std::vector<std::string>{"alpha", "beta"}));
  r = ParseRequirement("a=b=c");  // the name runs to the token's last '='
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->name, "a=b");
  EXPECT_EQ(r->options, (std::vector<std::string>{"c"}));
  r = ParseRequirement("require = x");  // "require" is then the name
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->name, "require");
  r = ParseRequirement("version-bootloader=1\r");  // a CRLF file
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->options, (std::vector<std::string>{"1"}));
  EXPECT_FALSE(ParseRequirement("require board").has_value());
  EXPECT_FALSE(ParseRequirement("=x").has_value());
  EXPECT_FALSE(ParseRequirement("require-for-product:p").has_value());
}

TEST(ProductOutTest, LongLinesAreLinearAndBounded) {
  // 30,000 characters once crashed a recursive regex (SIGSEGV).
  std::string line = "require board=" + std::string(30000, 'x');
  EXPECT_FALSE(ParseRequirement(line).has_value());
  line = "require board=" + std::string(kMaxRequirementLine - 14, 'x');
  ASSERT_EQ(line.size(), kMaxRequirementLine);
  auto r = ParseRequirement(line);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->options[0].size(), kMaxRequirementLine - 14);
  EXPECT_FALSE(ParseRequirement(std::string(kMaxRequirementLine, '|')).has_value());
  EXPECT_FALSE(ParseRequirement(std::string(kMaxRequirementLine, ' ')).has_value());
}

TEST(ProductOutTest, BootAndSystemAreMandatory) {
  int mandatory = 0;
  for (const ProductImage& i : ProductImages()) {
    if (!i.optional) {
      ++mandatory;
      EXPECT_TRUE(std::string(i.file) == "boot.img" || std::string(i.file) == "system.img") << i.file;
    }
  }
  EXPECT_EQ(mandatory, 2);
}

}  // namespace
}  // namespace flashpipe::host
