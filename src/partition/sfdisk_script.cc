#include "partition/sfdisk_script.h"

#include <cctype>
#include <charconv>
#include <optional>
#include <vector>

#include <fmt/format.h>

#include "base/log.h"
#include "base/units.h"
#include "partition/text_fields.h"
#include "partition/types.h"

namespace flashpipe::partition {
namespace {

std::string_view Trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

// A plain number of sectors or bytes: the one digits rule (base/units.h).
Result<uint64_t> Number(std::string_view text) {
  auto v = flashpipe::ParseNumber(text);
  if (!v.ok()) return InvalidArgument(fmt::format("'{}' is not a number: {}", text.substr(0, 40), v.status().message()));
  return v;
}

struct Field {
  std::string key;
  std::optional<std::string> value;  // nullopt: a flag ("bootable")
};

int Hex(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

// A quoted value starting after the opening quote; advances `i` past the
// closing one.
Result<std::string> Quoted(std::string_view s, size_t* i) {
  std::string out;
  while (*i < s.size() && s[*i] != '"') {
    if (s[*i] == '\\' && *i + 3 < s.size() && s[*i + 1] == 'x' && Hex(s[*i + 2]) >= 0 && Hex(s[*i + 3]) >= 0) {
      out.push_back(static_cast<char>(Hex(s[*i + 2]) * 16 + Hex(s[*i + 3])));
      *i += 4;
      continue;
    }
    out.push_back(s[(*i)++]);
  }
  if (*i >= s.size()) return InvalidArgument("a quoted value has no closing '\"'");
  ++*i;
  return out;
}

Result<std::vector<Field>> SplitFields(std::string_view s) {
  std::vector<Field> out;
  size_t i = 0;
  auto sep = [&](char c) { return c == ',' || std::isspace(static_cast<unsigned char>(c)); };
  while (i < s.size()) {
    while (i < s.size() && sep(s[i])) ++i;
    if (i >= s.size()) break;
    size_t k = i;
    while (i < s.size() && s[i] != '=' && !sep(s[i])) ++i;
    Field f{std::string(s.substr(k, i - k)), std::nullopt};
    if (i < s.size() && s[i] == '=') {
      ++i;
      while (i < s.size() && (s[i] == ' ' || s[i] == '\t')) ++i;  // "start=        2048"
      if (i < s.size() && s[i] == '"') {
        ++i;
        auto q = Quoted(s, &i);
        if (!q.ok()) return q.status();
        f.value = std::move(*q);
      } else {
        size_t v = i;
        while (i < s.size() && !sep(s[i])) ++i;
        f.value = std::string(s.substr(v, i - v));
      }
    }
    out.push_back(std::move(f));
  }
  return out;
}

Status ApplyHeader(std::string_view key, std::string_view value, Layout* l) {
  if (key == "label") {
    if (value != "gpt") return Unsupported(fmt::format("label: '{}': only gpt tables are written", value.substr(0, 20)));
  } else if (key == "label-id") {
    FP_ASSIGN_OR_RETURN(l->disk_guid, ParseGuid(value));
  } else if (key == "device") {
    l->device = std::string(value);
  } else if (key == "unit") {
    if (value != "sectors") return Unsupported(fmt::format("unit: '{}': only sectors", value.substr(0, 20)));
  } else if (key == "first-lba") {
    FP_ASSIGN_OR_RETURN(l->first_lba, Number(value));
  } else if (key == "last-lba") {
    FP_ASSIGN_OR_RETURN(l->last_lba, Number(value));
  } else if (key == "table-length") {
    FP_ASSIGN_OR_RETURN(uint64_t n, Number(value));
    if (n > kMaxEntries) return InvalidArgument(fmt::format("{} entries, at most {}", n, kMaxEntries));
    l->table_length = static_cast<uint32_t>(n);
  } else if (key == "sector-size") {
    FP_ASSIGN_OR_RETURN(uint64_t n, Number(value));
    if (n != 512 && n != 1024 && n != 2048 && n != 4096) return InvalidArgument(fmt::format("{} bytes: 512, 1024, 2048 or 4096", n));
    l->sector_size = static_cast<uint32_t>(n);
  } else if (key == "grain") {
    FP_ASSIGN_OR_RETURN(Amount a, ParseAmount(value, PlainUnit::kBytes));
    l->alignment = a.value;
  } else {
    return InvalidArgument("unknown header (label, label-id, device, unit, first-lba, last-lba, table-length, "
                           "sector-size, grain)");
  }
  return Status::Ok();
}

Status ApplyField(const Field& f, PartitionSpec* p) {
  if (f.key == "bootable" && !f.value) {
    p->attributes |= 1u << 2;
    return Status::Ok();
  }
  if (!f.value) {
    return InvalidArgument(fmt::format("'{}' is not key=value (unnamed fields like \"2048,4096,L\" are not "
                                       "read; write start=, size=, type=)", log::Printable(f.key, 40)));
  }
  const std::string& v = *f.value;
  if (f.key == "start") {
    if (v.empty() || v == "-") return Status::Ok();
    FP_ASSIGN_OR_RETURN(p->start, ParseAmount(v, PlainUnit::kSectors));
  } else if (f.key == "size") {
    if (v.empty() || v == "-" || v == "+") return Status::Ok();
    FP_ASSIGN_OR_RETURN(p->size, ParseAmount(v[0] == '+' ? std::string_view(v).substr(1) : v, PlainUnit::kSectors));
  } else if (f.key == "type" || f.key == "Id") {
    FP_ASSIGN_OR_RETURN(p->type, ParseType(v));
  } else if (f.key == "uuid") {
    FP_ASSIGN_OR_RETURN(p->uuid, ParseGuid(v));
  } else if (f.key == "name") {
    p->name = v;
  } else if (f.key == "attrs") {
    FP_ASSIGN_OR_RETURN(uint64_t a, ParseAttributes(v));
    p->attributes |= a;
  } else {
    return InvalidArgument("unknown field (start, size, type, uuid, name, attrs, bootable)");
  }
  return Status::Ok();
}

// "/dev/loop0p3" -> 3.
Result<uint32_t> NodeNumber(std::string_view node) {
  size_t d = node.size();
  while (d > 0 && std::isdigit(static_cast<unsigned char>(node[d - 1]))) --d;
  if (d == node.size() || node.size() - d > 5) {
    return InvalidArgument(fmt::format("node '{}' does not end in a partition number", log::Printable(node, 60)));
  }
  uint32_t n = 0;
  for (size_t i = d; i < node.size(); ++i) n = n * 10 + static_cast<uint32_t>(node[i] - '0');
  if (n == 0) return InvalidArgument(fmt::format("node '{}': partition number 0", log::Printable(node, 60)));
  return n;
}

Status ParsePartitionLine(std::string_view line, std::string where, Layout* l) {
  PartitionSpec p;
  p.where = std::move(where);
  size_t eq = line.find('=');
  size_t colon = line.substr(0, eq).rfind(':');
  if (colon != std::string_view::npos) {
    FP_ASSIGN_OR_RETURN(p.number, NodeNumber(Trim(line.substr(0, colon))));
    line.remove_prefix(colon + 1);
  }
  auto fields = SplitFields(line);
  if (!fields.ok()) return fields.status().WithContext(p.where);
  for (const Field& f : *fields) {
    Status s = ApplyField(f, &p);
    if (!s.ok()) return s.WithContext(fmt::format("{}: {}", p.where, log::Printable(f.key, 40)));
  }
  l->partitions.push_back(std::move(p));
  return Status::Ok();
}

std::string Escape(std::string_view name) {
  std::string out;
  for (char c : name) {
    auto u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\' || u < 0x20 || u == 0x7f) {
      out += fmt::format("\\x{:02x}", u);
    } else {
      out.push_back(c);
    }
  }
  return out;
}

}  // namespace

Result<Layout> ParseSfdiskScript(std::string_view text) {
  Layout l;
  size_t line_no = 0;
  bool saw_partition = false;
  while (!text.empty()) {
    size_t nl = text.find('\n');
    std::string_view raw = text.substr(0, nl);
    text = nl == std::string_view::npos ? "" : text.substr(nl + 1);
    ++line_no;
    std::string_view line = Trim(raw);
    if (line.empty() || line[0] == '#') continue;
    std::string where = fmt::format("line {}", line_no);
    size_t colon = line.find(':');
    bool header = line.find('=') == std::string_view::npos && colon != std::string_view::npos &&
                  line.substr(0, colon).find_first_of(" \t/") == std::string_view::npos;
    if (header) {
      if (saw_partition) return InvalidArgument(fmt::format("{}: header line after the partitions", where));
      std::string_view key = line.substr(0, colon);
      Status s = ApplyHeader(key, Trim(line.substr(colon + 1)), &l);
      if (!s.ok()) return s.WithContext(fmt::format("{}: {}", where, log::Printable(key, 40)));
      continue;
    }
    saw_partition = true;
    FP_RETURN_IF_ERROR(ParsePartitionLine(line, where, &l));
  }
  return l;
}

std::string FormatSfdiskScript(const Table& t, std::string_view device) {
  std::string out = fmt::format("label: gpt\nlabel-id: {}\n", FormatGuid(t.disk_guid));
  if (!device.empty()) out += fmt::format("device: {}\n", device);
  out += fmt::format("unit: sectors\nfirst-lba: {}\nlast-lba: {}\n", t.first_usable, t.last_usable);
  if (t.num_entries != kDefaultEntries) out += fmt::format("table-length: {}\n", t.num_entries);
  out += fmt::format("sector-size: {}\n\n", t.sector_size);
  const char* p = !device.empty() && std::isdigit(static_cast<unsigned char>(device.back())) ? "p" : "";
  for (const Partition& part : t.partitions) {
    std::string node = device.empty() ? fmt::format("{}", part.number) : fmt::format("{}{}{}", device, p, part.number);
    out += fmt::format("{} : start={:>12}, size={:>12}, type={}, uuid={}", node, part.start, part.size,
                       FormatGuid(part.type), FormatGuid(part.uuid));
    if (!part.name.empty()) out += fmt::format(", name=\"{}\"", Escape(part.name));
    if (part.attributes != 0) out += fmt::format(", attrs=\"{}\"", FormatAttributes(part.attributes));
    out += "\n";
  }
  return out;
}

}  // namespace flashpipe::partition
