// Android's A/B boot control block ("bootloader_control"), as AOSP's
// bootloader_message.h lays it out and its boot control HAL and U-Boot's
// android_ab read it: 32 bytes at byte 2048 of the misc partition (the
// `slot_suffix` field of struct bootloader_message_ab, after the 2 KiB
// bootloader_message). Little-endian, bit-fields from the low bit up:
//
//   0  slot_suffix[4]   NUL-terminated suffix ("_a")
//   4  magic            u32 0x42414342 ("BCAB")
//   8  version          u8, 1
//   9  nb_slot:3 recovery_tries_remaining:3 (then bits the HAL may use)
//  10  reserved0[2]
//  12  slot_info[4]     2 bytes each: priority:4 tries_remaining:3
//                       successful_boot:1 | verity_corrupted:1 reserved:7
//  20  reserved1[8]
//  28  crc32_le         u32, CRC-32 (zlib's) of bytes 0..27
//
// A bootloader boots the bootable slot (priority > 0, and tries_remaining > 0
// or successful_boot) of highest priority. SetActive does
// what the HAL's setActiveBootSlot does: the slot gets priority 15 and 6
// tries, any other slot at 15 drops to 14, the verity bit is cleared when
// the slot changes; it also points slot_suffix at the slot, for bootloaders
// that read only that. Bits it does not own are left as they were.
// Pure: bytes in, bytes out (misc_slot.h does the I/O).
#pragma once

#include <array>
#include <cstdint>

#include "base/status.h"

namespace flashpipe::fastboot {

inline constexpr uint64_t kBootControlOffset = 2048;
inline constexpr uint32_t kBootControlMagic = 0x42414342;
inline constexpr uint8_t kBootControlVersion = 1;
inline constexpr unsigned kMaxSlots = 4;

using BootControlBytes = std::array<uint8_t, 32>;

struct SlotMetadata {
  unsigned priority = 0;         // 0..15, 0 = unbootable
  unsigned tries_remaining = 0;  // 0..7
  bool successful_boot = false;
  bool verity_corrupted = false;
};

// Magic and CRC right (what the HAL and U-Boot accept before anything else).
bool HasValidBootControl(const BootControlBytes& b);
uint32_t BootControlCrc(const BootControlBytes& b);  // over bytes 0..27
unsigned SlotCount(const BootControlBytes& b);
SlotMetadata GetSlot(const BootControlBytes& b, unsigned slot);

// Priority > 0, and tries left or booted successfully once.
bool IsBootable(const SlotMetadata& m);
// The slot a bootloader boots next: the bootable slot of highest priority,
// `preferred` among equals; -1 when none is bootable.
int NextBootSlot(const BootControlBytes& b, unsigned preferred);

// What the HAL writes over a missing or corrupt block: suffix of `current`,
// `nb_slot` slots of priority 7 and 7 tries (the current one marked
// successful), the other entries unbootable. REQUIRES: current < nb_slot <= 4.
BootControlBytes DefaultBootControl(unsigned nb_slot, unsigned current);

// Makes `slot` the one to boot next (see above). `current` is the slot the
// device was active on before. Fails, changing nothing, on a block newer
// than version 1 or one that manages fewer slots than `slot` needs.
// REQUIRES: HasValidBootControl(*b).
Status SetActiveSlot(BootControlBytes* b, unsigned slot, unsigned current);

}  // namespace flashpipe::fastboot
