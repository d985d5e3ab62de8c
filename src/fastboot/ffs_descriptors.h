// The bytes a FunctionFS function writes to and reads from ep0, for the
// fastboot interface (Linux Documentation/usb/functionfs.rst and
// include/uapi/linux/usb/functionfs.h).
//
// FastbootDescriptors() is the v2 descriptor blob written first: full-,
// high- and super-speed sets, each one interface (class ff, subclass 42,
// protocol 03, the one the fastboot client looks for) with a bulk OUT
// endpoint (ep1, wMaxPacketSize 64/512/1024) and a bulk IN endpoint (ep2);
// the super-speed endpoints each carry a companion descriptor.
// FastbootStrings() is the strings blob written next: US English, one string
// ("fastboot", the interface name). After both, the kernel creates the ep1
// and ep2 files.
//
// ParseEvents() decodes what a read of ep0 returns: 12-byte events (BIND,
// UNBIND, ENABLE, DISABLE, SETUP with its 8-byte request, SUSPEND, RESUME).
// Pure functions: no I/O.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace flashpipe::fastboot::ffs {

inline constexpr uint8_t kEndpointOut = 0x01;
inline constexpr uint8_t kEndpointIn = 0x82;
inline constexpr size_t kEventSize = 12;

std::vector<uint8_t> FastbootDescriptors();
std::vector<uint8_t> FastbootStrings();

enum class EventType : uint8_t { kBind = 0, kUnbind, kEnable, kDisable, kSetup, kSuspend, kResume };

// A control request addressed to the function (the SETUP event's payload).
struct Setup {
  uint8_t request_type = 0;  // bit 7: device-to-host (IN)
  uint8_t request = 0;
  uint16_t value = 0;
  uint16_t index = 0;
  uint16_t length = 0;
  bool in() const { return (request_type & 0x80) != 0; }
};

struct Event {
  EventType type;
  Setup setup;  // kSetup only
};

std::string_view EventName(EventType type);

// `bytes` holds whole events (a multiple of kEventSize); an unknown type is
// kCorrupt, naming it and its index.
Result<std::vector<Event>> ParseEvents(std::span<const uint8_t> bytes);

}  // namespace flashpipe::fastboot::ffs
