// Writing liblp metadata: serialization, and the two ways metadata reaches a
// super, both ordered so that a crash at any point leaves a readable copy.
//
// Whatever is serialized is first parsed back with the reader's checks
// (reader.h), so this writer never puts down metadata that flashpipe (or
// liblp) would refuse to read; such metadata is a kInvalidArgument error
// before any write.
//
// Crash safety rests on the two copies of everything and a sync between
// them: a copy is only overwritten while the other copy is valid and synced.
//   FlashMetadata   whole super: the reserved block, geometry primary, sync,
//                   geometry backup, sync, then each slot's primary, sync,
//                   backup, sync. Safe when the geometry does not change
//                   (the daemon's update-super); a new geometry must be
//                   asked for explicitly (a blank or wiped super).
//   UpdateMetadata  one slot: first a bad or stale copy is repaired from the
//                   good one (otherwise a torn write of the primary could
//                   leave no valid copy), then primary, sync, backup, sync.
//   RepairMetadata  on open: every corrupt or disagreeing copy (geometry and
//                   slots) is rewritten from its valid twin, primary first.
// Each refuses a geometry with more than kMaxInspectedSlots slots or a
// metadata area larger than the device before touching any slot.
// Thread-compatible; the caller serializes access to one super.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"
#include "lp/block_io.h"
#include "lp/metadata.h"

namespace flashpipe::lp {

// One geometry copy: 4096 bytes, checksum computed.
Result<std::vector<uint8_t>> SerializeGeometry(const Geometry& g);
// One metadata copy (header and tables), with the header's version size,
// table descriptors and both checksums computed from `m`'s tables.
Result<std::vector<uint8_t>> SerializeMetadata(const Metadata& m);
// A super_empty.img: geometry block then one metadata copy.
Result<std::vector<uint8_t>> SerializeEmptyImage(const Metadata& m);

struct FlashOptions {
  // Write even if `io` holds a valid geometry that differs from m.geometry.
  // Not crash-safe (old copies sit where the new geometry does not look).
  bool allow_new_geometry = false;
};
Status FlashMetadata(BlockIo& io, const Metadata& m, const FlashOptions& options = {});
Status UpdateMetadata(BlockIo& io, const Metadata& m, uint32_t slot);
// Returns the labels of the copies rewritten ("geometry backup",
// "slot 0 backup metadata"); a slot with no valid copy is an error.
Result<std::vector<std::string>> RepairMetadata(BlockIo& io);

}  // namespace flashpipe::lp
