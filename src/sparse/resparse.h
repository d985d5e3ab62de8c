// Resparse: splits a sparse image into parts of at most max_size bytes, the
// layout the fastboot client sends for images above max-download-size. Each
// part is a complete sparse image with the input's blk_sz and total_blks; the
// blocks it does not carry are DONT_CARE (one chunk before its range, one per
// gap, one after). A RAW chunk may be split between parts at a block
// boundary. Laid over each other in order (simg2img part.0 part.1 ...) the
// parts rebuild the input's expanded image exactly. CRC32 chunks are dropped.
//
// Like libsparse, a RAW chunk that does not fit the rest of a part is split
// only if the part is empty or more than 1/8 of it is still free; otherwise
// it starts the next part. The plan holds one entry per chunk of the input.
#pragma once

#include <cstdint>
#include <string_view>
#include <string>
#include <vector>

#include "base/status.h"
#include "sparse/format.h"
#include "sparse/writer.h"

namespace flashpipe::sparse {

// A run of blocks the input defines: RAW (payload at input_offset) or FILL.
struct Extent {
  uint16_t type = kChunkRaw;
  uint64_t block = 0;
  uint32_t blocks = 0;
  uint32_t pattern = 0;
  uint64_t input_offset = 0;
};

struct PartPlan {
  std::vector<Extent> extents;
  uint32_t chunks = 0;  // including DONT_CARE
  uint64_t bytes = 0;   // serialized size
};

// Pure planning. Fails when max_size cannot hold even one block.
Result<std::vector<PartPlan>> PlanResparse(uint32_t blk_sz, uint32_t total_blks, const std::vector<Extent>& extents,
                                           uint64_t max_size);

struct ResparsePlan {
  FileHeader header;  // the input's
  std::vector<PartPlan> parts;
};

// Reads the whole sparse image `in_fd` (seekable) from offset 0, validates it
// (CRC32 chunks included) and plans its parts. Writes nothing.
Result<ResparsePlan> PlanResparseFile(int in_fd, const std::string& in_name, uint64_t max_size);

// Writes part `index` of `plan` to `out`, RAW payload copied from `in_fd`.
Status WritePart(const ResparsePlan& plan, size_t index, int in_fd, std::string_view in_name, Output* out);

}  // namespace flashpipe::sparse
