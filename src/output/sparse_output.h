// SparseOutput: the image as an Android sparse image, AOSP compatible, 4 KiB
// blocks. A block whose 32-bit words are all equal becomes FILL, as AOSP's
// img2simg makes it; zero runs become FILL 0, or DONT_CARE with
// dont_care_zeros (smaller, but the device then keeps what it had there);
// other blocks are RAW, in chunks of at most 64 MiB as libsparse writes them.
// A short last block is padded with zeros. No CRC32 chunk (some bootloaders
// reject them).
//
// The file header comes first and holds the chunk count, so:
//   kPatch     a seekable output: headers are written with zero counts and
//              patched when the counts are known (one pass)
//   kPlan      no output: counts the chunks and records each RAW chunk's
//              size (4 bytes per chunk), for a pipe
//   kFromPlan  a pipe: the second pass writes the planned headers up front;
//              a source that reads differently this time is an error
// Memory: the 1 MiB staging buffer of ChunkWriter, plus the plan.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "output/run_sink.h"
#include "sparse/writer.h"

namespace flashpipe::output {

struct SparsePlan {
  std::vector<uint32_t> raw_blocks;  // per RAW chunk, in order
  uint32_t chunks = 0;
};

struct SparseOptions {
  bool dont_care_zeros = false;
  uint64_t max_raw_chunk = uint64_t{64} << 20;
};

class SparseOutput : public RunSink {
 public:
  enum class Mode { kPatch, kPlan, kFromPlan };
  // `out` (null for kPlan) and `plan` (kPlan, kFromPlan) must outlive this.
  static Result<std::unique_ptr<SparseOutput>> Create(sparse::Output* out, uint64_t length, Mode mode,
                                                      const SparseOptions& options, SparsePlan* plan);
  ~SparseOutput() override;

  Status OnData(uint64_t offset, std::span<const uint8_t> data) override;
  Status OnZeros(uint64_t offset, uint64_t length, ZeroKind kind) override;
  Status Finish(uint64_t length) override;
  uint64_t bytes() const;   // output bytes so far
  uint32_t chunks() const;

 private:
  SparseOutput() = default;
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace flashpipe::output
