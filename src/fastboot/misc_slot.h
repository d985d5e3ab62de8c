// The active slot written where an Android bootloader reads it: the boot
// control block of the misc partition (boot_control.h), when the daemon is
// given --misc PART.
//
// Crash-safe as far as the storage allows: the block is read, changed and
// written back as one O_DIRECT write of the logical block that holds it
// (512 or 4096 bytes; a sector is written whole or not at all), then synced
// (Storage::UpdateInPlace). A block that is missing or corrupt (wrong magic
// or CRC) is first set to what AOSP's boot control HAL writes in that case;
// one newer than version 1 is left alone and the change fails.
#pragma once

#include <string>

#include "base/status.h"
#include "fastboot/boot_control.h"
#include "fastboot/storage.h"

namespace flashpipe::fastboot {

// The misc partition must hold a bootloader_message_ab (4 KiB).
Status CheckMiscPartition(const Partition& misc);

// The boot control block as misc holds it; kNotFound when it has none that
// is valid (wrong magic or CRC).
Result<BootControlBytes> ReadBootControl(Storage& storage, const Partition& misc);

// Makes `slot` ('a' or 'b') the slot to boot next; `previous` is the slot
// that was active.
Status WriteActiveSlot(Storage& storage, const Partition& misc, char slot, char previous);

}  // namespace flashpipe::fastboot
