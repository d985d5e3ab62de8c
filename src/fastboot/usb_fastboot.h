// UsbFastboot: `flashpipe serve --usb` put together. The FunctionFS instance
// is either one the system mounted (--usb-ffs DIR: the integrator owns the
// gadget and binds it once the descriptors are written) or one of a gadget
// made here (UsbGadget). Start() writes the descriptors to its ep0, opens
// the endpoints (AioEndpoints), starts a UsbServer and, for a gadget of its
// own, binds it to the UDC; Stop() takes it all down in reverse and removes
// what was made. With a gadget of its own, reboot*/continue detach it from
// the bus for a second, so the host sees the device go and come back.
#pragma once

#include <memory>
#include <string>

#include "base/status.h"
#include "base/unique_fd.h"
#include "fastboot/device.h"
#include "fastboot/ffs_aio.h"
#include "fastboot/usb_gadget.h"
#include "fastboot/usb_server.h"

namespace flashpipe::fastboot {

struct UsbServeConfig {
  std::string ffs_dir;  // a mounted FunctionFS instance; empty: make a gadget
  GadgetConfig gadget;
  UsbOptions transport;
};

class UsbFastboot {
 public:
  static Result<std::unique_ptr<UsbFastboot>> Start(FastbootDevice* device, const UsbServeConfig& config);
  ~UsbFastboot();
  // Idempotent.
  void Stop();
  // "UDC dummy_udc.0, serial 0123456789abcdef" or "FunctionFS /dev/usb-ffs/fastboot".
  const std::string& where() const { return where_; }

 private:
  UsbFastboot() = default;

  std::string where_;
  std::unique_ptr<UsbGadget> gadget_;
  UniqueFd ep0_;
  std::unique_ptr<AioEndpoints> endpoints_;
  std::unique_ptr<UsbServer> server_;
};

}  // namespace flashpipe::fastboot
