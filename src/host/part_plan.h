// Parts: how an image is cut into downloads no larger than a device's
// max-download-size, planned from records (record.h) alone, so that each
// download's size is known before its first byte is sent.
//
// A part is a complete sparse image: the file header (blk_sz, total_blks,
// its chunk count), a DONT_CARE for the blocks before its first record, its
// records (RAW split at a block boundary where a part ends inside one, a gap
// between records as one DONT_CARE) and a DONT_CARE up to total_blks. Every
// chunk covers whole blocks; parts laid over each other in order give the
// image. total_blks is the image's when it is known before the image ends,
// else the part's last block (a raw stream of unknown size). Parts are
// filled as far as the limit allows (no 1/8 rule: a RAW record that does
// not fit is split), at most max_chunks chunks each.
//
// A raw image whose size is not a multiple of the block size and that fits
// one download is one raw part of exactly its bytes (ImageShape::odd_raw);
// with PartLimits::raw_when_fits so is any raw image of a known size that
// fits, zero blocks and all, as the AOSP client sends it.
#pragma once

#include <compare>
#include <cstdint>
#include <optional>

#include "base/status.h"
#include "host/record.h"

namespace flashpipe::host {

// A place in the record sequence: `blocks` blocks into record `record`.
struct Position {
  uint64_t record = 0;
  uint32_t blocks = 0;
  auto operator<=>(const Position&) const = default;
};

struct Part {
  Position begin, end;  // the records it carries; end.blocks > 0: record end.record up to there
  bool raw = false;     // the image's bytes as they are, not sparse
  uint64_t first_block = 0, end_block = 0;  // of its first and after its last record piece
  uint32_t total_blks = 0;                  // in the file header
  uint32_t chunks = 0;
  uint64_t bytes = 0;          // the download's size
  uint64_t payload_bytes = 0;  // RAW bytes it carries
};

// Records by index, as the planner and the part writer read them; At may
// wait for a record still being read. nullopt: past the last record.
class RecordSource {
 public:
  virtual ~RecordSource() = default;
  virtual Result<std::optional<Record>> At(uint64_t index) = 0;
};

struct PartLimits {
  uint64_t max_bytes = 0;  // the device's max-download-size
  uint32_t max_chunks = 1 << 16;
  const char* max_bytes_from = "max-download-size";  // what errors blame: "-S" when the user set it
  bool raw_when_fits = false;  // a raw image that fits one download goes as it is (not made sparse)
};

// The part that starts at `from` (the last part's end; {} for the first);
// nullopt when nothing is left. The first part of an image always exists,
// even one of DONT_CARE alone.
Result<std::optional<Part>> PlanPart(RecordSource& records, const ImageShape& shape, Position from, bool first,
                                     const PartLimits& limits);

}  // namespace flashpipe::host
