#include "lp/update_super.h"

#include "lp/builder.h"

namespace flashpipe::lp {
namespace {

// Neither preserved by fastbootd: the overlay scratch space and the
// snapshots of a virtual A/B update.
constexpr std::string_view kScratch = "scratch";
constexpr std::string_view kCowGroup = "cow";

std::string Describe(const Geometry& g) {
  return fmt::format("{} slots of {} bytes, {}-byte blocks", g.metadata_slot_count, g.metadata_max_size,
                     g.logical_block_size);
}

bool SameGeometry(const Geometry& a, const Geometry& b) {
  return a.metadata_max_size == b.metadata_max_size && a.metadata_slot_count == b.metadata_slot_count &&
         a.logical_block_size == b.logical_block_size;
}

Status CheckTarget(const SuperTarget& target, const Metadata& incoming) {
  if (incoming.block_devices.size() != 1) {
    return Unsupported(fmt::format("super_empty.img describes {} block devices; only a single super is served",
                                   incoming.block_devices.size()));
  }
  const BlockDeviceEntry& d = incoming.block_devices[0];
  if (d.partition_name != target.name) {
    return InvalidArgument(fmt::format("super_empty.img is for block device '{}', the super partition here is '{}'",
                                       d.partition_name, target.name));
  }
  if (d.size != target.size) {
    return InvalidArgument(fmt::format("super_empty.img is for a super of {} bytes, '{}' has {}", d.size,
                                       target.name, target.size));
  }
  if (target.geometry && !SameGeometry(*target.geometry, incoming.geometry)) {
    return InvalidArgument(fmt::format("super_empty.img's geometry ({}) differs from the device's ({})",
                                       Describe(incoming.geometry), Describe(*target.geometry)));
  }
  return Status::Ok();
}

bool Keep(const Metadata& old, const PartitionEntry& p, std::string_view suffix) {
  if (!suffix.empty() && p.name.ends_with(suffix)) return false;
  return p.name != kScratch && old.groups[p.group_index].name != kCowGroup;
}

}  // namespace

Result<UpdateSuperPlan> PlanUpdateSuper(const SuperTarget& target, const Metadata& incoming, const Metadata* old,
                                        std::string_view slot_suffix, bool wipe) {
  FP_RETURN_IF_ERROR(CheckTarget(target, incoming));
  UpdateSuperPlan plan;
  if (wipe || old == nullptr) {
    plan.metadata = incoming;
    plan.flash = true;
    return plan;
  }
  FP_ASSIGN_OR_RETURN(Builder b, Builder::FromMetadata(incoming));
  const std::string wipe_hint = fmt::format("use update-super:{}:wipe", target.name);
  for (const PartitionEntry& p : old->partitions) {
    if (!Keep(*old, p, slot_suffix)) continue;
    if (old->block_devices != incoming.block_devices) {
      return InvalidArgument(fmt::format("partition {} is kept, but the block devices of the new layout differ; {}",
                                         p.name, wipe_hint));
    }
    if (Status st = b.ImportPartition(*old, p); !st.ok()) {
      return Status(st.code(), fmt::format("cannot keep {}: {}; {}", p.name, st.message(), wipe_hint));
    }
    plan.kept.push_back(p.name);
  }
  FP_ASSIGN_OR_RETURN(plan.metadata, b.Export());
  return plan;
}

}  // namespace flashpipe::lp
