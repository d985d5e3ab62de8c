// The card's EXT_CSD read and written through an MmcDevice, as mmc-utils
// does it: SEND_EXT_CSD (CMD8: R1, ADTC, one 512-byte block) and SWITCH
// (CMD6: write byte access, R1b, AC). Every write is checked first against
// what the card reports (mmc/ext_csd.h: reserved values, boot areas it does
// not have, locked fields) and then confirmed by reading EXT_CSD back: the
// kernel's ioctl path does not report a SWITCH_ERROR, so a value the card
// refused shows only there, and is an error.
//
// An SD card (sysfs device/type SD) has no EXT_CSD: reading it fails with a
// message saying so, after CMD8 went to the card (an SD card takes CMD8 as
// SEND_IF_COND, which it ignores outside the idle state); SWITCH is never
// sent to one (CMD6 is SWITCH_FUNC there).
#pragma once

#include <optional>

#include "base/status.h"
#include "mmc/ext_csd.h"
#include "mmc/mmc_device.h"

namespace flashpipe::mmc {

inline constexpr uint32_t kCmdSwitch = 6;
inline constexpr uint32_t kCmdSendExtCsd = 8;

// R1 card status bits that mean the command failed (JEDEC 6.13): address
// and block-length errors, WP_VIOLATION, COM_CRC_ERROR, ILLEGAL_COMMAND,
// CARD_ECC_FAILED, CC_ERROR, ERROR, CID/CSD_OVERWRITE, SWITCH_ERROR (bit 7).
inline constexpr uint32_t kR1ErrorBits = 0xFDF90080;
inline constexpr uint32_t kR1SwitchError = 1u << 7;
inline constexpr uint32_t kR1IllegalCommand = 1u << 22;

Result<ExtCsd> ReadExtCsd(MmcDevice& dev);

// One SWITCH (write byte) without any check or read-back: the building
// block, exposed for tests of the card model.
Status SwitchByte(MmcDevice& dev, uint8_t index, uint8_t value);

// What a write changed: EXT_CSD before and after (read back).
struct FieldChange {
  uint8_t index = 0;
  ExtCsd before, after;
  bool changed() const { return before[index] != after[index]; }
};

// SWITCH of EXT_CSD[index] to `value`, then EXT_CSD read back; an error
// unless it reads `value`. Nothing is sent when it holds `value` already.
Result<FieldChange> WriteField(MmcDevice& dev, const ExtCsd& before, uint8_t index, uint8_t value);

// PARTITION_CONFIG [179] as U-Boot's `mmc partconf DEV ACK PART ACCESS`;
// PARTITION_ACCESS, when not given, is kept as the card has it (as
// mmc-utils' `bootpart enable`).
struct PartConfRequest {
  bool boot_ack = false;
  uint8_t boot_partition = 0;
  std::optional<uint8_t> partition_access;
};
Result<FieldChange> SetPartitionConfig(MmcDevice& dev, const PartConfRequest& request);

// BOOT_BUS_CONDITIONS [177] as U-Boot's `mmc bootbus DEV WIDTH RESET MODE`.
Result<FieldChange> SetBootBus(MmcDevice& dev, const BootBus& request);

}  // namespace flashpipe::mmc
