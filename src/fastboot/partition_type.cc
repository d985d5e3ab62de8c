#include "fastboot/partition_type.h"

#include <algorithm>

#include <fmt/format.h>

namespace flashpipe::fastboot {
namespace {

// Type GUIDs of partitions made for a filesystem (as sgdisk names them).
constexpr std::string_view kFilesystemGuids[] = {
    "0FC63DAF-8483-4772-8E79-3D69D8477DE4",  // Linux filesystem data (8300)
    "DC76DDA9-5AC1-491C-AF42-A82591580C0D",  // Android data (a008)
    "A893EF21-E428-470A-9E55-0668FD91A2D9",  // Android cache (a007)
    "20AC26BE-20B7-11E3-84C5-6CFDB94711E9",  // Android metadata (a005)
    "193D1EA4-B3CA-11E4-B075-10604B889DCF",  // Android EXT (a011)
    "1B81E7E6-F50D-419B-A739-2AEEF8DA3335",  // Android user data, Qualcomm (a03a)
    "5594C694-C871-4B5F-90B1-690A6F68E0F7",  // Android cache, Qualcomm (a039)
};

constexpr std::string_view kTypes[] = {"ext4", "f2fs", "raw"};

bool IsValidName(std::string_view name) {
  return !name.empty() && name.size() <= 36 && std::all_of(name.begin(), name.end(), [](char c) {
    return c > 0x20 && c < 0x7f && c != ':' && c != '=';
  });
}

// "boot_a" -> "boot"; "" when the name has no slot suffix.
std::string_view SlotBase(std::string_view name) {
  if (name.size() > 2 && name[name.size() - 2] == '_' && (name.back() == 'a' || name.back() == 'b')) {
    return name.substr(0, name.size() - 2);
  }
  return {};
}

}  // namespace

Result<PartitionTypeSetting> ParsePartitionTypeSetting(std::string_view text) {
  size_t eq = text.find('=');
  std::string_view name = text.substr(0, eq);
  std::string_view type = eq == std::string_view::npos ? std::string_view() : text.substr(eq + 1);
  if (eq == std::string_view::npos || !IsValidName(name) ||
      std::find(std::begin(kTypes), std::end(kTypes), type) == std::end(kTypes)) {
    return InvalidArgument(fmt::format("--partition-type '{}': expected NAME=ext4|f2fs|raw", text));
  }
  return PartitionTypeSetting{std::string(name), std::string(type)};
}

std::string GuidString(const TypeGuid& g) {
  return fmt::format("{:02X}{:02X}{:02X}{:02X}-{:02X}{:02X}-{:02X}{:02X}-{:02X}{:02X}-{:02X}{:02X}{:02X}{:02X}{:02X}{:02X}",
                     g[3], g[2], g[1], g[0], g[5], g[4], g[7], g[6], g[8], g[9], g[10], g[11], g[12], g[13], g[14],
                     g[15]);
}

bool IsFilesystemGuid(const TypeGuid& guid) {
  std::string s = GuidString(guid);
  return std::find(std::begin(kFilesystemGuids), std::end(kFilesystemGuids), s) != std::end(kFilesystemGuids);
}

std::string ChoosePartitionType(std::string_view name, const TypeGuid& guid,
                                const std::vector<PartitionTypeSetting>& settings,
                                const std::function<std::string()>& probe) {
  std::string_view base = SlotBase(name);
  for (std::string_view key : {name, base}) {
    if (key.empty()) continue;
    for (const auto& s : settings) {
      if (s.name == key) return s.type;
    }
  }
  std::string found = probe();
  if (IsFilesystemGuid(guid)) return found == "f2fs" ? found : "ext4";
  return found;
}

}  // namespace flashpipe::fastboot
