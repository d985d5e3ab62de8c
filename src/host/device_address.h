// Device addresses as `-s` takes them (the AOSP client's syntax):
//   tcp:HOST[:PORT]   fastboot over TCP (port 5554 by default)
//   udp:HOST[:PORT]   fastboot over UDP (port 5554 by default)
//   usb:PATH          the USB device at that place on the bus ("usb:1-1.2")
//   anything else     the USB device with that serial number
// An empty address (no -s, no ANDROID_SERIAL) is the first fastboot USB
// device found.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "base/status.h"
#include "host/transport.h"
#include "host/usb_backend.h"
#include "wire/net.h"

namespace flashpipe::host {

struct DeviceAddress {
  enum class Via { kUsb, kTcp, kUdp } via = Via::kUsb;
  std::string text;       // as given
  wire::HostPort net;     // kTcp, kUdp
};

Result<DeviceAddress> ParseDeviceAddress(std::string_view text);

// Whether a USB device answers to `text` (its serial, or "usb:" + its path;
// any device for an empty text).
bool UsbMatches(const UsbDeviceInfo& device, std::string_view text);

// Opens a transport to the device (USB through `usb`, which may be null
// when no USB address is used).
Result<std::unique_ptr<Transport>> ConnectDevice(const DeviceAddress& address, const TransportOptions& options,
                                                 UsbBackend* usb);

}  // namespace flashpipe::host
