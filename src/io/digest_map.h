// DigestMap: what the final content of a device should be, kept small enough
// to verify any image size. An ordered set of disjoint extents in image
// coordinates, each either a run of per-block CRC32s (data written from
// buffers) or a repeated 4-byte pattern (fills and zero ranges, digested
// arithmetically). Later writes replace what they overlap, so overlaid parts
// are tracked exactly. All offsets are multiples of the block size.
// Memory: 4 bytes per block of data (1 KiB per MiB at 4 KiB blocks).
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <vector>

namespace flashpipe::io {

class DigestMap {
 public:
  struct Extent {
    uint64_t end = 0;
    bool is_pattern = false;
    uint32_t pattern = 0;
    std::vector<uint32_t> crcs;  // one per block when !is_pattern
  };

  explicit DigestMap(uint64_t block = 4096) : block_(block) {}
  uint64_t block() const { return block_; }

  // CRC32 of each block of `data` (size a multiple of block()).
  std::vector<uint32_t> BlockCrcs(std::span<const uint8_t> data) const;
  void PutBlocks(uint64_t offset, std::vector<uint32_t> crcs);
  void PutPattern(uint64_t begin, uint64_t end, uint32_t pattern);
  // Content no longer defined (discarded).
  void Erase(uint64_t begin, uint64_t end);

  const std::map<uint64_t, Extent>& extents() const { return map_; }
  uint64_t memory_bytes() const;

 private:
  uint64_t block_;
  std::map<uint64_t, Extent> map_;  // key: begin
};

}  // namespace flashpipe::io
