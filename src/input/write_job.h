// WriteJob: `flashpipe write` as library code. Opens the image (OpenImage),
// checks that it fits every target before anything is touched, opens the
// targets, one queue each, and runs the source into one ImageWriter that
// writes all targets from the same read of the source.
//
// Safety, in order: the image is opened and its size taken when it is known
// up front (sparse header, file size, bmap ImageSize); block-device targets
// are opened (exclusively unless force) and their size checked; the image file
// itself and duplicate targets are refused; only then are regular-file
// targets created or truncated to the image size. A stream of unknown size
// (stdin, compressed raw) is checked against block devices as it goes (the
// writer refuses any op past the end) and regular files are cut to the final
// size at the end.
// VerifyOnly compares targets with the image without writing (compare_sink.h).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"
#include "input/image_source.h"
#include "input/progress.h"
#include "io/image_writer.h"
#include "io/target.h"

namespace flashpipe::input {

struct WriteRequest {
  std::string image;
  std::vector<std::string> targets;
  SourceOptions source;
  io::WriterOptions writer;  // progress is set by the job
  io::Backend backend = io::Backend::kAuto;
  bool force = false;
};

struct WriteReport {
  std::string image;
  std::string kind;                 // ImageSource::kind()
  std::vector<std::string> targets;
  std::string backend;              // queue name of the first target
  uint64_t image_size = 0;
  io::WriteStats stats;
  double seconds = 0;
  std::string verify = "not run";   // "passed", "failed", "not run"
  Status status;                    // the outcome; OK when all went well
};

// Always returns a report; report.status says whether it worked.
WriteReport RunWriteJob(const WriteRequest& request, Progress* progress);
WriteReport VerifyOnly(const WriteRequest& request, Progress* progress);

// The report as one JSON object (for --json).
std::string ReportJson(const WriteReport& report);

}  // namespace flashpipe::input
