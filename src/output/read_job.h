// ReadJob: `flashpipe read` as library code. Opens the source (read_source.h)
// and every output (output_file.h) before a byte is read, reads the range
// once through the pipeline (zero_scan.h) into the output and the bmap,
// verifies when asked, and only then commits the files: a failure anywhere
// (a bad sector, ENOSPC, a verify mismatch) leaves no output behind.
//
// Passes over the source: one; two for a sparse image to a stream (the
// chunk count comes first); one more with verify.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "input/progress.h"
#include "output/compressor.h"
#include "output/format.h"
#include "output/raw_output.h"
#include "output/read_source.h"
#include "output/sparse_output.h"
#include "output/zero_scan.h"

namespace flashpipe::output {

struct ReadRequest {
  SourceRequest source;
  std::string output;             // a path, or "-" for stdout
  std::optional<Format> format;   // unset: from the output's name
  SparseOptions sparse;
  uint64_t max_size = 0;          // sparse only: parts OUTPUT.0, OUTPUT.1, ... of at most this
  CompressOptions compress;
  std::string bmap;               // a bmap file to write alongside, or empty
  bool zeros_unmapped = false;    // bmap: allocated zero blocks are unmapped too
  bool verify = false;
  QueueOptions queue;
};

struct ReadReport {
  std::string source;               // as described by ReadSource
  std::string output, format, bmap, backend;
  std::vector<std::string> parts;
  uint64_t start = 0, length = 0;
  ScanStats scan;
  uint64_t output_bytes = 0;
  uint64_t mapped_blocks = 0;
  unsigned compress_threads = 0;
  unsigned passes = 0;
  double seconds = 0;
  std::string verify = "not run";   // "passed", "failed", "not run"
  std::vector<std::string> warnings;
  Status status;
};

// The flag combinations that make no sense (usage errors), checked first.
Status CheckReadRequest(const ReadRequest& request);

// Always returns a report; report.status says whether it worked. `warn` is
// called with each warning (a mounted source) before the read starts.
ReadReport RunRead(const ReadRequest& request, input::Progress* progress,
                   const std::function<void(const std::string&)>& warn);

std::string ReadReportJson(const ReadReport& report);

}  // namespace flashpipe::output
