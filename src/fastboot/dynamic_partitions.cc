#include "fastboot/dynamic_partitions.h"

#include <fcntl.h>

#include "base/log.h"
#include "base/unique_fd.h"
#include "lp/reader.h"
#include "lp/update_super.h"
#include "lp/writer.h"

namespace flashpipe::fastboot {
namespace {

class OwnedFdBlockIo final : public lp::BlockIo {
 public:
  OwnedFdBlockIo(UniqueFd fd, std::string name, uint64_t offset, uint64_t size)
      : fd_(std::move(fd)), io_(fd_.get(), std::move(name), offset, size, true) {}
  std::string_view name() const override { return io_.name(); }
  uint64_t size() const override { return io_.size(); }
  Status Read(uint64_t offset, std::span<uint8_t> out) override { return io_.Read(offset, out); }
  Status Write(uint64_t offset, std::span<const uint8_t> data) override { return io_.Write(offset, data); }
  Status Sync() override { return io_.Sync(); }

 private:
  UniqueFd fd_;
  lp::FdBlockIo io_;
};

uint32_t MetadataSlot(char slot, const lp::Geometry& g) {
  const uint32_t n = slot == 'b' ? 1 : 0;
  return n < g.metadata_slot_count ? n : 0;
}

}  // namespace

Result<std::unique_ptr<lp::BlockIo>> OpenSuperIo(const std::string& path, std::string name, uint64_t offset,
                                                 uint64_t size) {
  UniqueFd fd(::open(path.c_str(), O_RDWR | O_CLOEXEC));
  if (!fd.valid()) return ErrnoError(fmt::format("open {} for the metadata of '{}'", path, name));
  return std::unique_ptr<lp::BlockIo>(new OwnedFdBlockIo(std::move(fd), std::move(name), offset, size));
}

DynamicPartitions::DynamicPartitions(Partition super, std::unique_ptr<lp::BlockIo> io, char slot)
    : super_(std::move(super)), io_(std::move(io)), slot_(slot) {}

Result<std::unique_ptr<DynamicPartitions>> DynamicPartitions::Open(Partition super, std::unique_ptr<lp::BlockIo> io,
                                                                   char slot) {
  std::unique_ptr<DynamicPartitions> d(new DynamicPartitions(std::move(super), std::move(io), slot));
  FP_RETURN_IF_ERROR(d->Load());
  return d;
}

const Partition* DynamicPartitions::Find(std::string_view name) const {
  for (const auto& p : partitions_) {
    if (p.name == name) return &p;
  }
  return nullptr;
}

void DynamicPartitions::SelectSlot(char slot) {
  if (slot == slot_) return;
  slot_ = slot;
  Reload();
}

void DynamicPartitions::Reload() {
  if (Status st = Load(); !st.ok()) log::Warn("super '{}': {}", super_.name, st.ToString());
}

// The metadata decides where the daemon writes: anything it does not
// describe inside this partition is not served.
Status DynamicPartitions::Serveable(const lp::Metadata& m) const {
  if (m.block_devices.size() != 1) {
    return Unsupported(fmt::format("its metadata spans {} block devices; only a single super is served",
                                   m.block_devices.size()));
  }
  if (m.block_devices[0].size > super_.size) {
    return InvalidArgument(fmt::format("its metadata describes {} bytes, the partition has {}",
                                       m.block_devices[0].size, super_.size));
  }
  return Status::Ok();
}

Partition DynamicPartitions::ToPartition(const lp::Metadata& m, const lp::PartitionEntry& e) const {
  Partition p{e.name, super_.backing, super_.offset, lp::PartitionSize(m, e)};
  p.logical = true;
  for (const auto& x : lp::ExtentsOf(m, e)) {
    if (x.target_type != lp::kTargetLinear) continue;
    p.extents.push_back({super_.offset + x.target_data * lp::kSectorSize, x.num_sectors * lp::kSectorSize});
  }
  if (!p.extents.empty()) p.offset = p.extents[0].device_offset;
  return p;
}

Status DynamicPartitions::Load() {
  metadata_.reset();
  partitions_.clear();
  auto repaired = lp::RepairMetadata(*io_);
  if (!repaired.ok() && repaired.status().code() == Code::kIoError) return repaired.status();
  for (const auto& label : repaired.ok() ? *repaired : std::vector<std::string>()) {
    log::Warn("super '{}': {} was corrupt or stale: repaired from its valid copy", super_.name, label);
  }
  auto g = lp::ReadGeometry(*io_);
  if (!g.ok()) {
    if (g.status().code() == Code::kIoError) return g.status();
    log::Info("super '{}': no logical partitions (no valid metadata: {})", super_.name, g.status().message());
    return Status::Ok();
  }
  if (!repaired.ok()) log::Warn("super '{}': {}", super_.name, repaired.status().message());
  const uint32_t slot = MetadataSlot(slot_, *g);
  auto m = lp::ReadMetadata(*io_, slot);
  Status why = m.ok() ? Serveable(*m) : m.status();
  if (!why.ok()) {
    if (why.code() == Code::kIoError) return why;
    log::Warn("super '{}': no logical partitions (metadata slot {}: {})", super_.name, slot, why.message());
    return Status::Ok();
  }
  for (const auto& e : m->partitions) {
    if (Status st = lp::CheckName("partition", e.name); !st.ok()) {
      log::Warn("super '{}': {}: not served", super_.name, st.message());
      continue;
    }
    partitions_.push_back(ToPartition(*m, e));
  }
  metadata_ = std::move(*m);
  log::Debug("super '{}': metadata slot {}, {} logical partitions", super_.name, slot, partitions_.size());
  return Status::Ok();
}

Status DynamicPartitions::WriteEverySlot(const lp::Metadata& m) {
  for (uint32_t slot = 0; slot < m.geometry.metadata_slot_count; ++slot) {
    FP_RETURN_IF_ERROR(lp::UpdateMetadata(*io_, m, slot).WithContext(fmt::format("metadata slot {}", slot)));
  }
  return Status::Ok();
}

// Reads back what was written, whether it all went or not.
Status DynamicPartitions::Edit(const std::function<Status(lp::Builder&)>& edit) {
  if (!metadata_) {
    return InvalidArgument(fmt::format("super '{}' holds no metadata: flash a super_empty.img (update-super) first",
                                       super_.name));
  }
  FP_ASSIGN_OR_RETURN(lp::Builder b, lp::Builder::FromMetadata(*metadata_));
  FP_RETURN_IF_ERROR(edit(b));
  FP_ASSIGN_OR_RETURN(lp::Metadata m, b.Export());
  Status st = WriteEverySlot(m);
  Reload();
  return st;
}

Status DynamicPartitions::UpdateSuper(std::span<const uint8_t> image, bool wipe, std::string_view slot_suffix) {
  auto incoming = lp::ParseEmptyImage(image);
  if (!incoming.ok()) return incoming.status().WithContext("super_empty.img");
  lp::SuperTarget target{super_.name, super_.size, std::nullopt};
  auto g = lp::ReadGeometry(*io_);
  if (g.ok()) target.geometry = *g;
  FP_ASSIGN_OR_RETURN(lp::UpdateSuperPlan plan,
                      lp::PlanUpdateSuper(target, *incoming, metadata_ ? &*metadata_ : nullptr, slot_suffix, wipe));
  Status st = plan.flash ? lp::FlashMetadata(*io_, plan.metadata) : WriteEverySlot(plan.metadata);
  if (st.ok()) {
    log::Info("super '{}': update-super{}: {} partitions{}", super_.name, wipe ? " (wipe)" : "",
              plan.metadata.partitions.size(),
              plan.kept.empty() ? "" : fmt::format(", kept {} of the other slot", plan.kept.size()));
  }
  Reload();
  return st;
}

Status DynamicPartitions::Create(const std::string& name, uint64_t size) {
  return Edit([&](lp::Builder& b) {
    FP_RETURN_IF_ERROR(b.AddPartition(name, lp::kDefaultGroup, 0));
    return b.ResizePartition(name, size);
  });
}

Status DynamicPartitions::Delete(const std::string& name) {
  return Edit([&](lp::Builder& b) { return b.RemovePartition(name); });
}

Status DynamicPartitions::Resize(const std::string& name, uint64_t size) {
  return Edit([&](lp::Builder& b) { return b.ResizePartition(name, size); });
}

}  // namespace flashpipe::fastboot
