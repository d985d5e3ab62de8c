#include "fastboot/misc_slot.h"

#include <algorithm>

#include "base/log.h"
#include "fastboot/boot_control.h"

namespace flashpipe::fastboot {
namespace {

constexpr uint64_t kBootloaderMessageAbSize = 4096;
constexpr unsigned kSlots = 2;  // a and b

}  // namespace

Status CheckMiscPartition(const Partition& misc) {
  if (misc.size >= kBootloaderMessageAbSize) return Status::Ok();
  return InvalidArgument(fmt::format("--misc '{}': {} bytes, a bootloader_message_ab needs {}", misc.name, misc.size,
                                     kBootloaderMessageAbSize));
}

Result<BootControlBytes> ReadBootControl(Storage& storage, const Partition& misc) {
  FP_RETURN_IF_ERROR(CheckMiscPartition(misc));
  BootControlBytes block;
  FP_RETURN_IF_ERROR(storage.Read(misc, kBootControlOffset, block).WithContext(fmt::format("misc '{}'", misc.name)));
  if (!HasValidBootControl(block)) return NotFound(fmt::format("misc '{}': no valid bootloader_control", misc.name));
  return block;
}

Status WriteActiveSlot(Storage& storage, const Partition& misc, char slot, char previous) {
  FP_RETURN_IF_ERROR(CheckMiscPartition(misc));
  auto edit = [&](std::span<uint8_t> bytes) {
    BootControlBytes block;
    std::copy(bytes.begin(), bytes.end(), block.begin());
    if (!HasValidBootControl(block)) {
      log::Warn("misc '{}': no valid bootloader_control: starting from the boot control HAL's defaults", misc.name);
      block = DefaultBootControl(kSlots, static_cast<unsigned>(previous - 'a'));
    }
    FP_RETURN_IF_ERROR(SetActiveSlot(&block, static_cast<unsigned>(slot - 'a'), static_cast<unsigned>(previous - 'a')));
    std::copy(block.begin(), block.end(), bytes.begin());
    return Status::Ok();
  };
  return storage.UpdateInPlace(misc, kBootControlOffset, sizeof(BootControlBytes), edit)
      .WithContext(fmt::format("misc '{}'", misc.name));
}

}  // namespace flashpipe::fastboot
