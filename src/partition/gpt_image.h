// The bytes of a GUID partition table (UEFI spec 2.10, 5.2-5.3) for a
// checked Table: the protective MBR (LBA 0: one partition of type 0xEE from
// LBA 1 over the disk, at most 0xFFFFFFFF LBAs), the primary header (LBA 1)
// and entry array (LBA 2), the backup entry array (just before the last
// LBA) and the backup header (the last LBA). Headers are 92 bytes, revision
// 1.0, padded with zeros to a sector; entries are 128 bytes; both CRC32s
// (base/crc32.h) are filled in. What io/gpt.h reads back is the Table.
#pragma once

#include <cstdint>
#include <vector>

#include "partition/layout.h"

namespace flashpipe::partition {

struct GptImage {
  uint32_t sector_size = 512;
  std::vector<uint8_t> mbr;             // one sector, for LBA 0
  std::vector<uint8_t> primary_header;  // one sector, for LBA 1
  std::vector<uint8_t> entries;         // EntrySectors() sectors, at both arrays
  uint64_t primary_entries_lba = 2;
  uint64_t backup_entries_lba = 0;
  uint64_t backup_header_lba = 0;
  std::vector<uint8_t> backup_header;
};

// REQUIRES: CheckTable(table).ok() (names are UTF-8 of at most 36 units).
GptImage EncodeGpt(const Table& table);

}  // namespace flashpipe::partition
