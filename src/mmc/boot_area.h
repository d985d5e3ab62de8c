// eMMC boot areas as the kernel shows them: /dev/mmcblkNbootM, with
// /sys/block/mmcblkNbootM/force_ro, which the MMC block driver sets to 1 so
// that a boot loader is not overwritten by accident. A write to a boot area
// holds a ForceRoGuard: force_ro is switched to 0 for the write and put back
// to what it was when the guard goes (the write done, failed or cancelled),
// and, should a second signal end the process at once, from the signal
// handler (RestoreForceRoFromSignal). A SIGKILL or a power cut leaves it 0
// until the next boot, when the kernel sets it again.
//
// The sysfs root is a parameter ("/sys"), so tests use a stand-in directory.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace flashpipe::mmc {

struct BootAreaName {
  std::string card;  // "mmcblk0"
  int index = 0;     // 0 or 1 (boot area 1 or 2 in JEDEC's words)
};
// "mmcblk0boot1" -> {"mmcblk0", 1}; anything else (mmcblk0, mmcblk0p1) -> nullopt.
std::optional<BootAreaName> ParseBootAreaName(std::string_view block_name);
// The kernel's name of the block device at `path` ("/dev/disk/by-path/...-boot0"
// -> "mmcblk0boot0"): the last part of the path with symlinks followed.
Result<std::string> BlockNameOf(const std::string& path);

// The kernel's name of the block device numbered `rdev` (st_rdev), from
// SYSFS/dev/block/MAJOR:MINOR; nullopt when sysfs has no such entry.
std::optional<std::string> BlockNameOfDevice(dev_t rdev, const std::string& sysfs_root = "/sys");

// A sysfs attribute's text without the final newline.
Result<std::string> ReadSysfsValue(const std::string& path);

struct BootAreaInfo {
  std::string name;     // "mmcblk0boot0"
  bool force_ro = false;
};
// The boot areas sysfs lists for card `card` ("mmcblk0"); none on an SD card.
std::vector<BootAreaInfo> ListBootAreas(const std::string& card, const std::string& sysfs_root = "/sys");

// The boot areas of the card at `device` (/dev/mmcblkN, or one of its boot
// areas) as U-Boot's fastboot names them: {"mmc0boot0", "/dev/mmcblk0boot0"},
// ... (N is the kernel's card number); none for an SD card or a non-MMC node.
struct NamedBootArea {
  std::string name, device;
};
std::vector<NamedBootArea> FastbootBootAreas(const std::string& device, const std::string& sysfs_root = "/sys");

class ForceRoGuard {
 public:
  // For the block device `block_name`: when it is a boot area, force_ro is
  // read and, when 1, written 0; otherwise (not a boot area) the guard does
  // nothing. A boot area whose force_ro cannot be read or written is an error.
  static Result<ForceRoGuard> Release(const std::string& block_name, const std::string& sysfs_root = "/sys");
  // The same for the block device numbered `rdev` (st_rdev), named by
  // sysfs (SYSFS/dev/block/MAJOR:MINOR), whatever path it was opened by:
  // what `write` holds for each block device target while it writes.
  static Result<ForceRoGuard> ReleaseDevice(dev_t rdev, const std::string& sysfs_root = "/sys");
  ForceRoGuard() = default;
  ForceRoGuard(ForceRoGuard&& o) noexcept;
  ForceRoGuard& operator=(ForceRoGuard&& o) noexcept;
  ForceRoGuard(const ForceRoGuard&) = delete;
  ForceRoGuard& operator=(const ForceRoGuard&) = delete;
  ~ForceRoGuard();  // Restore(), its error logged

  // Puts force_ro back to 1 now (once); OK when there was nothing to restore.
  Status Restore();
  // force_ro was switched off and is not restored yet.
  bool active() const { return slot_ >= 0; }
  const std::string& path() const { return path_; }

 private:
  std::string path_;  // .../force_ro
  int slot_ = -1;     // the entry in the signal handler's table
};

// Async-signal-safe: writes 1 to every force_ro a live guard switched off.
// For a handler that is about to end the process (tools/interrupt.cc).
void RestoreForceRoFromSignal();

}  // namespace flashpipe::mmc
