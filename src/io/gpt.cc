#include "io/gpt.h"

#include <algorithm>
#include <cstring>

#include "base/crc32.h"
#include "base/endian.h"
#include "base/log.h"

namespace flashpipe::io {
namespace {

constexpr char kSignature[8] = {'E', 'F', 'I', ' ', 'P', 'A', 'R', 'T'};
constexpr uint32_t kMinHeaderSize = 92;
constexpr uint32_t kMinEntrySize = 128;
constexpr uint64_t kMaxEntryArrayBytes = 4 << 20;

struct Header {
  uint64_t my_lba, alternate_lba, first_usable, last_usable, entries_lba;
  uint32_t num_entries, entry_size, entries_crc;
  std::array<uint8_t, 16> disk_guid;
};

// Checks one header sector read from `lba`; fills `h`.
Status ParseHeader(std::span<const uint8_t> sector, uint64_t lba, uint64_t disk_lbas, Header* h) {
  if (std::memcmp(sector.data(), kSignature, 8) != 0) {
    return Corrupt(fmt::format("no 'EFI PART' signature at LBA {}", lba));
  }
  uint32_t size = LoadLE<uint32_t>(&sector[12]);
  if (size < kMinHeaderSize || size > sector.size()) {
    return Corrupt(fmt::format("header at LBA {}: size {} outside [{}, {}]", lba, size,
                               kMinHeaderSize, sector.size()));
  }
  std::vector<uint8_t> copy(sector.begin(), sector.begin() + size);
  std::memset(&copy[16], 0, 4);
  uint32_t stored = LoadLE<uint32_t>(&sector[16]);
  uint32_t crc = Crc32Update(0, copy.data(), copy.size());
  if (crc != stored) {
    return Corrupt(fmt::format("header at LBA {}: CRC32 {:08x} != stored {:08x}", lba, crc, stored));
  }
  h->my_lba = LoadLE<uint64_t>(&sector[24]);
  h->alternate_lba = LoadLE<uint64_t>(&sector[32]);
  h->first_usable = LoadLE<uint64_t>(&sector[40]);
  h->last_usable = LoadLE<uint64_t>(&sector[48]);
  std::memcpy(h->disk_guid.data(), &sector[56], 16);
  h->entries_lba = LoadLE<uint64_t>(&sector[72]);
  h->num_entries = LoadLE<uint32_t>(&sector[80]);
  h->entry_size = LoadLE<uint32_t>(&sector[84]);
  h->entries_crc = LoadLE<uint32_t>(&sector[88]);
  if (h->my_lba != lba) return Corrupt(fmt::format("header at LBA {} says it is at LBA {}", lba, h->my_lba));
  if (h->first_usable > h->last_usable || h->last_usable >= disk_lbas) {
    return Corrupt(fmt::format("header at LBA {}: usable LBAs [{}, {}] outside disk of {} LBAs",
                               lba, h->first_usable, h->last_usable, disk_lbas));
  }
  if (h->entry_size < kMinEntrySize || h->entry_size % 8 != 0 ||
      uint64_t{h->entry_size} * h->num_entries > kMaxEntryArrayBytes) {
    return Corrupt(fmt::format("header at LBA {}: {} entries of {} bytes not supported", lba,
                               h->num_entries, h->entry_size));
  }
  return Status::Ok();
}

Status ReadEntries(const ReadAtFn& read_at, const Header& h, uint32_t sector, uint64_t disk_lbas,
                   std::vector<uint8_t>* out) {
  uint64_t bytes = uint64_t{h.num_entries} * h.entry_size;
  uint64_t lbas = (bytes + sector - 1) / sector;
  if (h.entries_lba < 1 || h.entries_lba >= disk_lbas || lbas > disk_lbas - h.entries_lba) {
    return Corrupt(fmt::format("header at LBA {}: entry array at LBA {} ({} LBAs) outside disk",
                               h.my_lba, h.entries_lba, lbas));
  }
  out->assign(bytes, 0);
  FP_RETURN_IF_ERROR(read_at(h.entries_lba * sector, *out));
  uint32_t crc = Crc32Update(0, out->data(), out->size());
  if (crc != h.entries_crc) {
    return Corrupt(fmt::format("entry array at LBA {}: CRC32 {:08x} != stored {:08x}",
                               h.entries_lba, crc, h.entries_crc));
  }
  return Status::Ok();
}

Status ParseEntries(const Header& h, std::span<const uint8_t> array, GptTable* table) {
  for (uint32_t i = 0; i < h.num_entries; ++i) {
    auto e = array.subspan(uint64_t{i} * h.entry_size, kMinEntrySize);
    GptPartition p;
    std::memcpy(p.type_guid.data(), e.data(), 16);
    if (std::all_of(p.type_guid.begin(), p.type_guid.end(), [](uint8_t b) { return b == 0; })) continue;
    p.index = i;
    std::memcpy(p.unique_guid.data(), e.data() + 16, 16);
    p.attributes = LoadLE<uint64_t>(&e[48]);
    p.first_lba = LoadLE<uint64_t>(&e[32]);
    p.last_lba = LoadLE<uint64_t>(&e[40]);
    p.name = Utf16LeToUtf8(e.subspan(56, 72));
    if (p.first_lba > p.last_lba || p.first_lba < h.first_usable || p.last_lba > h.last_usable) {
      return Corrupt(fmt::format("entry {} '{}': LBAs [{}, {}] outside usable [{}, {}]", i, log::Printable(p.name, 80),
                                 p.first_lba, p.last_lba, h.first_usable, h.last_usable));
    }
    table->partitions.push_back(std::move(p));
  }
  auto sorted = table->partitions;
  std::sort(sorted.begin(), sorted.end(),
            [](const auto& a, const auto& b) { return a.first_lba < b.first_lba; });
  for (size_t i = 1; i < sorted.size(); ++i) {
    if (sorted[i].first_lba <= sorted[i - 1].last_lba) {
      return Corrupt(fmt::format("entries {} '{}' and {} '{}' overlap", sorted[i - 1].index,
                                 log::Printable(sorted[i - 1].name, 80), sorted[i].index,
                                 log::Printable(sorted[i].name, 80)));
    }
  }
  return Status::Ok();
}

// Reads and fully checks the header at `lba` and its entries.
Status TryHeader(const ReadAtFn& read_at, uint64_t lba, uint32_t sector, uint64_t disk_lbas,
                 Header* h, GptTable* table) {
  std::vector<uint8_t> buf(sector);
  FP_RETURN_IF_ERROR(read_at(lba * sector, buf));
  FP_RETURN_IF_ERROR(ParseHeader(buf, lba, disk_lbas, h));
  std::vector<uint8_t> array;
  FP_RETURN_IF_ERROR(ReadEntries(read_at, *h, sector, disk_lbas, &array));
  table->partitions.clear();
  table->disk_guid = h->disk_guid;
  table->first_usable = h->first_usable;
  table->last_usable = h->last_usable;
  table->num_entries = h->num_entries;
  table->entry_size = h->entry_size;
  return ParseEntries(*h, array, table);
}

Result<GptTable> ReadWithSector(const ReadAtFn& read_at, uint64_t disk_size, uint32_t sector) {
  uint64_t disk_lbas = disk_size / sector;
  if (disk_lbas < 3) return Corrupt(fmt::format("disk of {} bytes too small for a GPT", disk_size));
  GptTable table;
  table.sector_size = sector;
  Header primary{};
  Status ps = TryHeader(read_at, 1, sector, disk_lbas, &primary, &table);
  uint64_t backup_lba = disk_lbas - 1;
  if (ps.ok() && primary.alternate_lba > 1 && primary.alternate_lba < disk_lbas) {
    backup_lba = primary.alternate_lba;
  }
  GptTable backup_table;
  Header backup{};
  Status bs = TryHeader(read_at, backup_lba, sector, disk_lbas, &backup, &backup_table);
  if (ps.ok()) {
    if (!bs.ok()) table.warnings.push_back("backup GPT unusable: " + bs.ToString());
    return table;
  }
  if (!bs.ok()) {
    return Corrupt(fmt::format("primary GPT: {}; backup GPT: {}", ps.ToString(), bs.ToString()));
  }
  backup_table.from_backup = true;
  backup_table.sector_size = sector;
  backup_table.warnings.push_back(fmt::format("primary GPT unusable ({}); using the backup at LBA {}",
                                              ps.ToString(), backup_lba));
  return backup_table;
}

void AppendUtf8(uint32_t cp, std::string* out) {
  if (cp < 0x80) {
    out->push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out->push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out->push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out->push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

}  // namespace

std::string Utf16LeToUtf8(std::span<const uint8_t> bytes) {
  std::string out;
  size_t n = bytes.size() / 2;
  for (size_t i = 0; i < n; ++i) {
    uint32_t u = LoadLE<uint16_t>(&bytes[2 * i]);
    if (u == 0) break;
    if (u >= 0xD800 && u < 0xDC00 && i + 1 < n) {
      uint32_t lo = LoadLE<uint16_t>(&bytes[2 * i + 2]);
      if (lo >= 0xDC00 && lo < 0xE000) {
        AppendUtf8(0x10000 + ((u - 0xD800) << 10) + (lo - 0xDC00), &out);
        ++i;
        continue;
      }
    }
    AppendUtf8(u >= 0xD800 && u < 0xE000 ? 0xFFFD : u, &out);
  }
  return out;
}

Result<GptTable> ReadGpt(const ReadAtFn& read_at, uint64_t disk_size, uint32_t sector_size) {
  if (sector_size != 0) return ReadWithSector(read_at, disk_size, sector_size);
  auto r512 = ReadWithSector(read_at, disk_size, 512);
  if (r512.ok()) return r512;
  auto r4k = ReadWithSector(read_at, disk_size, 4096);
  if (r4k.ok()) return r4k;
  return r512.status();
}

}  // namespace flashpipe::io
