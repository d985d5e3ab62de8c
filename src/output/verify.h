// Verify: the read path's --verify. The source is read a second time and
// compared, byte for byte, with the output decoded back, the way a user of the
// output would decode it:
//   raw        the file read back (O_DIRECT at depth, holes as zeros)
//   sparse     each file (one image, or the parts in order) through the
//              sparse decoder, CRC32 chunks checked
//   zstd/xz/gz the input layer's decompressor
// Output ranges must come in increasing order and never twice (overlaid
// parts each define their own ranges); whatever the output leaves undefined
// (holes, DONT_CARE, bytes no part defines) must be zeros in the source,
// since that is the only thing the read path leaves out. Sizes must match:
// the raw file and the decompressed stream are the range's length, a sparse
// image that length rounded up to its blocks (with the padding zero).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "base/cancel.h"
#include "base/status.h"
#include "io/image_reader.h"
#include "output/format.h"
#include "output/raw_output.h"

namespace flashpipe::output {

struct VerifyTarget {
  Format format = Format::kRaw;
  std::vector<int> fds;              // the output's files (parts in order), seekable
  std::vector<std::string> names;
  uint64_t length = 0;               // the range read
  QueueOptions queue;                // for reading a raw output back
  const CancelFlag* cancel = nullptr;  // checked before each piece of the source
  std::function<void(uint64_t done)> progress;  // bytes of the source compared so far
};

// `source` reads the same range again, from its start (offset 0).
// The error of a mismatch is kMismatch and names the byte; an output that
// does not decode is kCorrupt.
Status VerifyOutput(io::ImageReader& source, const std::string& source_name, const VerifyTarget& target);

}  // namespace flashpipe::output
