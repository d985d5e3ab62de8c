#include "fastboot/reason_text.h"

#include <gtest/gtest.h>

#include "wire/protocol.h"

namespace flashpipe::fastboot {
namespace {

using Lines = std::vector<std::string>;

TEST(WrapWordsTest, BreaksAtSpacesNeverInsideAWord) {
  EXPECT_EQ(WrapWords("alpha beta gamma delta", 11), (Lines{"alpha beta", "gamma delta"}));
  EXPECT_EQ(WrapWords("alpha beta", 10), (Lines{"alpha beta"}));
  EXPECT_EQ(WrapWords("  alpha   beta  ", 5), (Lines{"alpha", "beta"}));
  EXPECT_EQ(WrapWords("", 10), Lines{});
}

TEST(WrapWordsTest, CutsOnlyAWordLongerThanALine) {
  EXPECT_EQ(WrapWords("ab /very/long/path x", 6), (Lines{"ab", "/very/", "long/p", "ath x"}));
}

TEST(WrapWordsTest, ARealReasonKeepsEveryWordWhole) {
  std::string reason =
      "flash 'system': invalid sparse image: chunk 12 at byte 0x3000: RAW total_sz 40 < header 12 + "
      "payload 4096 (blk_sz 4096)";
  Lines lines = WrapWords(reason, wire::kMaxMessage);
  std::string joined;
  for (const auto& l : lines) {
    EXPECT_LE(l.size(), wire::kMaxMessage);
    EXPECT_NE(l.front(), ' ');
    EXPECT_NE(l.back(), ' ');
    joined += (joined.empty() ? "" : " ") + l;
  }
  EXPECT_EQ(joined, reason);
  EXPECT_EQ(lines[0], "flash 'system': invalid sparse image: chunk 12 at byte");
}

TEST(ShortReasonTest, FitsAsIs) { EXPECT_EQ(ShortReason("partition 'x' not found", 60), "partition 'x' not found"); }

TEST(ShortReasonTest, KeepsWholeLeadingParts) {
  EXPECT_EQ(ShortReason("invalid sparse image: chunk 2 at input byte 0x3038: CRC32 0x12345678 != 0x8dafdacc, "
                        "the CRC-32 of the 28672 bytes of output so far",
                        60),
            "invalid sparse image: chunk 2 at input byte 0x3038");
  EXPECT_EQ(ShortReason("write-behind to 'system' failed (No space left on device): partition 'system': "
                        "write at 0x100000: No space left on device",
                        60),
            "write-behind to 'system' failed (No space left on device)");
}

// A leading part that is only the command's name is not the whole FAIL:
// the reason after it is kept as far as it fits.
TEST(ShortReasonTest, ALabelAloneIsNotTheReason) {
  std::string s = ShortReason("create-logical-partition: group 'main' of 8388608 bytes has 1048576 left, "
                              "system needs 4194304", 60);
  EXPECT_LE(s.size(), 60u);
  EXPECT_EQ(s.rfind("create-logical-partition: group 'main'", 0), 0u) << s;
}

TEST(ShortReasonTest, OneLongPartEndsWithWholeWords) {
  std::string r = "a download of 300000000 bytes is larger than max-download-size 268435456 of this device";
  std::string s = ShortReason(r, 60);
  EXPECT_LE(s.size(), 60u);
  EXPECT_EQ(s, "a download of 300000000 bytes is larger than...");
}

}  // namespace
}  // namespace flashpipe::fastboot
