// LibUsbBackend: UsbBackend on libusb-1.0. Every List() and Open() uses
// a libusb context that scanned the bus less than a second before (the one
// the last List or the start-up check made, else a new one; one context
// per opened device, kept until it is closed): a new context scans the bus again, whereas an old one learns
// about devices that come and go only from udevd's events (Debian builds
// libusb on libudev), which a container, a chroot or the test VM has not.
// So a device that comes back (--retry, "waiting for device") is found
// with or without udevd. Every call may come from any thread. A kernel
// driver bound to the interface is detached while it is claimed.
// List() opens no device: serial numbers come from sysfs (the kernel read
// them at enumeration), so only the devices a command names are opened and
// claimed, and other processes keep theirs; only without sysfs is each
// fastboot device opened briefly to ask for its serial.
#pragma once

#include <memory>

#include "host/usb_backend.h"

namespace flashpipe::host {

// The process's backend; an error when libusb cannot start (no USB on this machine is not an error: List() is then empty).
Result<UsbBackend*> LibUsb();

}  // namespace flashpipe::host
