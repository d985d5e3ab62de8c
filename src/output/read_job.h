// ReadJob: `flashpipe read` as library code. Opens the source (read_source.h)
// and every output (output_file.h) before a byte is read, reads the range
// once through the pipeline (zero_scan.h) into the output and the bmap,
// verifies when asked, and only then commits the files: a failure anywhere
// (a bad sector, ENOSPC, a verify mismatch) leaves no output behind.
//
// Passes over the source: one; two for a sparse image to a stream (the
// chunk count comes first); one more with verify. Phases (input/progress.h):
// reading (the passes), verifying, syncing (the outputs' fsync and rename);
// with --max-size, writing the parts, verifying them, putting them in place.
// A CancelFlag stops the run before the next piece of the source: the
// temporary outputs are removed, nothing is renamed into place.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "base/cancel.h"
#include "base/status.h"
#include "input/progress.h"
#include "input/write_report.h"
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
  const CancelFlag* cancel = nullptr;  // set (by a signal handler): stop cleanly
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
  struct {
    std::optional<double> read, write, verify, sync;  // nullopt: the phase did not run
  } phases;
  input::VerifyOutcome verify = input::VerifyOutcome::kNotRun;
  std::vector<std::string> warnings;
  int signal = 0;                   // the signal that interrupted the run, 0: none
  Status status;

  bool interrupted() const { return signal != 0 && status.code() == Code::kCancelled; }
  // "interrupted", "verify_mismatch", or the class of the status code
  // (input::ErrorClass); "" when OK.
  std::string_view error_class() const;
};

// The flag combinations that make no sense (usage errors), checked first.
Status CheckReadRequest(const ReadRequest& request);

// Always returns a report; report.status says whether it worked. `warn` is
// called with each warning (a mounted source) before the read starts.
ReadReport RunRead(const ReadRequest& request, input::Progress* progress,
                   const std::function<void(const std::string&)>& warn);

// The report as JSON, schema docs/schema/read-report.schema.json ("flashpipe-read/1").
std::string ReadReportJson(const ReadReport& report);

}  // namespace flashpipe::output
