// The environment a hook (--on-set-active, --on-boot, --on-reboot,
// --on-shutdown) or an oem command runs with: the device's state as
// variables, so a script does not have to ask the daemon.
//
//   FLASHPIPE_HOOK             set-active, boot, reboot, shutdown or oem
//   FLASHPIPE_SERIALNO         getvar serialno (--serialno)
//   FLASHPIPE_PRODUCT          getvar product (--product)
//   FLASHPIPE_SLOT             the slot to boot next, a or b (with --misc as
//                              misc says; set-active: the new one); empty
//                              when the device has no A/B partitions
//   FLASHPIPE_SLOT_SUFFIX      _a or _b (empty likewise)
//   FLASHPIPE_LOCKED           1 while flashing is locked, else 0
//   FLASHPIPE_CRITICAL_LOCKED  1 while the critical partitions are locked
//   FLASHPIPE_PARTITION        the partition the hook is about, when it is
//                              about one (set-active with --misc: the misc
//                              partition), with
//   FLASHPIPE_PARTITION_PATH   the file or device that holds it,
//   FLASHPIPE_PARTITION_OFFSET its first byte there, and
//   FLASHPIPE_PARTITION_SIZE   its size in bytes.
// Hooks with something of their own to say add it (set-active:
// FLASHPIPE_PREVIOUS_SLOT; boot: FLASHPIPE_IMAGE). Pure.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "fastboot/storage.h"

namespace flashpipe::fastboot {

struct HookContext {
  std::string_view hook;
  std::string_view serialno;
  std::string_view product;
  char slot = 0;  // 0: no A/B partitions
  bool locked = false;
  bool critical_locked = true;
  const Partition* partition = nullptr;
  std::string partition_path;
  std::vector<std::string> extra;  // NAME=VALUE of the hook's own
};

std::vector<std::string> HookEnvironment(const HookContext& context);

}  // namespace flashpipe::fastboot
