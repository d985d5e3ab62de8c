#include "partition/uboot_string.h"

#include <cctype>

#include <fmt/format.h>

#include "base/log.h"
#include "partition/text_fields.h"
#include "partition/types.h"

namespace flashpipe::partition {
namespace {

constexpr uint64_t kBootable = uint64_t{1} << 2;

std::string_view Trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

std::vector<std::string_view> Split(std::string_view s, char sep) {
  std::vector<std::string_view> out;
  while (true) {
    size_t k = s.find(sep);
    out.push_back(Trim(s.substr(0, k)));
    if (k == std::string_view::npos) return out;
    s.remove_prefix(k + 1);
  }
}

Status ApplyField(std::string_view key, std::string_view value, bool has_value, PartitionSpec* p, bool* sized) {
  if (key == "bootable" && !has_value) {
    p->attributes |= kBootable;
    return Status::Ok();
  }
  if (!has_value) return InvalidArgument("not key=value (name=, start=, size=, uuid=, type=, or the flag bootable)");
  if (key == "name") {
    if (value.empty()) return InvalidArgument("empty");
    p->name = std::string(value);
  } else if (key == "start") {
    FP_ASSIGN_OR_RETURN(p->start, ParseAmount(value, PlainUnit::kBytes));
  } else if (key == "size") {
    *sized = true;
    if (value == "-") return Status::Ok();
    FP_ASSIGN_OR_RETURN(p->size, ParseAmount(value, PlainUnit::kBytes));
  } else if (key == "uuid") {
    FP_ASSIGN_OR_RETURN(p->uuid, ParseGuid(value));
  } else if (key == "type") {
    FP_ASSIGN_OR_RETURN(p->type, ParseType(value, TypeNames::kUboot));
  } else {
    return InvalidArgument("unknown field (name, start, size, uuid, type, bootable)");
  }
  return Status::Ok();
}

Status ParsePartition(std::string_view element, size_t index, Layout* l) {
  PartitionSpec p;
  p.where = fmt::format("partition {}", index);
  bool sized = false;
  for (std::string_view field : Split(element, ',')) {
    if (field.empty()) continue;
    size_t eq = field.find('=');
    std::string_view key = Trim(field.substr(0, eq));
    std::string_view value = eq == std::string_view::npos ? "" : Trim(field.substr(eq + 1));
    Status s = ApplyField(key, value, eq != std::string_view::npos, &p, &sized);
    if (!s.ok()) {
      std::string who = p.name.empty() ? p.where : fmt::format("{} '{}'", p.where, log::Printable(p.name, 40));
      return s.WithContext(fmt::format("{}: {}", who, log::Printable(key, 40)));
    }
  }
  if (p.name.empty()) return InvalidArgument(fmt::format("{}: name: missing (U-Boot needs name=)", p.where));
  if (!sized) {
    return InvalidArgument(fmt::format("{} '{}': size: missing (U-Boot needs size=, or size=- for the rest)", p.where,
                                       log::Printable(p.name, 40)));
  }
  l->partitions.push_back(std::move(p));
  return Status::Ok();
}

}  // namespace

Result<Layout> ParseUbootString(std::string_view text) {
  if (size_t v = text.find("${"); v != std::string_view::npos) {
    size_t end = text.find('}', v);
    return InvalidArgument(fmt::format("U-Boot variable '{}' is not expanded here: give its value",
                                       log::Printable(text.substr(v, end == std::string_view::npos ? 20 : end - v + 1), 40)));
  }
  Layout l;
  size_t index = 0;
  for (std::string_view element : Split(text, ';')) {
    if (element.empty()) continue;
    if (element.starts_with("uuid_disk=")) {
      if (index != 0) return InvalidArgument("uuid_disk: must come before the partitions");
      auto g = ParseGuid(Trim(element.substr(10)));
      if (!g.ok()) return g.status().WithContext("uuid_disk");
      l.disk_guid = *g;
      continue;
    }
    FP_RETURN_IF_ERROR(ParsePartition(element, ++index, &l));
  }
  if (l.partitions.empty()) return InvalidArgument("no partitions (name=...,size=...;)");
  return l;
}

Result<std::string> FormatUbootString(const Table& t) {
  if (t.partitions.empty()) return InvalidArgument("the table has no partitions, and a U-Boot string needs one");
  std::string out = fmt::format("uuid_disk={};", FormatGuid(t.disk_guid));
  for (const Partition& p : t.partitions) {
    if (p.name.empty() || p.name.find_first_of(",;=") != std::string::npos || p.name.find("${") != std::string::npos ||
        Trim(p.name) != p.name) {
      return InvalidArgument(fmt::format("partition {} '{}': a U-Boot string cannot hold this name (empty, or with "
                                         "',', ';', '=', '${{' or blanks at its ends); use --format sfdisk",
                                         p.number, log::Printable(p.name, 40)));
    }
    out += fmt::format("name={},start={},size={},uuid={},type={}{};", p.name,
                       FormatExactBytes(p.start * t.sector_size), FormatExactBytes(p.size * t.sector_size),
                       FormatGuid(p.uuid), FormatGuid(p.type), p.attributes & kBootable ? ",bootable" : "");
  }
  return out;
}

std::vector<std::string> UbootLost(const Table& t) {
  std::vector<std::string> lost;
  uint64_t es = EntrySectors(t.num_entries, t.sector_size);
  if (t.first_usable != 2 + es || t.last_usable != t.disk_lbas - 2 - es || t.num_entries != kDefaultEntries) {
    lost.push_back(fmt::format("the usable range {}-{} and the {} entries (U-Boot makes 128 and uses the whole disk)",
                               t.first_usable, t.last_usable, t.num_entries));
  }
  for (size_t i = 0; i < t.partitions.size(); ++i) {
    const Partition& p = t.partitions[i];
    if (p.number != i + 1) lost.push_back(fmt::format("partition {}'s entry number (it becomes {})", p.number, i + 1));
    if (p.attributes & ~kBootable) {
      lost.push_back(fmt::format("partition {}'s attributes 0x{:016x} other than bootable", p.number,
                                 p.attributes & ~kBootable));
    }
  }
  return lost;
}

}  // namespace flashpipe::partition
