// Partition type GUIDs by name, for layouts typed by hand.
//
//   TypeByName("linux")          Linux filesystem data (sgdisk 8300)
//   TypeByName("esp") / "uefi"   EFI system partition (sgdisk ef00)
//   TypeByName("android-system") sgdisk a006 "Android system 1"
//
// Names are the short forms below, sfdisk's one-letter aliases (L, S, U, H,
// R, V) and, in U-Boot layouts only, U-Boot's `type=` names (lib/uuid.c:
// "system" is the EFI system partition there, "data" Microsoft basic
// data). The Android names follow sgdisk's list (`sgdisk -L`, codes
// a000-a03a), lower case with '-' for blanks: "Android boot 1" is
// android-boot, "Android user data" android-userdata. A GUID is taken as
// it is. TypeName gives the short name back, or "" for an unknown GUID.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "partition/guid.h"

namespace flashpipe::partition {

enum class TypeNames { kSfdisk, kUboot };

// A GUID or a name; kInvalidArgument naming the text and a few names.
Result<Guid> ParseType(std::string_view text, TypeNames names = TypeNames::kSfdisk);
std::string TypeName(const Guid& type);
// Every short name with its GUID text, for --help and docs.
std::vector<std::pair<std::string, std::string>> KnownTypes();

inline constexpr std::string_view kLinuxType = "0FC63DAF-8483-4772-8E79-3D69D8477DE4";

}  // namespace flashpipe::partition
