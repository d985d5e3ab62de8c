// What a layout asks for (Layout, as parsed from an sfdisk script or a
// U-Boot $partitions string) and what a GPT holds (Table, every field
// decided). Resolve turns the one into the other against a target; the
// formatters (sfdisk_script.h, uboot_string.h) print a Table so that
// parsing the text and resolving it on the same target gives the same
// Table back.
//
//   Layout l = ...Parse...;
//   FP_ASSIGN_OR_RETURN(Table t, Resolve(l, {.size = bytes, .sector_size = 512}));
//
// Resolve decides, as sfdisk and U-Boot do: a start not given is the end of
// the previous partition rounded up to the alignment (1 MiB unless the
// layout says otherwise; the first one starts at the first usable LBA,
// rounded up); a size not given (or "-" / "+") is the rest of the usable
// space, for the last partition only; a type not given is linux; a GUID not
// given is random (version 4). Given values are kept exactly. Then
// CheckTable: every partition inside the usable LBAs, none overlapping,
// names unique (when not empty) and at most 36 UTF-16 code units, entry
// numbers inside the entry array, unique non-zero partition GUIDs. Every
// error names the partition as the layout did ("line 9", "partition 2
// 'rootfs'") and the field.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "io/gpt.h"
#include "partition/guid.h"

namespace flashpipe::partition {

// A position or a length as written: sectors, or bytes (a suffix was given).
struct Amount {
  uint64_t value = 0;
  bool bytes = false;
};

struct PartitionSpec {
  std::string where;               // "line 9", "partition 2": for messages
  std::optional<uint32_t> number;  // 1-based entry (sfdisk's NODE); else the next free one
  std::optional<Amount> start;
  std::optional<Amount> size;      // nullopt: the rest of the disk
  std::optional<Guid> type;        // nullopt: linux
  std::optional<Guid> uuid;        // nullopt: random
  std::string name;                // UTF-8
  uint64_t attributes = 0;
};

struct Layout {
  std::optional<Guid> disk_guid;
  std::optional<uint64_t> first_lba, last_lba;  // the usable range
  std::optional<uint32_t> sector_size;
  std::optional<uint32_t> table_length;         // entries in the array (128)
  std::optional<uint64_t> alignment;            // bytes (sfdisk "grain")
  std::string device;                           // sfdisk "device:", not used
  std::vector<PartitionSpec> partitions;
};

struct Partition {
  uint32_t number = 0;  // 1-based entry
  uint64_t start = 0;   // LBA
  uint64_t size = 0;    // LBAs
  Guid type{};
  Guid uuid{};
  std::string name;
  uint64_t attributes = 0;
  uint64_t last() const { return start + size - 1; }
  bool operator==(const Partition&) const = default;
};

struct Table {
  uint32_t sector_size = 512;
  uint64_t disk_lbas = 0;
  Guid disk_guid{};
  uint64_t first_usable = 0, last_usable = 0;
  uint32_t num_entries = 128;
  std::vector<Partition> partitions;  // by number
  bool operator==(const Table&) const = default;
};

struct Disk {
  uint64_t size = 0;  // bytes
  uint32_t sector_size = 512;
};

inline constexpr uint32_t kEntrySize = 128;
inline constexpr uint32_t kDefaultEntries = 128;
inline constexpr uint32_t kMaxEntries = 4096;
inline constexpr uint64_t kDefaultAlignment = 1 << 20;
inline constexpr size_t kMaxNameUnits = 36;

// LBAs the entry array takes.
uint64_t EntrySectors(uint32_t num_entries, uint32_t sector_size);

Result<Table> Resolve(const Layout& layout, const Disk& disk,
                      const std::function<Guid()>& new_guid = RandomGuid);
Status CheckTable(const Table& table);
// The table io::ReadGpt found, on a disk of `disk_size` bytes.
Table FromGpt(const io::GptTable& gpt, uint64_t disk_size);
// UTF-8 to UTF-16 code units; kInvalidArgument for text that is not UTF-8.
Result<std::u16string> NameToUtf16(std::string_view name);

}  // namespace flashpipe::partition
