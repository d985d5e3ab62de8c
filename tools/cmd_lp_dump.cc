// lp dump [--slot N] [--json[=FILE]] SUPER: the metadata of one slot of a
// super image (raw or sparse), a block device or a super_empty.img, printed
// as lpdump prints it, then the state of every copy (which are valid, why
// the others are not). Exit 1 when no valid copy of the slot exists.
#include <algorithm>
#include <cstdio>
#include <tuple>

#include "base/json.h"
#include "base/utf8.h"
#include "lp/reader.h"
#include "superimg/open_super.h"
#include "tools/commands.h"
#include "tools/flags.h"
#include "tools/lp_tools.h"

namespace flashpipe::tools {
namespace {

std::string Flags(uint32_t flags, uint32_t known_bit, const char* known_name) {
  std::string out;
  for (uint32_t bit = 0; bit < 32; ++bit) {
    if (!(flags & (1u << bit))) continue;
    if (!out.empty()) out += ',';
    out += (1u << bit) == known_bit ? std::string(known_name) : fmt::format("unknown_flag_bit_{}", bit);
  }
  return out.empty() ? "none" : out;
}

// Names come from the image: printed escaped (base/utf8.h), never raw.
std::string Shown(std::string_view name) { return TerminalText(name); }

std::string GroupOf(const lp::Metadata& m, const lp::PartitionEntry& p) { return m.groups[p.group_index].name; }

std::string ExtentsText(const lp::Metadata& m, const lp::PartitionEntry& p) {
  std::string out;
  uint64_t first = 0;
  for (const auto& e : lp::ExtentsOf(m, p)) {
    out += fmt::format("    {} .. {} ", first, first + e.num_sectors - 1);
    out += e.target_type == lp::kTargetLinear
               ? fmt::format("linear {} {}\n", Shown(m.block_devices[e.target_source].partition_name), e.target_data)
               : std::string("zero\n");
    first += e.num_sectors;
  }
  return out;
}

std::string LayoutText(const lp::Metadata& m) {
  std::vector<std::tuple<uint32_t, uint64_t, uint64_t, std::string>> linear;
  for (const auto& p : m.partitions) {
    for (const auto& e : lp::ExtentsOf(m, p)) {
      if (e.target_type == lp::kTargetLinear) linear.emplace_back(e.target_source, e.target_data, e.num_sectors, p.name);
    }
  }
  std::sort(linear.begin(), linear.end());
  std::string out;
  for (const auto& [dev, start, n, name] : linear) {
    out += fmt::format("{}: {} .. {}: {} ({} sectors)\n", Shown(m.block_devices[dev].partition_name), start, start + n,
                       Shown(name), n);
  }
  return out;
}

constexpr const char* kRule = "------------------------\n";

}  // namespace

std::string LpText(const lp::Metadata& m) {
  std::string out = fmt::format(
      "Metadata version: {}.{}\nMetadata size: {} bytes\nMetadata max size: {} bytes\nMetadata slot count: {}\n"
      "Header flags: {}\nPartition table:\n{}",
      m.header.major_version, m.header.minor_version, m.header.header_size + m.header.tables_size,
      m.geometry.metadata_max_size, m.geometry.metadata_slot_count,
      Flags(m.header.flags, lp::kHeaderFlagVirtualAb, "virtual_ab_device"), kRule);
  for (const auto& p : m.partitions) {
    out += fmt::format("  Name: {}\n  Group: {}\n  Attributes: {}\n  Extents:\n{}{}", Shown(p.name),
                       Shown(GroupOf(m, p)), lp::AttributeNames(p.attributes), ExtentsText(m, p), kRule);
  }
  out += fmt::format("Super partition layout:\n{}{}{}Block device table:\n{}", kRule, LayoutText(m), kRule, kRule);
  for (const auto& b : m.block_devices) {
    out += fmt::format("  Partition name: {}\n  First sector: {}\n  Size: {} bytes\n  Flags: {}\n{}",
                       Shown(b.partition_name), b.first_logical_sector, b.size,
                       Flags(b.flags, lp::kBlockDeviceSlotSuffixed, "slot-suffixed"), kRule);
  }
  out += fmt::format("Group table:\n{}", kRule);
  for (const auto& g : m.groups) {
    out += fmt::format("  Name: {}\n  Maximum size: {} bytes\n  Flags: {}\n{}", Shown(g.name), g.maximum_size,
                       Flags(g.flags, lp::kGroupSlotSuffixed, "slot-suffixed"), kRule);
  }
  return out;
}

std::string LpJson(const lp::Metadata& m) {
  std::string parts, groups, devices;
  for (const auto& p : m.partitions) {
    std::string extents;
    for (const auto& e : lp::ExtentsOf(m, p)) {
      extents += fmt::format("{}{{\"num_sectors\": {}, \"target_type\": \"{}\", \"target_data\": {}, "
                             "\"target_source\": {}}}", extents.empty() ? "" : ", ", e.num_sectors,
                             e.target_type == lp::kTargetLinear ? "linear" : "zero", e.target_data, e.target_source);
    }
    parts += fmt::format("{}\n  {{\"name\": {}, \"group\": {}, \"attributes\": {}, \"attribute_names\": \"{}\", "
                         "\"size\": {}, \"extents\": [{}]}}", parts.empty() ? "" : ",", JsonString(p.name),
                         JsonString(GroupOf(m, p)), p.attributes, lp::AttributeNames(p.attributes),
                         lp::PartitionSize(m, p), extents);
  }
  for (const auto& g : m.groups) {
    groups += fmt::format("{}\n  {{\"name\": {}, \"maximum_size\": {}, \"flags\": {}}}", groups.empty() ? "" : ",",
                          JsonString(g.name), g.maximum_size, g.flags);
  }
  for (const auto& b : m.block_devices) {
    devices += fmt::format("{}\n  {{\"partition_name\": {}, \"first_logical_sector\": {}, \"alignment\": {}, "
                           "\"alignment_offset\": {}, \"size\": {}, \"flags\": {}}}", devices.empty() ? "" : ",",
                           JsonString(b.partition_name), b.first_logical_sector, b.alignment, b.alignment_offset,
                           b.size, b.flags);
  }
  return fmt::format("\"geometry\": {{\"metadata_max_size\": {}, \"metadata_slot_count\": {}, "
                     "\"logical_block_size\": {}}},\n \"header\": {{\"major_version\": {}, \"minor_version\": {}, "
                     "\"header_size\": {}, \"tables_size\": {}, \"flags\": {}}},\n \"partitions\": [{}],\n "
                     "\"groups\": [{}],\n \"block_devices\": [{}]",
                     m.geometry.metadata_max_size, m.geometry.metadata_slot_count, m.geometry.logical_block_size,
                     m.header.major_version, m.header.minor_version, m.header.header_size, m.header.tables_size,
                     m.header.flags, parts, groups, devices);
}

namespace {

struct CopyLine {
  std::string what;
  lp::CopyState state;
};

// Every copy's state, for a super (not a super_empty.img).
Result<std::vector<CopyLine>> Copies(superimg::SuperFile& f) {
  std::vector<CopyLine> out;
  if (f.kind == superimg::SuperFile::Kind::kEmpty) return out;
  FP_ASSIGN_OR_RETURN(lp::SuperState st, lp::InspectSuper(*f.io));
  out.push_back({"geometry primary", st.geometry[0]});
  out.push_back({"geometry backup", st.geometry[1]});
  for (uint32_t s = 0; s < st.slots.size(); ++s) {
    out.push_back({lp::CopyLabel(s, lp::Copy::kPrimary), st.slots[s][0]});
    out.push_back({lp::CopyLabel(s, lp::Copy::kBackup), st.slots[s][1]});
  }
  return out;
}

std::string CopiesText(const std::vector<CopyLine>& copies) {
  if (copies.empty()) return "";
  std::string out = fmt::format("Copies:\n{}", kRule);
  for (const auto& c : copies) {
    out += fmt::format("  {} at byte 0x{:x}: {}\n", c.what, c.state.offset,
                       c.state.status.ok() ? "valid" : c.state.status.message());
  }
  return out + kRule;
}

std::string CopiesJson(const std::vector<CopyLine>& copies) {
  std::string out;
  for (const auto& c : copies) {
    out += fmt::format("{}\n  {{\"copy\": {}, \"offset\": {}, \"valid\": {}", out.empty() ? "" : ",",
                       JsonString(c.what), c.state.offset, c.state.status.ok() ? "true" : "false");
    if (!c.state.status.ok()) out += fmt::format(", \"error\": {}", JsonString(c.state.status.message()));
    out += "}";
  }
  return out;
}

Status Dump(const std::string& path, uint32_t slot, const std::string& json_path) {
  FP_RETURN_IF_ERROR(CheckJsonFile(json_path, {path}));
  FP_ASSIGN_OR_RETURN(superimg::SuperFile f, superimg::OpenSuper(path));
  FP_ASSIGN_OR_RETURN(lp::Metadata m, superimg::ReadSuperMetadata(f, slot));
  FP_ASSIGN_OR_RETURN(std::vector<CopyLine> copies, Copies(f));
  if (!json_path.empty()) {
    return WriteJson(json_path, fmt::format("{{{}, \"file\": {}, \"kind\": \"{}\", \"slot\": {},\n {},\n \"copies\": [{}]}}",
                                            JsonSchemaMembers("lp-dump", 1), JsonString(path), superimg::KindName(f.kind), slot, LpJson(m),
                                            CopiesJson(copies)));
  }
  std::string text = LpText(m) + CopiesText(copies);
  std::fwrite(text.data(), 1, text.size(), stdout);
  return std::fflush(stdout) == 0 ? Status::Ok() : ErrnoError("write stdout");
}

}  // namespace

void LpDump::Add(CLI::App& lp) {
  app = lp.add_subcommand("dump", "print the metadata of a super image (raw or sparse), a block device or a "
                                  "super_empty.img, and the state of every copy (like lpdump)");
  app->add_option("-s,--slot", slot, "metadata slot to print (default 0)");
  AddJsonFlag(*app, json_path, "the metadata and the state of every copy");
  app->add_option("SUPER", path, "super image, block device or super_empty.img")->required();
}

int LpDump::Run() { return ExitWith("lp dump", Dump(path, slot, json_path)); }

}  // namespace flashpipe::tools
