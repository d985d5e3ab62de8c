// Fastboot over UDP, the bytes (AOSP fastboot/README.md, "UDP Protocol v1").
//
// Every packet starts with a 4-byte header: id, flags, a big-endian 16-bit
// sequence number. The host sends, the device answers each packet once,
// echoing its seq. Ids: error (0, the payload is a message), query (1: the
// answer carries the seq the device expects next), init (2: version and
// largest packet each way, the answer the values to use), fastboot (3:
// command, response or download bytes; flag bit 0 says the message goes on
// in the next packet). Packets are at least 512 bytes long when full.
// Default port 5554. Pure functions; no I/O.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace flashpipe::wire::udp {

inline constexpr uint16_t kDefaultPort = 5554;
inline constexpr uint8_t kIdError = 0;
inline constexpr uint8_t kIdQuery = 1;
inline constexpr uint8_t kIdInit = 2;
inline constexpr uint8_t kIdFastboot = 3;
inline constexpr uint8_t kFlagContinuation = 1;
inline constexpr size_t kHeaderSize = 4;
inline constexpr uint16_t kMinPacketSize = 512;
inline constexpr uint16_t kProtocolVersion = 1;

struct Header {
  uint8_t id = 0;
  uint8_t flags = 0;
  uint16_t seq = 0;
  bool continuation() const { return (flags & kFlagContinuation) != 0; }
};

// nullopt for a packet shorter than the header (it has no seq to answer).
std::optional<Header> ParseHeader(std::span<const uint8_t> packet);
std::span<const uint8_t> Payload(std::span<const uint8_t> packet);  // REQUIRES: a header
// Header and payload in one packet.
std::vector<uint8_t> Packet(Header header, std::span<const uint8_t> payload = {});
std::vector<uint8_t> Packet(Header header, std::string_view payload);

// The init payload, both ways: protocol version and the largest packet.
struct Init {
  uint16_t version = kProtocolVersion;
  uint16_t max_packet = 0;
};
std::vector<uint8_t> InitPayload(Init init);
// kCorrupt for fewer than 4 bytes; the caller judges the values.
Result<Init> ParseInit(std::span<const uint8_t> payload);

// The query answer: the seq the device expects next.
std::vector<uint8_t> QueryPayload(uint16_t next_seq);
Result<uint16_t> ParseQuery(std::span<const uint8_t> payload);

}  // namespace flashpipe::wire::udp
