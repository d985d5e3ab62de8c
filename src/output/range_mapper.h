// RangeMapper: the runs of an image (run_sink.h) to a block map's ranges:
// maximal stretches of mapped 4 KiB blocks, each with the SHA-256 of its
// bytes (the image's last block cut at the image size), as bmaptool's format
// 2.0 lists them.
//
// Mapped: data runs always; zeros read from the medium when map_read_zeros
// (a file's allocated blocks, as bmaptool create maps them); holes never, so
// a hole always ends a range. Each range goes to `on_range` as soon as the
// next unmapped run (or Finish) closes it, so memory does not grow with the
// map. `first_block` is added to every block number: a mapper that sees one
// segment of an image (runs offset from the segment's start, itself a
// multiple of 4 KiB) names the image's blocks.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "output/run_sink.h"

namespace flashpipe::output {

struct BmapRange {
  uint64_t first = 0, last = 0;  // blocks, inclusive
  std::string sha256;            // hex
};

struct BmapOptions {
  bool map_read_zeros = true;
};

class RangeMapper : public RunSink {
 public:
  using OnRange = std::function<Status(const BmapRange&)>;
  static Result<std::unique_ptr<RangeMapper>> Create(const BmapOptions& options, OnRange on_range,
                                                     uint64_t first_block = 0);
  ~RangeMapper() override;

  Status OnData(uint64_t offset, std::span<const uint8_t> data) override;
  Status OnZeros(uint64_t offset, uint64_t length, ZeroKind kind) override;
  Status Finish(uint64_t length) override;  // closes the last range

  uint64_t mapped_blocks() const;
  uint64_t ranges() const;

 private:
  RangeMapper() = default;
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace flashpipe::output
