// Before a write to an eMMC boot area: is the area write-protected? A boot
// area locked by BOOT_WP (power-on until the next reset, or permanently)
// takes the write's requests and fails them with EIO part way; the card's
// BOOT_WP_STATUS [174] (2 bits per area: 0 none, 1 power-on, 2 permanent)
// says so before anything is sent, so `write` refuses it with the reason.
//
//   FP_RETURN_IF_ERROR(RefuseWriteProtectedBootArea(st.st_rdev, "/sys", OpenCardForWp));
#pragma once

#include <sys/types.h>

#include <functional>
#include <memory>
#include <string>

#include "base/status.h"
#include "mmc/mmc_device.h"

namespace flashpipe::mmc {

// Opens a card's command channel by its whole-device node ("/dev/mmcblk0").
using OpenCardFn = std::function<Result<std::unique_ptr<MmcDevice>>(const std::string& card_node)>;
// The kernel's (MmcIoctlDevice, read-only).
Result<std::unique_ptr<MmcDevice>> OpenCardForWp(const std::string& card_node);

// For the block device numbered `rdev`: when sysfs names it a boot area
// (mmcblkNbootM) and its card's EXT_CSD says the area is write-protected, an
// Unsupported error naming the area, the protection and the field. OK for
// anything that is not a boot area, and when the card's EXT_CSD cannot be
// read (the write itself then tells).
Status RefuseWriteProtectedBootArea(dev_t rdev, const std::string& sysfs_root, const OpenCardFn& open);

}  // namespace flashpipe::mmc
