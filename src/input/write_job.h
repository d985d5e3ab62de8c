// WriteJob: `flashpipe write` as library code. The image is read once and
// written to every target through one ImageWriter.
//
// Nothing is changed until everything has been checked, in this order:
//   1. every target (write_targets.h): opened or its directory checked; a
//      directory, a missing disk, an immutable or unwritable file, a path
//      given twice, a device or loop-backed file in use are refused;
//   2. the image (image_source.h): opened, its header decoded, its size taken
//      (sparse header, file size, bmap, xz index, zstd frames), an empty
//      image refused;
//   3. no target is one of the image's files (stdin included);
//   4. the image fits every block device, and any file.
// Only then are targets changed (WriteTargets::Prepare): a file target gets a
// temporary file beside it, renamed over it once the whole image is written,
// synced and (with --verify) verified, so a failure leaves its old content;
// block devices, and existing files with in_place, are written in place. A
// stream of unknown size (stdin, gzip or bzip2 of raw) that turns out larger
// than a block device stops at its end; the report then says the device was
// partly written and up to which offset.
// VerifyOnly compares targets with the image without writing (compare_sink.h).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"
#include "input/image_source.h"
#include "input/progress.h"
#include "input/write_report.h"
#include "io/image_writer.h"
#include "io/target.h"

namespace flashpipe::input {

struct WriteRequest {
  std::string image;
  std::vector<std::string> targets;
  SourceOptions source;
  io::WriterOptions writer;  // progress is set by the job
  io::Backend backend = io::Backend::kAuto;
  bool force = false;     // block devices in use; files behind loop devices in use
  bool in_place = false;  // existing regular files are written in place
  // Files this run writes besides the targets, with what they are ("-" is
  // stdout): refused when one is a target or an input, before anything is
  // written. {"report.json", "the --json report"}
  std::vector<std::pair<std::string, std::string>> other_outputs;
};

// Always returns a report; report.status says whether it worked.
WriteReport RunWriteJob(const WriteRequest& request, Progress* progress);
WriteReport VerifyOnly(const WriteRequest& request, Progress* progress);

}  // namespace flashpipe::input
