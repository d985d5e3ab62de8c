// Bmap: a bmaptool block map (.bmap XML, format versions 1.2 to 2.0), which
// says which blocks of a raw image hold data and, from 1.3 on, their
// checksums. Only mapped ranges are written; every range's checksum and the
// bmap file's own checksum are verified.
//
//   1.2        no checksums (a range's sha1= is ignored, as bmaptool does)
//   1.3        sha1: range attribute sha1=, element BmapFileSHA1
//   1.4 = 2.0  ChecksumType element (an OpenSSL digest name, e.g. sha256),
//              range attribute chksum=, element BmapFileChecksum
// The file checksum covers the whole file with its own hex text replaced by
// as many ASCII '0's. Ranges must be in order and must not overlap, lie inside
// BlocksCount, and add up to MappedBlocksCount; BlocksCount must equal
// ceil(ImageSize / BlockSize).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace flashpipe::input {

struct BmapRange {
  uint64_t first = 0;    // block numbers, inclusive
  uint64_t last = 0;
  std::string checksum;  // lowercase hex; empty when the bmap has none
};

struct Bmap {
  std::string version;
  uint64_t image_size = 0;
  uint64_t block_size = 0;
  uint64_t blocks_count = 0;
  uint64_t mapped_blocks = 0;
  std::string checksum_type;  // "" (1.2), "sha1", "sha256", ...
  std::vector<BmapRange> ranges;

  // Byte range [begin, end) of a range, the last block cut at image_size.
  uint64_t RangeBegin(const BmapRange& r) const { return r.first * block_size; }
  uint64_t RangeEnd(const BmapRange& r) const;
  // "bmap range 3 (blocks 10-12, bytes 0xa000-0xd000)"
  std::string RangeLabel(size_t index) const;
};

// `name` is used in messages ("x.bmap: range 3 (blocks 10-12): ...").
Result<Bmap> ParseBmap(std::string_view text, std::string_view name);
Result<Bmap> LoadBmap(const std::string& path);

// A message digest by OpenSSL name (EVP), hex output.
class Digest {
 public:
  static Result<Digest> Create(std::string_view name);
  Digest(Digest&&) noexcept;
  Digest& operator=(Digest&&) noexcept;
  ~Digest();
  void Update(std::span<const uint8_t> data);
  std::string HexFinal();  // resets for reuse
  size_t hex_size() const;

 private:
  Digest();
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace flashpipe::input
