#include "fastboot/boot_control.h"

#include <cstring>

#include "base/crc32.h"
#include "base/endian.h"

namespace flashpipe::fastboot {
namespace {

constexpr size_t kMagicAt = 4, kVersionAt = 8, kSlotsAt = 9, kSlotInfoAt = 12, kCrcAt = 28;
constexpr unsigned kActivePriority = 15;
constexpr unsigned kActiveTries = 6;
constexpr unsigned kDefaultPriority = 7;
constexpr unsigned kDefaultTries = 7;

void PutSlot(BootControlBytes* b, unsigned slot, const SlotMetadata& m) {
  uint8_t* p = b->data() + kSlotInfoAt + 2 * slot;
  p[0] = static_cast<uint8_t>((m.priority & 0xF) | (m.tries_remaining & 0x7) << 4 | (m.successful_boot ? 0x80 : 0));
  p[1] = static_cast<uint8_t>((p[1] & 0xFE) | (m.verity_corrupted ? 1 : 0));  // reserved bits kept
}

void PutSuffix(BootControlBytes* b, unsigned slot) {
  char suffix[4] = {'_', static_cast<char>('a' + slot), 0, 0};
  std::memcpy(b->data(), suffix, sizeof suffix);
}

void Seal(BootControlBytes* b) { StoreLE<uint32_t>(b->data() + kCrcAt, BootControlCrc(*b)); }

}  // namespace

uint32_t BootControlCrc(const BootControlBytes& b) { return Crc32Update(0, b.data(), kCrcAt); }

bool HasValidBootControl(const BootControlBytes& b) {
  return LoadLE<uint32_t>(b.data() + kMagicAt) == kBootControlMagic &&
         LoadLE<uint32_t>(b.data() + kCrcAt) == BootControlCrc(b);
}

unsigned SlotCount(const BootControlBytes& b) { return b[kSlotsAt] & 0x7; }

SlotMetadata GetSlot(const BootControlBytes& b, unsigned slot) {
  const uint8_t* p = b.data() + kSlotInfoAt + 2 * slot;
  return {.priority = p[0] & 0xFu, .tries_remaining = (p[0] >> 4) & 0x7u, .successful_boot = (p[0] & 0x80) != 0,
          .verity_corrupted = (p[1] & 1) != 0};
}

bool IsBootable(const SlotMetadata& m) { return m.priority > 0 && (m.tries_remaining > 0 || m.successful_boot); }

int NextBootSlot(const BootControlBytes& b, unsigned preferred) {
  int best = -1;
  unsigned best_priority = 0;
  for (unsigned i = 0; i < SlotCount(b) && i < kMaxSlots; ++i) {
    SlotMetadata m = GetSlot(b, i);
    if (!IsBootable(m)) continue;
    if (m.priority > best_priority || (m.priority == best_priority && i == preferred)) {
      best = static_cast<int>(i);
      best_priority = m.priority;
    }
  }
  return best;
}

BootControlBytes DefaultBootControl(unsigned nb_slot, unsigned current) {
  BootControlBytes b{};
  PutSuffix(&b, current);
  StoreLE<uint32_t>(b.data() + kMagicAt, kBootControlMagic);
  b[kVersionAt] = kBootControlVersion;
  b[kSlotsAt] = static_cast<uint8_t>(nb_slot & 0x7);  // recovery_tries_remaining 0
  for (unsigned i = 0; i < nb_slot && i < kMaxSlots; ++i) {
    PutSlot(&b, i, {.priority = kDefaultPriority, .tries_remaining = kDefaultTries, .successful_boot = i == current});
  }
  Seal(&b);
  return b;
}

Status SetActiveSlot(BootControlBytes* b, unsigned slot, unsigned current) {
  if ((*b)[kVersionAt] > kBootControlVersion) {
    return Unsupported(fmt::format("bootloader_control version {} is newer than {}: not changed", (*b)[kVersionAt],
                                   kBootControlVersion));
  }
  unsigned n = SlotCount(*b);
  if (slot >= n || slot >= kMaxSlots) {
    return Unsupported(fmt::format("bootloader_control manages {} slots, not slot {}", n, static_cast<char>('a' + slot)));
  }
  for (unsigned i = 0; i < n && i < kMaxSlots; ++i) {
    SlotMetadata m = GetSlot(*b, i);
    if (i != slot && m.priority >= kActivePriority) {
      m.priority = kActivePriority - 1;
      PutSlot(b, i, m);
    }
  }
  SlotMetadata m = GetSlot(*b, slot);
  m.priority = kActivePriority;
  m.tries_remaining = kActiveTries;
  if (slot != current) m.verity_corrupted = false;
  PutSlot(b, slot, m);
  PutSuffix(b, slot);
  Seal(b);
  return Status::Ok();
}

}  // namespace flashpipe::fastboot
