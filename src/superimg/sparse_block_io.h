// SparseBlockIo: a sparse image file read as the image it expands to, at
// any offset, without expanding it: the read-only lp::BlockIo that lets
// `lp dump` and `lp unpack` take a sparse super.img.
//
// Open() walks the chunk headers once (through the strict decoder; RAW
// payloads are not read, CRC32 chunks not checked) and keeps one entry per
// run of chunks (adjacent runs of a kind merged): RAW reads come from the
// file, FILL is its pattern, DONT_CARE reads as zeros. Memory is the index:
// at most kMaxRuns entries of 32 bytes; a more fragmented image is refused.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "lp/block_io.h"

namespace flashpipe::superimg {

class SparseBlockIo final : public lp::BlockIo {
 public:
  static constexpr size_t kMaxRuns = size_t{1} << 20;

  // `fd`: a seekable sparse file, not owned, open for the object's life.
  static Result<std::unique_ptr<SparseBlockIo>> Open(int fd, std::string name);

  std::string_view name() const override { return name_; }
  uint64_t size() const override { return size_; }
  Status Read(uint64_t offset, std::span<uint8_t> out) override;
  Status Write(uint64_t offset, std::span<const uint8_t> data) override;
  Status Sync() override;

  struct Run {
    uint64_t offset = 0;  // in the expanded image
    uint64_t length = 0;
    uint16_t type = 0;    // sparse::ChunkType
    uint64_t file_offset = 0;  // RAW: where the payload starts
    uint32_t pattern = 0;      // FILL
  };
  const std::vector<Run>& runs() const { return runs_; }

 private:
  SparseBlockIo(int fd, std::string name) : fd_(fd), name_(std::move(name)) {}
  Status ReadRun(const Run& r, uint64_t offset, std::span<uint8_t> out);

  int fd_;
  std::string name_;
  uint64_t size_ = 0;
  std::vector<Run> runs_;
};

}  // namespace flashpipe::superimg
