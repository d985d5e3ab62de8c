#include "partition/gpt_image.h"

#include <algorithm>
#include <cstring>

#include "base/crc32.h"
#include "base/endian.h"

namespace flashpipe::partition {
namespace {

constexpr uint32_t kHeaderSize = 92;

std::vector<uint8_t> ProtectiveMbr(const Table& t) {
  std::vector<uint8_t> s(t.sector_size, 0);
  uint8_t* e = &s[446];
  e[1] = 0x00, e[2] = 0x02, e[3] = 0x00;   // CHS of LBA 1
  e[4] = 0xEE;                             // GPT protective
  e[5] = 0xFF, e[6] = 0xFF, e[7] = 0xFF;   // CHS past the addressable range
  StoreLE<uint32_t>(e + 8, 1);
  StoreLE<uint32_t>(e + 12, static_cast<uint32_t>(std::min<uint64_t>(t.disk_lbas - 1, 0xFFFFFFFF)));
  s[510] = 0x55, s[511] = 0xAA;
  return s;
}

std::vector<uint8_t> Entries(const Table& t) {
  std::vector<uint8_t> a(EntrySectors(t.num_entries, t.sector_size) * t.sector_size, 0);
  for (const Partition& p : t.partitions) {
    uint8_t* e = &a[uint64_t{p.number - 1} * kEntrySize];
    std::memcpy(e, p.type.data(), 16);
    std::memcpy(e + 16, p.uuid.data(), 16);
    StoreLE<uint64_t>(e + 32, p.start);
    StoreLE<uint64_t>(e + 40, p.last());
    StoreLE<uint64_t>(e + 48, p.attributes);
    auto units = NameToUtf16(p.name);
    std::u16string name = units.ok() ? *units : std::u16string();
    for (size_t k = 0; k < name.size() && k < kMaxNameUnits; ++k) StoreLE<uint16_t>(e + 56 + 2 * k, name[k]);
  }
  return a;
}

std::vector<uint8_t> Header(const Table& t, uint64_t my_lba, uint64_t alternate, uint64_t entries_lba,
                            uint32_t entries_crc) {
  std::vector<uint8_t> h(t.sector_size, 0);
  std::memcpy(h.data(), "EFI PART", 8);
  StoreLE<uint32_t>(&h[8], 0x00010000);
  StoreLE<uint32_t>(&h[12], kHeaderSize);
  StoreLE<uint64_t>(&h[24], my_lba);
  StoreLE<uint64_t>(&h[32], alternate);
  StoreLE<uint64_t>(&h[40], t.first_usable);
  StoreLE<uint64_t>(&h[48], t.last_usable);
  std::memcpy(&h[56], t.disk_guid.data(), 16);
  StoreLE<uint64_t>(&h[72], entries_lba);
  StoreLE<uint32_t>(&h[80], t.num_entries);
  StoreLE<uint32_t>(&h[84], kEntrySize);
  StoreLE<uint32_t>(&h[88], entries_crc);
  StoreLE<uint32_t>(&h[16], Crc32Update(0, h.data(), kHeaderSize));
  return h;
}

}  // namespace

GptImage EncodeGpt(const Table& t) {
  GptImage g;
  g.sector_size = t.sector_size;
  g.mbr = ProtectiveMbr(t);
  g.entries = Entries(t);
  // The CRC covers the array as the header describes it, not the padding.
  uint32_t crc = Crc32Update(0, g.entries.data(), uint64_t{t.num_entries} * kEntrySize);
  g.backup_header_lba = t.disk_lbas - 1;
  g.backup_entries_lba = g.backup_header_lba - EntrySectors(t.num_entries, t.sector_size);
  g.primary_header = Header(t, 1, g.backup_header_lba, g.primary_entries_lba, crc);
  g.backup_header = Header(t, g.backup_header_lba, 1, g.backup_entries_lba, crc);
  return g;
}

}  // namespace flashpipe::partition
