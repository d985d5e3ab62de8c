#include "partition/types.h"

#include <algorithm>
#include <cctype>

#include <fmt/format.h>

namespace flashpipe::partition {
namespace {

struct TypeRow {
  const char* name;
  const char* guid;
  const char* aliases;  // blank-separated; sfdisk letters and other spellings
};

// GUIDs checked against sgdisk 1.0.9 (`sgdisk -t N:CODE`, then sfdisk --dump).
constexpr TypeRow kTypes[] = {
    {"linux", "0FC63DAF-8483-4772-8E79-3D69D8477DE4", "L 8300"},
    {"esp", "C12A7328-F81F-11D2-BA4B-00A0C93EC93B", "uefi efi U ef00"},
    {"swap", "0657FD6D-A4AB-43C4-84E5-0933C84B4F4F", "S 8200"},
    {"bios-boot", "21686148-6449-6E6F-744E-656564454649", "ef02"},
    {"home", "933AC7E1-2EB4-4F13-B844-0E14E2AEF915", "H 8302"},
    {"lvm", "E6D6D379-F507-44C2-A23C-238F2A3DF928", "V 8e00"},
    {"raid", "A19D880F-05FC-4D3B-A006-743F0F84911E", "R fd00"},
    {"msft-data", "EBD0A0A2-B9E5-4433-87C0-68B6B72699C7", "0700"},
    {"msft-reserved", "E3C9E316-0B5C-4DB8-817D-F92DF00215AE", "0c01"},
    {"u-boot-env", "3DE21764-95BD-54BD-A5C3-4ABE786F38A8", ""},
    {"android-bootloader", "2568845D-2332-4675-BC39-8FA5A4748D15", "a000"},
    {"android-bootloader2", "114EAFFE-1552-4022-B26E-9B053604CF84", "a001"},
    {"android-boot", "49A4D17F-93A3-45C1-A0DE-F50B2EBE2599", "a002"},
    {"android-recovery", "4177C722-9E92-4AAB-8644-43502BFD5506", "a003"},
    {"android-misc", "EF32A33B-A409-486C-9141-9FFB711F6266", "a004"},
    {"android-metadata", "20AC26BE-20B7-11E3-84C5-6CFDB94711E9", "a005"},
    {"android-system", "38F428E6-D326-425D-9140-6E0EA133647C", "a006"},
    {"android-cache", "A893EF21-E428-470A-9E55-0668FD91A2D9", "a007"},
    {"android-data", "DC76DDA9-5AC1-491C-AF42-A82591580C0D", "a008"},
    {"android-persistent", "EBC597D0-2053-4B15-8B64-E0AAC75F4DB1", "a009"},
    {"android-factory", "8F68CC74-C5E5-48DA-BE91-A0C8C15E9C80", "a00a"},
    {"android-fastboot", "767941D0-2085-11E3-AD3B-6CFDB94711E9", "a00b"},
    {"android-oem", "AC6D7924-EB71-4DF8-B48D-E267B27148FF", "a00c"},
    {"android-vendor", "C5A0AEEC-13EA-11E5-A1B1-001E67CA0C3C", "a00d"},
    {"android-config", "BD59408B-4514-490D-BF12-9878D963F378", "a00e"},
    {"android-factory-alt", "9FDAA6EF-4B3F-40D2-BA8D-BFF16BFB887B", "a00f"},
    {"android-meta", "19A710A2-B3CA-11E4-B026-10604B889DCF", "a010"},
    {"android-ext", "193D1EA4-B3CA-11E4-B075-10604B889DCF", "a011"},
    {"android-recovery2", "9D72D4E4-9958-42DA-AC26-BEA7A90B0434", "a025"},
    {"android-boot2", "20117F86-E985-4357-B9EE-374BC1D8487D", "a036"},
    {"android-system2", "97D7B011-54DA-4835-B3C4-917AD6E73D74", "a038"},
    {"android-userdata", "1B81E7E6-F50D-419B-A739-2AEEF8DA3335", "a03a"},
};

// U-Boot's own names (lib/uuid.c list_guid) where they differ from ours.
constexpr std::pair<const char*, const char*> kUbootNames[] = {
    {"system", "esp"}, {"data", "msft-data"}, {"msft", "msft-reserved"},
};

bool HasAlias(const TypeRow& row, std::string_view text) {
  std::string_view aliases = row.aliases;
  while (!aliases.empty()) {
    size_t sp = aliases.find(' ');
    std::string_view a = aliases.substr(0, sp);
    // sfdisk's letters are case-sensitive in spirit but people type both.
    if (a.size() == text.size() &&
        std::equal(a.begin(), a.end(), text.begin(), [](char x, char y) { return std::tolower(x) == std::tolower(y); })) {
      return true;
    }
    aliases = sp == std::string_view::npos ? "" : aliases.substr(sp + 1);
  }
  return false;
}

const TypeRow* FindName(std::string_view text) {
  for (const TypeRow& row : kTypes) {
    if (text == row.name || HasAlias(row, text)) return &row;
  }
  return nullptr;
}

}  // namespace

Result<Guid> ParseType(std::string_view text, TypeNames names) {
  if (text.size() == 36) return ParseGuid(text);
  if (names == TypeNames::kUboot) {
    for (const auto& [uboot, ours] : kUbootNames) {
      if (text == uboot) text = ours;
    }
  }
  if (const TypeRow* row = FindName(text)) return ParseGuid(row->guid);
  return InvalidArgument(fmt::format("unknown partition type '{}' (a GUID, or a name such as linux, esp, swap, "
                                     "android-system, android-userdata; flashpipe partition --help lists them)",
                                     text.substr(0, 60)));
}

std::string TypeName(const Guid& type) {
  std::string text = FormatGuid(type);
  for (const TypeRow& row : kTypes) {
    if (text == row.guid) return row.name;
  }
  return "";
}

std::vector<std::pair<std::string, std::string>> KnownTypes() {
  std::vector<std::pair<std::string, std::string>> out;
  for (const TypeRow& row : kTypes) out.emplace_back(row.name, row.guid);
  return out;
}

}  // namespace flashpipe::partition
