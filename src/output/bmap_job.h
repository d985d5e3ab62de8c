// BmapJob: `flashpipe bmap create` as library code, bmaptool create's job:
// the same XML (format 2.0) with the same checksums, found with the read
// path's reader (O_DIRECT at depth; holes are never read) and its zero scan.
// Hashing is the floor of this job (each range's SHA-256 runs front to
// back), so an image file with holes is cut at holes into segments
// (bmap_segments.h), up to 4 per thread, that `threads` threads (0: one per
// core, at most 4) read, scan and hash, the largest first; their ranges are
// written in order once all are done. A block device, or a file without
// holes, is one segment.
// Mapped blocks of a file are its allocated blocks, as bmaptool maps them,
// or with zeros_unmapped only those that hold a non-zero byte; of a block
// device (no holes), its non-zero blocks. The bmap goes to a file through an
// AtomicFile, or to stdout once it is complete.
#pragma once

#include <functional>
#include <string>

#include "base/status.h"
#include "input/progress.h"
#include "output/raw_output.h"
#include "output/zero_scan.h"

namespace flashpipe::output {

struct BmapRequest {
  std::string image;
  std::string output = "-";  // "-": stdout
  bool zeros_unmapped = false;
  bool force = false;        // a device held by another program
  unsigned threads = 0;      // 0: one per core, at most 4
  QueueOptions queue;
};

struct BmapReport {
  std::string image, output, backend;
  uint64_t image_size = 0, blocks = 0, mapped_blocks = 0, ranges = 0;
  unsigned segments = 0;  // read and hashed at once
  ScanStats scan;
  double seconds = 0;
  Status status;
};

BmapReport RunBmapCreate(const BmapRequest& request, input::Progress* progress,
                         const std::function<void(const std::string&)>& warn);

std::string BmapReportJson(const BmapReport& report);

}  // namespace flashpipe::output
