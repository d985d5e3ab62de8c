// A careful reader of GUID partition tables (UEFI spec, chapter 5).
//
// Both headers are checked: signature, header size, header CRC32, their own
// LBA, usable range inside the disk, entry size and count, and the CRC32 of
// the entry array they point to. When the primary header or its entries are
// bad the backup (at the primary's alternate LBA, else the last LBA) is used
// and a warning says why. Used entries (type GUID not all zero) must lie in
// the usable range and must not overlap; names are decoded from UTF-16LE to
// UTF-8. Nothing is trusted before it is checked, so a hostile image yields
// an error naming the field, never an out-of-range read.
// Pure: the disk is read through a callback. Lives in io, below its two
// users: the fastboot daemon's partitions and `flashpipe read DEVICE:NAME`.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "base/status.h"

namespace flashpipe::io {

struct GptPartition {
  std::string name;                 // UTF-8
  uint64_t first_lba = 0;
  uint64_t last_lba = 0;            // inclusive
  std::array<uint8_t, 16> type_guid{};
  std::array<uint8_t, 16> unique_guid{};  // on-disk (mixed-endian) bytes
  uint64_t attributes = 0;
  uint32_t index = 0;               // position in the entry array
};

struct GptTable {
  uint32_t sector_size = 512;
  bool from_backup = false;
  // The header the table was read from (primary, or the backup when
  // from_backup), so that a writer can reproduce it (partition/).
  std::array<uint8_t, 16> disk_guid{};  // on-disk bytes
  uint64_t first_usable = 0, last_usable = 0;
  uint32_t num_entries = 0, entry_size = 0;
  std::vector<std::string> warnings;
  std::vector<GptPartition> partitions;  // in entry order
};

// Reads exactly out.size() bytes at offset, or fails.
using ReadAtFn = std::function<Status(uint64_t offset, std::span<uint8_t> out)>;

// sector_size 0 tries 512, then 4096.
Result<GptTable> ReadGpt(const ReadAtFn& read_at, uint64_t disk_size, uint32_t sector_size = 0);

// UTF-16LE code units (up to the first NUL) to UTF-8; bad surrogates -> U+FFFD.
std::string Utf16LeToUtf8(std::span<const uint8_t> bytes);

}  // namespace flashpipe::io
