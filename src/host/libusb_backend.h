// LibUsbBackend: UsbBackend on libusb-1.0. Every List() and Open() starts
// its own libusb context, and an opened device keeps its context until it
// is closed: a new context scans the bus again, whereas an old one learns
// about devices that come and go only from udevd's events (Debian builds
// libusb on libudev), which a container, a chroot or the test VM has not.
// So a device that comes back (--retry, "waiting for device") is found
// with or without udevd. Every call may come from any thread. A kernel
// driver bound to the interface is detached while it is claimed.
#pragma once

#include <memory>

#include "host/usb_backend.h"

namespace flashpipe::host {

// The process's backend; an error when libusb cannot start (no USB on this machine is not an error: List() is then empty).
Result<UsbBackend*> LibUsb();

}  // namespace flashpipe::host
