// MmcDevice: one MMC card's command channel, the kernel's MMC_IOC_CMD
// (linux/mmc/ioctl.h) or a fake of it. Each Issue() is one command with its
// response and, for data commands, one transfer through `data_ptr`, exactly
// as the ioctl takes it; what a command means is decided above it
// (mmc/card.h), so the fake and the kernel see the same requests.
//
//   auto dev = MmcIoctlDevice::Open("/dev/mmcblk0", {.writable = true});
//   mmc_ioc_cmd cmd = ...; FP_RETURN_IF_ERROR((*dev)->Issue(cmd));
//
// Not thread-safe; one owner.
#pragma once

#include <linux/mmc/ioctl.h>

#include <cstdint>
#include <memory>
#include <string>

#include "base/status.h"
#include "base/unique_fd.h"

namespace flashpipe::mmc {

// Response and command-type flags of mmc_ioc_cmd.flags: the kernel's
// linux/mmc/core.h values, which the uapi header does not carry.
namespace rsp {
inline constexpr unsigned kPresent = 1u << 0;
inline constexpr unsigned k136 = 1u << 1;
inline constexpr unsigned kCrc = 1u << 2;
inline constexpr unsigned kBusy = 1u << 3;
inline constexpr unsigned kOpcode = 1u << 4;
inline constexpr unsigned kCmdAc = 0u << 5;
inline constexpr unsigned kCmdAdtc = 1u << 5;
inline constexpr unsigned kSpiS1 = 1u << 7;
inline constexpr unsigned kSpiBusy = 1u << 10;
inline constexpr unsigned kR1 = kPresent | kCrc | kOpcode;
inline constexpr unsigned kR1b = kR1 | kBusy;
inline constexpr unsigned kSpiR1 = kSpiS1;
inline constexpr unsigned kSpiR1b = kSpiS1 | kSpiBusy;
}  // namespace rsp

class MmcDevice {
 public:
  virtual ~MmcDevice() = default;
  // One command. A failure of the ioctl itself (the card did not answer,
  // the host refused) is an error with the errno; the card's own R1 status
  // is in cmd.response[0] for the caller to judge.
  virtual Status Issue(mmc_ioc_cmd& cmd) = 0;
  // The device node, for messages ("/dev/mmcblk0").
  virtual const std::string& name() const = 0;
  // The card's type as sysfs reports it (device/type): "MMC", "SD", "SDIO";
  // empty when unknown.
  virtual const std::string& card_type() const = 0;
};

struct MmcOpenOptions {
  bool writable = false;              // O_RDWR (for SWITCH) rather than O_RDONLY
  std::string sysfs_root = "/sys";    // tests give a stand-in directory
};

// The kernel's MMC block driver: ioctls on the card's whole-device node
// (/dev/mmcblkN). A boot area (/dev/mmcblkNbootM) is mapped to its card, so
// that the kernel does not switch PARTITION_ACCESS to the boot area for the
// command; a partition (/dev/mmcblkNpK) or a device that is not an MMC block
// device is refused with what to give instead.
class MmcIoctlDevice final : public MmcDevice {
 public:
  static Result<std::unique_ptr<MmcIoctlDevice>> Open(const std::string& path, const MmcOpenOptions& options);
  Status Issue(mmc_ioc_cmd& cmd) override;
  const std::string& name() const override { return name_; }
  const std::string& card_type() const override { return type_; }
  // The card's block name ("mmcblk0") and the sysfs root, for boot areas.
  const std::string& block_name() const { return block_; }

 private:
  MmcIoctlDevice() = default;
  UniqueFd fd_;
  std::string name_, type_, block_;
};

}  // namespace flashpipe::mmc
