// BmapWriter: a bmaptool block map, format 2.0 (input/bmap.h reads it back):
// mapped ranges of 4 KiB blocks, each with the SHA-256 of its bytes, and the
// SHA-256 of the file itself computed as bmaptool does: over the whole file
// with the checksum's own text as 64 ASCII '0's.
//
// Its ranges come either from the runs it is given as a RunSink (mapped as
// range_mapper.h says), or ready-made through Add(), in block order, from
// mappers that saw segments of the image (output/bmap_job.cc hashes
// segments on several threads); one writer takes one or the other.
//
// The XML is written to `fd` (a new, empty, seekable file) as the ranges
// close, so memory does not grow with the map; Finish() fills in the mapped
// count, then reads the file back once to checksum it.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "output/range_mapper.h"
#include "output/run_sink.h"

namespace flashpipe::output {

class BmapWriter : public RunSink {
 public:
  static Result<std::unique_ptr<BmapWriter>> Create(int fd, std::string name, uint64_t image_size,
                                                    const BmapOptions& options);
  ~BmapWriter() override;

  Status OnData(uint64_t offset, std::span<const uint8_t> data) override;
  Status OnZeros(uint64_t offset, uint64_t length, ZeroKind kind) override;
  Status Finish(uint64_t length) override;
  // A range after every range given so far (an error otherwise).
  Status Add(const BmapRange& range);
  uint64_t mapped_blocks() const;
  uint64_t blocks_count() const;
  uint64_t ranges() const;

 private:
  BmapWriter() = default;
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace flashpipe::output
