// Records: the image as the host sends it, independent of its form on disk.
//
// A Record is a run of blocks that parts carry: RAW (its bytes come from the
// image's payload stream, the RAW bytes of all records concatenated in
// order, at `payload`) or FILL (a 32-bit pattern). Blocks no record covers
// are DONT_CARE. Records come in increasing block order and never overlap;
// a RAW record holds at most kMaxRawRecordBytes, so that a record is known
// soon after its first byte is read (a streamed image is planned from
// records that sit in a bounded window). The records and payload of an image
// are a pure function of its bytes (record_sink.h), so two readings of the
// same file give the same ones.
#pragma once

#include <cstdint>

#include "sparse/format.h"

namespace flashpipe::host {

inline constexpr uint64_t kMaxRawRecordBytes = 4 << 20;

struct Record {
  uint16_t type = sparse::kChunkRaw;  // kChunkRaw or kChunkFill
  uint64_t block = 0;                 // first block
  uint32_t blocks = 0;
  uint32_t pattern = 0;               // FILL
  uint64_t payload = 0;               // RAW: offset of its first byte in the payload stream
  uint64_t end() const { return block + blocks; }
  bool operator==(const Record&) const = default;
};

// What the parts of an image say about the whole.
struct ImageShape {
  uint32_t blk_sz = 4096;
  // Blocks of the image when known before its end (a sparse header, a file's
  // size, a bmap, an xz index); 0: unknown (a raw stream).
  uint64_t blocks = 0;
  // Bytes of the image when known; for a raw image a multiple of blk_sz or
  // not (its last block is then padded with zeros in sparse parts).
  uint64_t bytes = 0;
  bool sparse_input = false;
  // Raw content read through a bmap: its unmapped ranges are DONT_CARE.
  bool bmap = false;

  // A raw image whose size is not a multiple of the block size: sent as
  // it is when it fits one download, so that nothing past its end is
  // written (as the AOSP client sends it).
  bool odd_raw() const { return !sparse_input && !bmap && bytes > 0 && bytes % blk_sz != 0; }
};

}  // namespace flashpipe::host
