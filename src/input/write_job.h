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
//   4. the image fits every block device and every window, and any file.
// A target TARGET:PARTNAME (or any target with a window, --offset/--size)
// is written in place inside its window, a file too; its window is found
// (the GPT read) and checked in step 1, and every write is bounds-checked
// against it: a stream of unknown size that runs past it stops there.
// Only then are targets changed (WriteTargets::Prepare): a file target gets a
// temporary file beside it, renamed over it once the whole image is written,
// synced and (with --verify) verified, so a failure leaves its old content;
// block devices, and existing files with in_place, are written in place. A
// stream of unknown size (stdin, gzip or bzip2 of raw) that turns out larger
// than a block device stops at its end; the report then says the device was
// partly written and up to which offset.
//
// Without an explicit bmap, one found beside the image (find_bmap.h) is used
// and a note says so; a found bmap must match the image's size, and a
// checksum mismatch says to try --no-bmap.
// The run goes through the phases writing, syncing and verifying
// (progress.h), and a CancelFlag stops it at the next request (in-flight
// requests drained, nothing committed, temporary files removed). The report
// (write_report.h) says what each target holds at the end, whatever stopped
// the run: a failure of one target, of the image, or a signal. A failure in
// the read-back of one device still lets the targets verified before it
// complete (files renamed into place).
// VerifyOnly compares targets with the image without writing (compare_sink.h).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "base/cancel.h"
#include "base/status.h"
#include "input/image_source.h"
#include "input/progress.h"
#include "input/write_report.h"
#include "io/image_writer.h"
#include "io/target.h"
#include "io/target_spec.h"

namespace flashpipe::input {

struct WriteRequest {
  std::string image;
  std::vector<std::string> targets;
  SourceOptions source;
  io::WriterOptions writer;  // progress is set by the job
  io::Backend backend = io::Backend::kAuto;
  bool force = false;     // block devices in use; files behind loop devices in use
  bool in_place = false;  // existing regular files are written in place
  // --offset/--size: every target is written (in place) inside this window,
  // within the GPT partition a TARGET:PARTNAME names (io/target_spec.h).
  io::WindowRequest window;
  // Files this run writes besides the targets, with what they are ("-" is
  // stdout): refused when one is a target or an input, before anything is
  // written. {"report.json", "the --json report"}
  std::vector<std::pair<std::string, std::string>> other_outputs;
  bool find_bmap = true;   // look for IMAGE.bmap when source.bmap_path is empty
  bool digest = true;      // the image's SHA-256 (image_digest.h) for the report
  const CancelFlag* cancel = nullptr;  // set (by a signal handler): stop cleanly
  // Tests: the queue target `index` is written through instead of `queue`
  // (a testing::FaultQueue around it); the hook's owner keeps it alive.
  std::function<io::IoQueue*(size_t index, io::IoQueue* queue)> queue_hook;
};

// Always returns a report; report.status says whether it worked. `progress`
// must not be null (ProgressMode::kOff shows nothing).
WriteReport RunWriteJob(const WriteRequest& request, Progress* progress);
WriteReport VerifyOnly(const WriteRequest& request, Progress* progress);

}  // namespace flashpipe::input
