// What `getvar partition-type:NAME` answers. The client formats only
// partitions whose type it knows (ext4, f2fs): `fastboot -w` erases
// userdata, asks its type, and formats it only when the answer is one of
// those. So the answer must not depend on what the partition holds now (an
// erased partition holds nothing), but on what it is for:
//
//   1. the daemon's configuration: --partition-type NAME=ext4|f2fs|raw
//      (NAME, or its base name for NAME_a / NAME_b);
//   2. the GPT partition type GUID: a partition meant for a filesystem
//      (Linux filesystem data; Android data, cache, metadata, EXT, and the
//      Qualcomm user data and cache GUIDs) is ext4, or f2fs when it holds
//      f2fs now;
//   3. otherwise what libblkid finds there ("raw" when nothing).
// Pure, except for the probe the caller passes.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace flashpipe::fastboot {

using TypeGuid = std::array<uint8_t, 16>;  // as stored in a GPT entry

struct PartitionTypeSetting {
  std::string name;  // a partition, or the base name of an A/B pair
  std::string type;  // ext4, f2fs or raw
};

// NAME=ext4|f2fs|raw; errors name the text and the expected syntax.
Result<PartitionTypeSetting> ParsePartitionTypeSetting(std::string_view text);

// "0FC63DAF-8483-4772-8E79-3D69D8477DE4" (the first three fields are
// little-endian on disk).
std::string GuidString(const TypeGuid& guid);
// The GUID names a partition meant to hold a filesystem (step 2 above).
bool IsFilesystemGuid(const TypeGuid& guid);

// Steps 1-3 above. `probe` (libblkid's TYPE, "raw" for none) is called
// only when configuration does not decide.
std::string ChoosePartitionType(std::string_view name, const TypeGuid& guid,
                                const std::vector<PartitionTypeSetting>& settings,
                                const std::function<std::string()>& probe);

}  // namespace flashpipe::fastboot
