#include "fastboot/ffs_descriptors.h"

#include <fmt/format.h>

#include "base/endian.h"
#include "wire/usb.h"

namespace flashpipe::fastboot::ffs {
namespace {

// include/uapi/linux/usb/functionfs.h and ch9.h.
constexpr uint32_t kDescriptorsMagicV2 = 3;
constexpr uint32_t kStringsMagic = 2;
constexpr uint32_t kHasFsDesc = 1, kHasHsDesc = 2, kHasSsDesc = 4;
constexpr uint8_t kDtInterface = 4, kDtEndpoint = 5, kDtSsEndpointComp = 0x30;
constexpr uint8_t kBulk = 2;
constexpr uint16_t kLangEnUs = 0x0409;
// Packets a SuperSpeed endpoint may burst (0..15 means 1..16).
constexpr uint8_t kSsMaxBurst = 15;

class Bytes {
 public:
  void U8(uint8_t v) { out_.push_back(v); }
  void U16(uint16_t v) { Put(v); }
  void U32(uint32_t v) { Put(v); }
  void Text(std::string_view s) {
    out_.insert(out_.end(), s.begin(), s.end());
    out_.push_back(0);
  }
  // Patches the total length into the header's second field.
  std::vector<uint8_t> Finish() {
    StoreLE<uint32_t>(out_.data() + 4, static_cast<uint32_t>(out_.size()));
    return std::move(out_);
  }

 private:
  template <typename T>
  void Put(T v) {
    size_t at = out_.size();
    out_.resize(at + sizeof v);
    StoreLE<T>(out_.data() + at, v);
  }
  std::vector<uint8_t> out_;
};

void Interface(Bytes& b) {
  b.U8(9);
  b.U8(kDtInterface);
  b.U8(0);  // bInterfaceNumber
  b.U8(0);  // bAlternateSetting
  b.U8(2);  // bNumEndpoints
  b.U8(wire::usb::kInterfaceClass);
  b.U8(wire::usb::kInterfaceSubclass);
  b.U8(wire::usb::kInterfaceProtocol);
  b.U8(1);  // iInterface: the first string, "fastboot"
}

void Endpoint(Bytes& b, uint8_t address, uint16_t max_packet) {
  b.U8(7);
  b.U8(kDtEndpoint);
  b.U8(address);
  b.U8(kBulk);
  b.U16(max_packet);
  b.U8(0);  // bInterval
}

void SsCompanion(Bytes& b) {
  b.U8(6);
  b.U8(kDtSsEndpointComp);
  b.U8(kSsMaxBurst);
  b.U8(0);   // bmAttributes: no streams
  b.U16(0);  // wBytesPerInterval: bulk
}

void Set(Bytes& b, uint16_t max_packet, bool super_speed) {
  Interface(b);
  Endpoint(b, kEndpointOut, max_packet);
  if (super_speed) SsCompanion(b);
  Endpoint(b, kEndpointIn, max_packet);
  if (super_speed) SsCompanion(b);
}

constexpr std::string_view kEventNames[] = {"BIND", "UNBIND", "ENABLE", "DISABLE", "SETUP", "SUSPEND", "RESUME"};

}  // namespace

std::vector<uint8_t> FastbootDescriptors() {
  Bytes b;
  b.U32(kDescriptorsMagicV2);
  b.U32(0);  // length, patched
  b.U32(kHasFsDesc | kHasHsDesc | kHasSsDesc);
  // One count per flag set, in flag order: 3 descriptors at full and high
  // speed, 5 at super speed (two companions).
  b.U32(3);
  b.U32(3);
  b.U32(5);
  Set(b, 64, false);
  Set(b, 512, false);
  Set(b, 1024, true);
  return b.Finish();
}

std::vector<uint8_t> FastbootStrings() {
  Bytes b;
  b.U32(kStringsMagic);
  b.U32(0);  // length, patched
  b.U32(1);  // strings per language
  b.U32(1);  // languages
  b.U16(kLangEnUs);
  b.Text("fastboot");
  return b.Finish();
}

std::string_view EventName(EventType type) {
  auto i = static_cast<size_t>(type);
  return i < std::size(kEventNames) ? kEventNames[i] : "?";
}

Result<std::vector<Event>> ParseEvents(std::span<const uint8_t> bytes) {
  if (bytes.size() % kEventSize != 0) {
    return Corrupt(fmt::format("ep0 read of {} bytes is not whole {}-byte events", bytes.size(), kEventSize));
  }
  std::vector<Event> events;
  for (size_t i = 0; i < bytes.size(); i += kEventSize) {
    const uint8_t* e = bytes.data() + i;
    if (e[8] >= std::size(kEventNames)) {
      return Corrupt(fmt::format("ep0 event {}: unknown type {}", i / kEventSize, e[8]));
    }
    Event ev{static_cast<EventType>(e[8]), {}};
    if (ev.type == EventType::kSetup) {
      ev.setup = {e[0], e[1], LoadLE<uint16_t>(e + 2), LoadLE<uint16_t>(e + 4), LoadLE<uint16_t>(e + 6)};
    }
    events.push_back(ev);
  }
  return events;
}

}  // namespace flashpipe::fastboot::ffs
