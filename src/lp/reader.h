// Reading liblp metadata: parse and check every rule of docs/lp_format.md,
// falling back from a copy that breaks one to the other copy.
//
// Every error names the copy, the byte offset of the copy (or of the table
// entry) and the rule, the way the sparse decoder names chunk and offset:
//   "slot 0 primary metadata at byte 0x3000: partition 2 (byte 0x3134):
//    group_index 5 >= 3 groups"
// When both copies are bad, the error carries both reasons. Memory is the
// one copy being parsed (its tables are at most kMaxTablesSize bytes).
// Stateless functions; thread-compatible.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "lp/block_io.h"
#include "lp/metadata.h"

namespace flashpipe::lp {

// A limit of flashpipe, not of the format: 64 MiB of tables is over a
// million partitions, and no copy is allocated larger than this.
inline constexpr uint32_t kMaxTablesSize = 64u << 20;

enum class Copy { kPrimary, kBackup };

// One geometry copy; `block` holds its bytes (at least 52). `where` is its
// byte offset, for messages.
Result<Geometry> ParseGeometryCopy(std::span<const uint8_t> block, uint64_t where);

// One metadata copy (header, then tables) at the start of `bytes`, checked
// against geometry `g`. `label` ("slot 1 backup metadata") and `where` (its
// byte offset) name it in errors.
Result<Metadata> ParseMetadataCopy(const Geometry& g, std::span<const uint8_t> bytes, std::string_view label,
                                   uint64_t where);

// The geometry: the primary copy if valid, else the backup.
Result<Geometry> ReadGeometry(BlockIo& io);
// One copy of one slot, reading only the bytes its header declares; with
// `bytes`, also its exact bytes (header and tables), which repair copies.
Result<Metadata> ReadMetadataCopy(BlockIo& io, const Geometry& g, uint32_t slot, Copy copy,
                                  std::vector<uint8_t>* bytes = nullptr);
// The metadata of `slot`: the primary copy if valid, else the backup.
Result<Metadata> ReadMetadata(BlockIo& io, uint32_t slot);

// The state of every copy on a super, for dump and repair.
struct CopyState {
  uint64_t offset = 0;
  Status status;  // OK: the copy is valid
};
struct SuperState {
  std::array<CopyState, 2> geometry;  // primary, backup
  std::optional<Geometry> in_use;     // the geometry the slots were read with
  std::vector<std::array<CopyState, 2>> slots;
};
// Fails only on I/O errors; corrupt copies are reported in the result, for
// the first kMaxInspectedSlots slots at most (real supers have 1 to 3).
inline constexpr uint32_t kMaxInspectedSlots = 64;
Result<SuperState> InspectSuper(BlockIo& io);

// "label at byte 0x..: " prefix of this reader's messages.
std::string CopyLabel(uint32_t slot, Copy copy);

// super_empty.img: one geometry block at byte 0 and one metadata copy after it.
bool HasEmptyImageMagic(std::span<const uint8_t> head);  // geometry magic at byte 0
Result<Metadata> ParseEmptyImage(std::span<const uint8_t> bytes);
// Reads a super_empty.img from `io` (which is that small file).
Result<Metadata> ReadEmptyImage(BlockIo& io);

}  // namespace flashpipe::lp
