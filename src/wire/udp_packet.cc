#include "wire/udp_packet.h"

#include <fmt/format.h>

#include <cstring>

#include "base/endian.h"

namespace flashpipe::wire::udp {

std::optional<Header> ParseHeader(std::span<const uint8_t> packet) {
  if (packet.size() < kHeaderSize) return std::nullopt;
  return Header{packet[0], packet[1], LoadBE16(&packet[2])};
}

std::span<const uint8_t> Payload(std::span<const uint8_t> packet) { return packet.subspan(kHeaderSize); }

std::vector<uint8_t> Packet(Header header, std::span<const uint8_t> payload) {
  std::vector<uint8_t> pkt(kHeaderSize + payload.size());
  pkt[0] = header.id;
  pkt[1] = header.flags;
  StoreBE16(&pkt[2], header.seq);
  if (!payload.empty()) std::memcpy(pkt.data() + kHeaderSize, payload.data(), payload.size());
  return pkt;
}

std::vector<uint8_t> Packet(Header header, std::string_view payload) {
  return Packet(header, std::span(reinterpret_cast<const uint8_t*>(payload.data()), payload.size()));
}

std::vector<uint8_t> InitPayload(Init init) {
  std::vector<uint8_t> p(4);
  StoreBE16(&p[0], init.version);
  StoreBE16(&p[2], init.max_packet);
  return p;
}

Result<Init> ParseInit(std::span<const uint8_t> payload) {
  if (payload.size() < 4) return Corrupt(fmt::format("init: {} payload bytes, need 4", payload.size()));
  return Init{LoadBE16(&payload[0]), LoadBE16(&payload[2])};
}

std::vector<uint8_t> QueryPayload(uint16_t next_seq) {
  std::vector<uint8_t> p(2);
  StoreBE16(p.data(), next_seq);
  return p;
}

Result<uint16_t> ParseQuery(std::span<const uint8_t> payload) {
  if (payload.size() < 2) return Corrupt(fmt::format("query answer: {} payload bytes, need 2", payload.size()));
  return LoadBE16(payload.data());
}

}  // namespace flashpipe::wire::udp
