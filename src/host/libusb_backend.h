// LibUsbBackend: UsbBackend on libusb-1.0. One libusb context for the
// process; every call may come from any thread (libusb's synchronous
// calls are thread-safe). A kernel driver bound to the interface is
// detached while it is claimed.
#pragma once

#include <memory>

#include "host/usb_backend.h"

namespace flashpipe::host {

// The process's backend (libusb_init once); an error when libusb cannot
// start (no USB on this machine is not an error: List() is then empty).
Result<UsbBackend*> LibUsb();

}  // namespace flashpipe::host
