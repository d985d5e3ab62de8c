// DynamicPartitions: the logical partitions inside a `super` partition, as
// userspace fastboot (fastbootd) serves them: read from the super's liblp
// metadata (src/lp) and changed by update-super and the
// create/delete/resize-logical-partition commands.
//
// Each logical partition is handed out as a Partition (storage.h) with
// logical set and its LINEAR extents as absolute byte ranges of the device
// behind the super, so Storage writes it through the engine's extent window
// (every op inside one extent, never a byte outside) and erases it extent by
// extent. Names are as the metadata has them ("system_a").
//
// Metadata I/O goes through an lp::BlockIo over the whole super partition (a
// buffered descriptor of its own: the engine's is O_DIRECT). Every change is
// checked in full before a byte is written, and written crash-safely by the
// lp writer: to every metadata slot, each slot's primary copy, a sync, its
// backup, a sync (fastbootd keeps all slots alike too). On open and after
// the super itself was flashed or erased, a corrupt copy is repaired from its
// valid twin (the log names each copy repaired). A super without valid
// metadata, or with metadata this daemon does not serve (several block
// devices, a device larger than the partition), has no logical partitions
// until update-super writes new metadata; the log says why.
//
// The metadata slot read follows the device's slot: 'a' is slot 0, 'b' slot
// 1 (slot 0 when the super has a single slot).
// Thread-compatible: the session thread only. The Partitions handed out are
// values; a write-behind job keeps its own copy.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "fastboot/storage.h"
#include "lp/block_io.h"
#include "lp/builder.h"
#include "lp/metadata.h"

namespace flashpipe::fastboot {

class DynamicPartitions {
 public:
  // `super`: the physical partition holding the metadata; `io`: its bytes
  // [0, super.size). Fails on I/O errors only.
  static Result<std::unique_ptr<DynamicPartitions>> Open(Partition super, std::unique_ptr<lp::BlockIo> io, char slot);

  const Partition& super() const { return super_; }
  bool has_metadata() const { return metadata_.has_value(); }
  const std::vector<Partition>& partitions() const { return partitions_; }
  const Partition* Find(std::string_view name) const;

  // Follows a slot change (set_active): reads that slot's metadata.
  void SelectSlot(char slot);
  // Repairs and reads the metadata again (the super itself was written).
  void Reload();

  // update-super: `image` is a super_empty.img; `slot_suffix` the current
  // slot's ("_a", "_b", "" without slots). lp/update_super.h has the rules.
  Status UpdateSuper(std::span<const uint8_t> image, bool wipe, std::string_view slot_suffix);
  // A new, empty partition in group "default", then grown to `size`.
  Status Create(const std::string& name, uint64_t size);
  Status Delete(const std::string& name);
  // Grows (allocating in free space, honouring alignment and the group's
  // maximum size) or shrinks (from the end) to `size` rounded up to whole
  // logical blocks.
  Status Resize(const std::string& name, uint64_t size);

 private:
  DynamicPartitions(Partition super, std::unique_ptr<lp::BlockIo> io, char slot);
  Status Load();  // repair, read, build partitions_; errors are I/O errors
  Status Edit(const std::function<Status(lp::Builder&)>& edit);
  Status WriteEverySlot(const lp::Metadata& m);
  Status Serveable(const lp::Metadata& m) const;
  Partition ToPartition(const lp::Metadata& m, const lp::PartitionEntry& e) const;

  Partition super_;
  std::unique_ptr<lp::BlockIo> io_;
  char slot_;
  std::optional<lp::Metadata> metadata_;
  std::vector<Partition> partitions_;
};

// An lp::BlockIo over [offset, offset + size) of `path`, through a buffered
// read-write descriptor it owns.
Result<std::unique_ptr<lp::BlockIo>> OpenSuperIo(const std::string& path, std::string name, uint64_t offset,
                                                 uint64_t size);

}  // namespace flashpipe::fastboot
