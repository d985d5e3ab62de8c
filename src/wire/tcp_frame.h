// Fastboot over TCP, the bytes (AOSP fastboot/README.md, "TCP Protocol v1").
//
// A connection opens with a 4-byte handshake each way: "FB" and two decimal
// digits, the protocol version (>= 1; both ends speak 01). After it, every
// message in either direction is a frame: an 8-byte big-endian length, then
// that many bytes. A command or a response is one frame; the data phase of a
// download is a byte count that the sender may spread over frames of any
// size. Default port 5554. Pure functions; no I/O.
#pragma once

#include <array>
#include <cstdint>
#include <span>

#include "base/status.h"

namespace flashpipe::wire::tcp {

inline constexpr uint16_t kDefaultPort = 5554;
inline constexpr size_t kHandshakeSize = 4;
inline constexpr size_t kFrameHeaderSize = 8;
// What this end sends: version 1.
inline constexpr std::array<uint8_t, kHandshakeSize> kHandshake = {'F', 'B', '0', '1'};

// The version the peer announced ("FB01" -> 1); kCorrupt, showing the bytes,
// for anything that is not "FB" and two digits of at least 01.
Result<int> ParseHandshake(std::span<const uint8_t, kHandshakeSize> bytes);

std::array<uint8_t, kFrameHeaderSize> FrameHeader(uint64_t length);
uint64_t ParseFrameHeader(std::span<const uint8_t, kFrameHeaderSize> bytes);

}  // namespace flashpipe::wire::tcp
