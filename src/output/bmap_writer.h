// BmapWriter: a bmaptool block map, format 2.0 (input/bmap.h reads it back),
// of the runs it is given: mapped ranges of 4 KiB blocks, each with the
// SHA-256 of its bytes (the last block cut at the image size), and the
// SHA-256 of the file itself computed as bmaptool does: over the whole file
// with the checksum's own text as 64 ASCII '0's.
//
// Mapped: data runs always; zeros read from the medium when map_read_zeros
// (a file's allocated blocks, as bmaptool create maps them); holes never.
//
// The XML is written to `fd` (a new, empty, seekable file) as the ranges
// close, so memory does not grow with the map; Finish() fills in the mapped
// count, then reads the file back once to checksum it.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "output/run_sink.h"

namespace flashpipe::output {

struct BmapOptions {
  bool map_read_zeros = true;
};

class BmapWriter : public RunSink {
 public:
  static Result<std::unique_ptr<BmapWriter>> Create(int fd, std::string name, uint64_t image_size,
                                                    const BmapOptions& options);
  ~BmapWriter() override;

  Status OnData(uint64_t offset, std::span<const uint8_t> data) override;
  Status OnZeros(uint64_t offset, uint64_t length, ZeroKind kind) override;
  Status Finish(uint64_t length) override;
  uint64_t mapped_blocks() const;
  uint64_t blocks_count() const;
  uint64_t ranges() const;

 private:
  BmapWriter() = default;
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace flashpipe::output
