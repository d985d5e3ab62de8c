#include "mmc/boot_wp.h"

#include "base/log.h"
#include "mmc/boot_area.h"
#include "mmc/card.h"
#include "mmc/ext_csd.h"

namespace flashpipe::mmc {

Result<std::unique_ptr<MmcDevice>> OpenCardForWp(const std::string& card_node) {
  FP_ASSIGN_OR_RETURN(auto dev, MmcIoctlDevice::Open(card_node, {}));
  return std::unique_ptr<MmcDevice>(std::move(dev));
}

Status RefuseWriteProtectedBootArea(dev_t rdev, const std::string& sysfs_root, const OpenCardFn& open) {
  auto block = BlockNameOfDevice(rdev, sysfs_root);
  if (!block) return Status::Ok();  // no sysfs entry: not a boot area the kernel knows
  const std::string& name = *block;
  auto area = ParseBootAreaName(name);
  if (!area) return Status::Ok();
  auto card = open("/dev/" + area->card);
  if (!card.ok()) {
    log::Warn("{}: write protection not known ({})", name, card.status().ToString());
    return Status::Ok();
  }
  auto ext = ReadExtCsd(**card);
  if (!ext.ok()) {
    log::Warn("{}: write protection not known ({})", name, ext.status().ToString());
    return Status::Ok();
  }
  uint8_t wp = ext->boot_wp_status(area->index);
  if (wp == 0) return Status::Ok();
  return Unsupported(fmt::format(
      "{} is write-protected ({}: BOOT_WP_STATUS [174] = 0x{:02x}){}; nothing written", name, BootWpName(wp),
      ext->bytes()[field::kBootWpStatus], wp == 1 ? ", until the card is reset" : ", for good"));
}

}  // namespace flashpipe::mmc
