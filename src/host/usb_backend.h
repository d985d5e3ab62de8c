// UsbBackend: the little of libusb the host needs, as an interface, so the
// USB transport is tested against a fake handle (device_address_test.cc) and runs on
// libusb-1.0 in production (libusb_backend.h).
//
// List() finds every interface that speaks fastboot (class ff, subclass 42,
// protocol 03, as the AOSP client matches; wire/usb.h) with one bulk
// endpoint each way, whoever made the device. path is the device's place on
// the bus as sysfs names it ("1-1.2": bus 1, ports 1 then 2), what the AOSP
// client prints as "usb:1-1.2"; serial is its serial number string, empty
// when it could not be read (no permission: writable is false then).
//
// A UsbHandle moves bytes on the two bulk endpoints of one opened
// interface: Out sends one transfer, In reads one (it completes early when
// the device ends a transfer with a short packet). Both wait at most
// `timeout`: kTimedOut; a device that went away is kCancelled. Commands
// and responses use these.
//
// Data phases keep transfers in flight (usb_queue.h) through Submit, Reap
// and Cancel, which never block on the device except Reap: Submit queues one
// transfer on the OUT endpoint (`buf` is sent) or the IN endpoint (`buf` is
// filled) and returns its tag at once; the bytes stay the caller's and must
// neither move nor be freed until Reap has given that tag back. Transfers
// on one endpoint run in the order they were submitted, with no time limit
// of their own and never a zero-length packet. Reap waits at most `timeout`
// for the next finished transfer (nullopt: none finished in that time):
// its status (Ok; kCancelled when Cancel ended it or the device went away;
// kProtocol when the device sent more than asked) and how many bytes it
// moved, also when it failed. Cancel asks a transfer to end early; it still
// comes back from Reap. Submit fails with kBusy when the kernel's memory for
// transfers in flight is used up (usbfs_memory_mb, shared by every device
// of the system): the caller retries after one of its own came back.
// REQUIRES: every submitted transfer reaped before the handle is destroyed
// (the libusb handle cancels and reaps leftovers itself, as a last resort).
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "base/status.h"

namespace flashpipe::host {

struct UsbDeviceInfo {
  std::string path;    // "1-1.2"
  std::string serial;
  uint16_t vendor = 0, product = 0;
  bool writable = true;
  // Internal to the backend: which device and interface to open.
  uint8_t bus = 0, address = 0, interface = 0, ep_in = 0, ep_out = 0;
  uint16_t max_packet = 512;
};

enum class UsbDir : uint8_t { kOut, kIn };

struct UsbDone {
  uint64_t tag = 0;
  Status status;
  size_t actual = 0;  // bytes moved
};

class UsbHandle {
 public:
  virtual ~UsbHandle() = default;
  virtual Result<size_t> Out(std::span<const uint8_t> data, std::chrono::milliseconds timeout) = 0;
  virtual Result<size_t> In(std::span<uint8_t> buf, std::chrono::milliseconds timeout) = 0;

  virtual Result<uint64_t> Submit(UsbDir dir, std::span<uint8_t> buf) = 0;
  virtual Result<std::optional<UsbDone>> Reap(std::chrono::milliseconds timeout) = 0;
  virtual void Cancel(uint64_t tag) = 0;
};

class UsbBackend {
 public:
  virtual ~UsbBackend() = default;
  virtual Result<std::vector<UsbDeviceInfo>> List() = 0;
  virtual Result<std::unique_ptr<UsbHandle>> Open(const UsbDeviceInfo& device) = 0;
};

}  // namespace flashpipe::host
