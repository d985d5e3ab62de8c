// RunEmitter: turns runs of blocks (RAW data, FILL patterns, DONT_CARE) into
// sparse chunks through a ChunkWriter, merging adjacent runs of one kind and
// cutting RAW chunks at `max_raw_chunk` and any chunk at UINT32_MAX blocks.
// Modes: kSeekBack writes as it goes and patches each RAW header when its
// run ends (seekable outputs); kPlan writes nothing and records each RAW
// chunk's length; kFromPlan writes headers from that record (pipes) and
// fails (kCorrupt) when the second pass differs from it. Used by the encoder
// (img2simg), EncodingSink (resparse, lp make) and output::SparseOutput (read).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "base/status.h"
#include "sparse/writer.h"

namespace flashpipe::sparse {

class RunEmitter {
 public:
  enum class Mode { kSeekBack, kPlan, kFromPlan };

  // `w` may be null in kPlan; `plan` is needed by kPlan and kFromPlan only.
  RunEmitter(Mode mode, ChunkWriter* w, uint32_t block_size, uint64_t max_raw_chunk, bool crc,
             std::vector<uint32_t>* plan = nullptr);

  // Whole blocks of data.
  Status Raw(std::span<const uint8_t> data);
  Status Fill(uint64_t blocks, uint32_t pattern);
  Status Skip(uint64_t blocks);
  // Ends the open run (call once at the end).
  Status Close();

  uint32_t chunks() const { return chunks_; }
  uint32_t crc() const { return crc_; }  // of the expanded runs, when `crc`
  size_t plan_used() const { return plan_next_; }

 private:
  Status OpenRaw();
  Status Extend(uint16_t kind, uint64_t blocks, uint32_t pattern);

  Mode mode_;
  ChunkWriter* w_;
  uint32_t blk_;
  bool crc_on_;
  std::vector<uint32_t>* plan_;
  uint32_t raw_cap_;
  uint16_t kind_ = 0;  // 0: no open run
  uint32_t blocks_ = 0;
  uint32_t pattern_ = 0;
  uint64_t raw_header_at_ = 0;
  uint32_t chunks_ = 0;
  uint32_t crc_ = 0;
  size_t plan_next_ = 0;
};

}  // namespace flashpipe::sparse
