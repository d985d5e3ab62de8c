// Fastboot over USB, the framing both ends agree on: the interface a client
// looks for (class ff, subclass 42, protocol 03, matched by class, never by
// vendor and product ids), one bulk endpoint each way, a command as one bulk
// OUT transfer, a response as one bulk IN transfer of at most 64 bytes, the
// data phase as bulk OUT transfers of any size summing to the announced count.
#pragma once

#include <cstddef>
#include <cstdint>

namespace flashpipe::wire::usb {

inline constexpr uint8_t kInterfaceClass = 0xff;
inline constexpr uint8_t kInterfaceSubclass = 0x42;
inline constexpr uint8_t kInterfaceProtocol = 0x03;
inline constexpr size_t kMaxResponse = 64;

}  // namespace flashpipe::wire::usb
