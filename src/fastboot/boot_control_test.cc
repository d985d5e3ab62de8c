// The bootloader_control bytes against AOSP's layout: the expected blocks
// were built by hand from the layout (Python struct and zlib.crc32), not by
// this code; then SetActiveSlot's rules, what it keeps, and what it refuses.
#include "fastboot/boot_control.h"

#include <gtest/gtest.h>

#include "base/crc32.h"

namespace flashpipe::fastboot {
namespace {

// "_a", BCAB, version 1, 2 slots; a: priority 7, 7 tries, successful; b:
// priority 7, 7 tries; CRC-32 of bytes 0..27 little-endian.
constexpr BootControlBytes kDefaultA = {0x5f, 0x61, 0x00, 0x00, 0x42, 0x43, 0x41, 0x42, 0x01, 0x02, 0x00,
                                        0x00, 0xf7, 0x00, 0x77, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
                                        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xaa, 0x83, 0xa8, 0x2e};
// The same after set_active b: "_b", b at priority 15 with 6 tries.
constexpr BootControlBytes kActiveB = {0x5f, 0x62, 0x00, 0x00, 0x42, 0x43, 0x41, 0x42, 0x01, 0x02, 0x00,
                                       0x00, 0xf7, 0x00, 0x6f, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
                                       0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x33, 0x8c, 0xd7, 0xc8};

void Reseal(BootControlBytes* b) {
  uint32_t crc = Crc32Update(0, b->data(), 28);
  for (int i = 0; i < 4; ++i) (*b)[28 + i] = static_cast<uint8_t>(crc >> (8 * i));
}

TEST(BootControl, DefaultBlockHasAospsLayout) {
  EXPECT_EQ(DefaultBootControl(2, 0), kDefaultA);
  EXPECT_TRUE(HasValidBootControl(kDefaultA));
}

TEST(BootControl, SetActiveWritesWhatTheHalWrites) {
  BootControlBytes b = kDefaultA;
  ASSERT_TRUE(SetActiveSlot(&b, 1, 0).ok());
  EXPECT_EQ(b, kActiveB);
  // Back to a: a takes 15, b drops to 14, its tries kept.
  ASSERT_TRUE(SetActiveSlot(&b, 0, 1).ok());
  EXPECT_TRUE(HasValidBootControl(b));
  EXPECT_EQ(b[1], 'a');
  SlotMetadata a = GetSlot(b, 0), bb = GetSlot(b, 1);
  EXPECT_EQ(a.priority, 15u);
  EXPECT_EQ(a.tries_remaining, 6u);
  EXPECT_TRUE(a.successful_boot);
  EXPECT_EQ(bb.priority, 14u);
  EXPECT_EQ(bb.tries_remaining, 6u);
  EXPECT_EQ(NextBootSlot(b, 1), 0);
}

TEST(BootControl, BitsItDoesNotOwnAreKept) {
  BootControlBytes b = kDefaultA;
  b[9] |= 0x38 | 0xC0;  // recovery_tries_remaining and the bits above it
  b[10] = 0x5a;         // reserved0
  b[15] = 0xfe;         // slot b: reserved bits, verity clear
  b[20] = 0x77;         // reserved1
  Reseal(&b);
  BootControlBytes before = b;
  ASSERT_TRUE(SetActiveSlot(&b, 1, 0).ok());
  EXPECT_EQ(b[9], before[9]);
  EXPECT_EQ(b[10], before[10]);
  EXPECT_EQ(b[15], before[15]);
  EXPECT_EQ(b[20], before[20]);
  EXPECT_TRUE(HasValidBootControl(b));
}

TEST(BootControl, VerityBitClearedOnlyWhenTheSlotChanges) {
  BootControlBytes b = kDefaultA;
  b[13] |= 1;  // a: verity_corrupted
  b[15] |= 1;  // b: verity_corrupted
  Reseal(&b);
  ASSERT_TRUE(SetActiveSlot(&b, 0, 0).ok());  // a again: cancels an update, keeps a's bit
  EXPECT_TRUE(GetSlot(b, 0).verity_corrupted);
  ASSERT_TRUE(SetActiveSlot(&b, 1, 0).ok());
  EXPECT_FALSE(GetSlot(b, 1).verity_corrupted);
}

TEST(BootControl, NewerVersionAndMissingSlotAreRefusedUnchanged) {
  BootControlBytes b = kDefaultA;
  b[8] = 2;
  Reseal(&b);
  BootControlBytes before = b;
  EXPECT_EQ(SetActiveSlot(&b, 1, 0).code(), Code::kUnsupported);
  EXPECT_EQ(b, before);
  b = DefaultBootControl(1, 0);
  before = b;
  EXPECT_EQ(SetActiveSlot(&b, 1, 0).code(), Code::kUnsupported);
  EXPECT_EQ(b, before);
}

TEST(BootControl, CorruptionIsDetected) {
  BootControlBytes b = kDefaultA;
  b[12] ^= 1;
  EXPECT_FALSE(HasValidBootControl(b));
  b = kDefaultA;
  b[4] = 0;
  Reseal(&b);
  EXPECT_FALSE(HasValidBootControl(b));
}

TEST(BootControl, NextBootSlotSkipsUnbootableSlots) {
  BootControlBytes b = kActiveB;
  EXPECT_EQ(NextBootSlot(b, 0), 1);
  b[14] = 0x0f;  // b: priority 15, no tries, not successful
  Reseal(&b);
  EXPECT_FALSE(IsBootable(GetSlot(b, 1)));
  EXPECT_EQ(NextBootSlot(b, 1), 0);
  b[12] = 0x00;  // a: priority 0
  Reseal(&b);
  EXPECT_EQ(NextBootSlot(b, 0), -1);
  EXPECT_EQ(NextBootSlot(kDefaultA, 1), 1);  // equal priorities: the preferred one
}

}  // namespace
}  // namespace flashpipe::fastboot
