// PlanUpdateSuper: what fastboot's `update-super:NAME[:wipe]` writes, decided
// from a downloaded super_empty.img and the device's metadata, before any
// byte is written. Pure: no I/O (the caller reads and writes the super).
//
// The rules, as fastbootd applies them:
//   - the image describes exactly the device's super: one block device, of
//     the super partition's name and size, and (when the device holds a
//     valid geometry) the same geometry, even with wipe: a new geometry
//     would move the metadata copies, which cannot be done crash-safely;
//   - with wipe, or when the device's metadata cannot be read, the image's
//     metadata replaces everything (FlashMetadata);
//   - otherwise the partitions of the other slots are kept with their
//     extents (those whose name does not end in the current slot's suffix;
//     every partition when the device has no slots), except "scratch" and
//     the snapshot group "cow"; each is carried into the image's layout
//     (Builder::ImportPartition), and a layout that cannot take one is
//     refused ("...: use update-super:super:wipe"); the result goes to every
//     slot (UpdateMetadata, primary then backup, per slot).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "lp/metadata.h"

namespace flashpipe::lp {

// The device's super partition as update-super sees it.
struct SuperTarget {
  std::string name;                  // the super partition's name
  uint64_t size = 0;                 // its bytes
  std::optional<Geometry> geometry;  // its valid geometry, if any
};

struct UpdateSuperPlan {
  Metadata metadata;   // what to write
  bool flash = false;  // whole super (FlashMetadata), else every slot (UpdateMetadata)
  std::vector<std::string> kept;  // partitions carried over from `old`
};

// `incoming`: the parsed super_empty.img. `old`: the device's metadata of the
// current slot, nullptr when it cannot be read. `slot_suffix`: "_a", "_b",
// or "" on a device without slots.
Result<UpdateSuperPlan> PlanUpdateSuper(const SuperTarget& target, const Metadata& incoming, const Metadata* old,
                                        std::string_view slot_suffix, bool wipe);

}  // namespace flashpipe::lp
