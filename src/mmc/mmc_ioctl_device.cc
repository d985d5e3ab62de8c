// MmcIoctlDevice: MMC_IOC_CMD on the card's whole-device node.
#include <fcntl.h>
#include <sys/ioctl.h>
#include <sys/stat.h>

#include <filesystem>

#include "mmc/boot_area.h"
#include "mmc/mmc_device.h"

namespace flashpipe::mmc {
namespace {

// "mmcblk0p2" -> true: the kernel refuses MMC_IOC_CMD on partitions (EPERM).
bool IsPartitionName(std::string_view name) {
  size_t p = name.rfind('p');
  return name.starts_with("mmcblk") && p > 6 && p + 1 < name.size() &&
         name.find_first_not_of("0123456789", p + 1) == std::string_view::npos;
}

bool IsCardName(std::string_view name) {
  return name.starts_with("mmcblk") && name.size() > 6 &&
         name.find_first_not_of("0123456789", 6) == std::string_view::npos;
}

}  // namespace

Result<std::unique_ptr<MmcIoctlDevice>> MmcIoctlDevice::Open(const std::string& path, const MmcOpenOptions& options) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return ErrnoError("cannot stat " + path);
  if (!S_ISBLK(st.st_mode)) {
    return InvalidArgument(fmt::format("{} is not a block device; give an MMC card's device (/dev/mmcblkN)", path));
  }
  FP_ASSIGN_OR_RETURN(std::string block, BlockNameOf(path));
  std::string node = path;
  if (auto boot = ParseBootAreaName(block)) {
    // The card's own node: on a boot area's node the kernel would switch
    // PARTITION_ACCESS to that boot area before every command.
    std::error_code ec;
    node = (std::filesystem::canonical(path, ec).parent_path() / boot->card).string();
    block = boot->card;
  } else if (IsPartitionName(block)) {
    return InvalidArgument(fmt::format("{} is a partition ({}); the card's commands go to the whole device, /dev/{}",
                                       path, block, block.substr(0, block.rfind('p'))));
  } else if (!IsCardName(block)) {
    return InvalidArgument(fmt::format("{} ({}) is not an MMC block device; give /dev/mmcblkN", path, block));
  }
  auto dev = std::unique_ptr<MmcIoctlDevice>(new MmcIoctlDevice());
  dev->name_ = node;
  dev->block_ = block;
  auto type = ReadSysfsValue(fmt::format("{}/block/{}/device/type", options.sysfs_root, block));
  if (type.ok()) dev->type_ = *type;
  dev->fd_ = UniqueFd(::open(node.c_str(), (options.writable ? O_RDWR : O_RDONLY) | O_CLOEXEC));
  if (!dev->fd_.valid()) return ErrnoError("cannot open " + node);
  return dev;
}

Status MmcIoctlDevice::Issue(mmc_ioc_cmd& cmd) {
  if (::ioctl(fd_.get(), MMC_IOC_CMD, &cmd) != 0) {
    int e = errno;
    if (e == EPERM) return IoError(fmt::format("{}: MMC_IOC_CMD CMD{} refused (needs CAP_SYS_RAWIO: run as root)", name_, cmd.opcode), e);
    return IoError(fmt::format("{}: MMC_IOC_CMD CMD{}", name_, cmd.opcode), e);
  }
  return Status::Ok();
}

}  // namespace flashpipe::mmc
