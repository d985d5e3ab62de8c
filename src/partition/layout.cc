#include "partition/layout.h"

#include <algorithm>
#include <set>

#include <fmt/format.h>

#include "base/log.h"
#include "base/units.h"
#include "base/utf8.h"
#include "partition/types.h"

namespace flashpipe::partition {
namespace {

uint64_t AlignUp(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

Result<uint64_t> ToSectors(const Amount& a, uint32_t sector, const std::string& what) {
  if (!a.bytes) return a.value;
  if (a.value % sector != 0) {
    return InvalidArgument(fmt::format("{}: {} bytes is not a multiple of the {}-byte sector", what, a.value, sector));
  }
  return a.value / sector;
}

std::string Describe(const Partition& p) {
  return p.name.empty() ? fmt::format("partition {}", p.number)
                        : fmt::format("partition {} '{}'", p.number, log::Printable(p.name, 40));
}

// How the layout named each partition, by position in table.partitions.
std::string Where(const std::vector<std::string>& where, size_t i, const Partition& p) {
  if (i < where.size() && !where[i].empty() && where[i] != fmt::format("partition {}", p.number)) {
    return fmt::format("{} ({})", where[i], Describe(p));
  }
  return Describe(p);
}

Status CheckWithNames(const Table& t, const std::vector<std::string>& where) {
  std::set<std::string> names;
  std::set<uint32_t> numbers;
  std::set<Guid> uuids;
  for (size_t i = 0; i < t.partitions.size(); ++i) {
    const Partition& p = t.partitions[i];
    std::string w = Where(where, i, p);
    if (p.number < 1 || p.number > t.num_entries) {
      return InvalidArgument(fmt::format("{}: number {} outside the table's {} entries", w, p.number, t.num_entries));
    }
    if (!numbers.insert(p.number).second) return InvalidArgument(fmt::format("{}: number {} given twice", w, p.number));
    if (p.size == 0) return InvalidArgument(fmt::format("{}: size is 0", w));
    if (p.start < t.first_usable || p.start > t.last_usable || p.size > t.last_usable - p.start + 1) {
      return NoSpace(fmt::format("{}: LBAs {}-{} do not fit the usable LBAs {}-{} of the target ({} LBAs of {} bytes)",
                                 w, p.start, p.start + p.size - 1, t.first_usable, t.last_usable, t.disk_lbas,
                                 t.sector_size));
    }
    if (IsZero(p.type)) return InvalidArgument(fmt::format("{}: type GUID is all zeros (that marks an unused entry)", w));
    if (IsZero(p.uuid)) return InvalidArgument(fmt::format("{}: uuid is all zeros", w));
    if (!uuids.insert(p.uuid).second) return InvalidArgument(fmt::format("{}: uuid {} given twice", w, FormatGuid(p.uuid)));
    auto units = NameToUtf16(p.name);
    if (!units.ok()) return units.status().WithContext(w);
    if (units->size() > kMaxNameUnits) {
      return InvalidArgument(fmt::format("{}: name is {} UTF-16 code units, a GPT entry holds {}", w, units->size(),
                                         kMaxNameUnits));
    }
    if (!p.name.empty() && !names.insert(p.name).second) {
      return InvalidArgument(fmt::format("{}: name '{}' given twice", w, log::Printable(p.name, 40)));
    }
  }
  std::vector<size_t> order(t.partitions.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return t.partitions[a].start < t.partitions[b].start; });
  for (size_t k = 1; k < order.size(); ++k) {
    const Partition& a = t.partitions[order[k - 1]];
    const Partition& b = t.partitions[order[k]];
    if (b.start <= a.last()) {
      return InvalidArgument(fmt::format("{} (LBAs {}-{}) overlaps {} (LBAs {}-{})", Where(where, order[k], b), b.start,
                                         b.last(), Where(where, order[k - 1], a), a.start, a.last()));
    }
  }
  return Status::Ok();
}

struct Geometry {
  uint32_t sector;
  uint64_t lbas, first, last, align;
  uint32_t entries;
};

Result<Geometry> DiskGeometry(const Layout& l, const Disk& d) {
  Geometry g{};
  g.sector = d.sector_size;
  if (l.sector_size && *l.sector_size != d.sector_size) {
    return InvalidArgument(fmt::format("sector-size: {} in the layout, but the target's sectors are {} bytes",
                                       *l.sector_size, d.sector_size));
  }
  g.entries = l.table_length.value_or(kDefaultEntries);
  if (g.entries < 1 || g.entries > kMaxEntries) {
    return InvalidArgument(fmt::format("table-length: {} entries, outside 1-{}", g.entries, kMaxEntries));
  }
  g.lbas = d.size / g.sector;
  uint64_t es = EntrySectors(g.entries, g.sector);
  if (g.lbas < 2 * es + 4) {
    return NoSpace(fmt::format("the target ({} bytes) is too small for a GPT with {} entries", d.size, g.entries));
  }
  uint64_t min_first = 2 + es, max_last = g.lbas - 2 - es;
  g.first = l.first_lba.value_or(min_first);
  g.last = l.last_lba.value_or(max_last);
  if (g.first < min_first) {
    return InvalidArgument(fmt::format("first-lba: {} is inside the primary table (LBAs 0-{})", g.first, min_first - 1));
  }
  if (g.last > max_last) {
    return NoSpace(fmt::format("last-lba: {} is past the last usable LBA {} of the target ({} LBAs of {} bytes)",
                               g.last, max_last, g.lbas, g.sector));
  }
  if (g.first > g.last) return InvalidArgument(fmt::format("first-lba {} is after last-lba {}", g.first, g.last));
  uint64_t align = l.alignment.value_or(kDefaultAlignment);
  if (align == 0 || align % g.sector != 0) {
    return InvalidArgument(fmt::format("grain: {} bytes is not a multiple of the {}-byte sector", align, g.sector));
  }
  g.align = align / g.sector;
  return g;
}

uint32_t NextFreeNumber(const std::set<uint32_t>& used) {
  uint32_t n = 1;
  while (used.count(n)) ++n;
  return n;
}

}  // namespace

uint64_t EntrySectors(uint32_t num_entries, uint32_t sector_size) {
  return (uint64_t{num_entries} * kEntrySize + sector_size - 1) / sector_size;
}

Result<std::u16string> NameToUtf16(std::string_view s) {
  std::u16string out;
  for (size_t i = 0; i < s.size();) {
    size_t n = Utf8Length(s, i);
    if (n == 0) return InvalidArgument(fmt::format("name: byte {} is not UTF-8", i));
    auto b = [&](size_t k) { return static_cast<uint32_t>(static_cast<uint8_t>(s[i + k])); };
    uint32_t cp = n == 1 ? b(0)
                : n == 2 ? ((b(0) & 0x1F) << 6) | (b(1) & 0x3F)
                : n == 3 ? ((b(0) & 0x0F) << 12) | ((b(1) & 0x3F) << 6) | (b(2) & 0x3F)
                         : ((b(0) & 0x07) << 18) | ((b(1) & 0x3F) << 12) | ((b(2) & 0x3F) << 6) | (b(3) & 0x3F);
    if (cp == 0) return InvalidArgument("name: contains a NUL character");
    if (cp >= 0x10000) {
      cp -= 0x10000;
      out.push_back(static_cast<char16_t>(0xD800 + (cp >> 10)));
      out.push_back(static_cast<char16_t>(0xDC00 + (cp & 0x3FF)));
    } else {
      out.push_back(static_cast<char16_t>(cp));
    }
    i += n;
  }
  return out;
}

Result<Table> Resolve(const Layout& l, const Disk& disk, const std::function<Guid()>& new_guid) {
  FP_ASSIGN_OR_RETURN(Geometry g, DiskGeometry(l, disk));
  Table t;
  t.sector_size = g.sector;
  t.disk_lbas = g.lbas;
  t.first_usable = g.first;
  t.last_usable = g.last;
  t.num_entries = g.entries;
  t.disk_guid = l.disk_guid.value_or(Guid{});
  if (!l.disk_guid) t.disk_guid = new_guid();
  std::set<uint32_t> used;
  for (const auto& s : l.partitions) {
    if (s.number) used.insert(*s.number);
  }
  std::vector<std::string> where;
  uint64_t next = g.first;
  for (size_t i = 0; i < l.partitions.size(); ++i) {
    const PartitionSpec& s = l.partitions[i];
    Partition p;
    p.number = s.number.value_or(0);
    if (!s.number) used.insert(p.number = NextFreeNumber(used));
    p.name = s.name;
    p.attributes = s.attributes;
    p.type = s.type ? *s.type : *ParseGuid(kLinuxType);
    p.uuid = s.uuid ? *s.uuid : new_guid();
    std::string w = s.where.empty() ? fmt::format("partition {}", p.number) : s.where;
    if (s.start) {
      FP_ASSIGN_OR_RETURN(p.start, ToSectors(*s.start, g.sector, w + ": start"));
    } else {
      p.start = AlignUp(next, g.align);
    }
    if (s.size) {
      FP_ASSIGN_OR_RETURN(p.size, ToSectors(*s.size, g.sector, w + ": size"));
    } else if (i + 1 != l.partitions.size()) {
      return InvalidArgument(fmt::format("{}: size: only the last partition can take the rest of the disk", w));
    } else if (p.start > g.last) {
      return NoSpace(fmt::format("{}: no space left: it would start at LBA {}, past the last usable LBA {}", w,
                                 p.start, g.last));
    } else {
      p.size = g.last - p.start + 1;
    }
    if (p.size > UINT64_MAX - p.start) return InvalidArgument(fmt::format("{}: start + size overflows", w));
    next = p.start + p.size;
    t.partitions.push_back(std::move(p));
    where.push_back(w);
  }
  FP_RETURN_IF_ERROR(CheckWithNames(t, where));
  std::sort(t.partitions.begin(), t.partitions.end(), [](const auto& a, const auto& b) { return a.number < b.number; });
  return t;
}

Status CheckTable(const Table& table) { return CheckWithNames(table, {}); }

Table FromGpt(const io::GptTable& gpt, uint64_t disk_size) {
  Table t;
  t.sector_size = gpt.sector_size;
  t.disk_lbas = disk_size / gpt.sector_size;
  t.disk_guid = gpt.disk_guid;
  t.first_usable = gpt.first_usable;
  t.last_usable = gpt.last_usable;
  t.num_entries = gpt.num_entries;
  for (const io::GptPartition& g : gpt.partitions) {
    Partition p;
    p.number = g.index + 1;
    p.start = g.first_lba;
    p.size = g.last_lba - g.first_lba + 1;
    p.type = g.type_guid;
    p.uuid = g.unique_guid;
    p.name = g.name;
    p.attributes = g.attributes;
    t.partitions.push_back(std::move(p));
  }
  std::sort(t.partitions.begin(), t.partitions.end(), [](const auto& a, const auto& b) { return a.number < b.number; });
  return t;
}

}  // namespace flashpipe::partition
