// UsbGadget: the USB gadget `flashpipe serve --usb` makes for itself
// through configfs when the system has none for it: one configuration with
// one FunctionFS function, mounted under /run/flashpipe/NAME, bound to a
// USB device controller (UDC).
//
//   /sys/kernel/config/usb_gadget/NAME/      idVendor, idProduct, UDC
//     strings/0x409/                          serialnumber, manufacturer, product
//     configs/c.1/ (strings/0x409/)           ffs.NAME -> functions/ffs.NAME
//     functions/ffs.NAME/
//
// NAME is "flashpipe-" plus the UDC's name, so one daemon per UDC.
// Create() first checks what the kernel must offer and refuses naming what
// is missing (configfs, libcomposite, usb_f_fs, a UDC), then records each
// thing it makes; Remove() (and the destructor) undoes exactly those, in
// reverse. A gadget of the same name left unbound by a daemon that did not
// exit cleanly is removed first; a bound one means another daemon serves
// that UDC, and Create() refuses. Bind() attaches to the UDC, which the
// kernel allows only once the function's descriptors are written.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "base/status.h"

namespace flashpipe::fastboot {

struct GadgetConfig {
  uint16_t vendor_id = 0x18d1;
  uint16_t product_id = 0x4ee0;
  std::string serial;
  std::string manufacturer = "flashpipe";
  std::string product = "flashpipe";
  std::string udc;  // empty: the first in /sys/class/udc
  // Where the kernel's files are (tests point these elsewhere).
  std::string configfs = "/sys/kernel/config";
  std::string udc_class = "/sys/class/udc";
  std::string run_dir = "/run/flashpipe";
};

class UsbGadget {
 public:
  static Result<std::unique_ptr<UsbGadget>> Create(const GadgetConfig& config);
  ~UsbGadget();

  // The mounted FunctionFS instance (ep0, then ep1 and ep2).
  const std::string& ffs_dir() const { return mount_; }
  const std::string& udc() const { return udc_; }
  Status Bind();
  Status Unbind();
  // Unbinds and removes what Create() made. The FunctionFS files must be
  // closed first (the instance cannot be unmounted while they are open).
  void Remove();

 private:
  enum class Undo { kRmdir, kUnlink, kUnmount };
  UsbGadget() = default;
  Status Make(const GadgetConfig& config);
  Status Mkdir(const std::string& path);

  std::string dir_;    // configfs gadget directory
  std::string mount_;  // FunctionFS mount point
  std::string udc_;
  bool bound_ = false;
  std::vector<std::pair<Undo, std::string>> undo_;
};

// "18d1:4ee0" -> {0x18d1, 0x4ee0}.
Result<std::pair<uint16_t, uint16_t>> ParseUsbId(std::string_view text);
// A stable serial number for this machine: the first 16 characters of
// /etc/machine-id, or "flashpipe" when there is none.
std::string DefaultSerialNumber();

}  // namespace flashpipe::fastboot
