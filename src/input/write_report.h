// WriteReport: what one `flashpipe write` did, for its summary, its lines per
// target and --json (schema docs/schema/write-report.schema.json,
// "flashpipe-write", version 1).
// Every field that a program may act on is derived from typed values (the
// Status code, the verify outcome, the target's state, whether a signal
// stopped the run), never from the wording of a message, so rewording an
// error changes no decision and no --json value except "error".
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "fetch/remote_file.h"
#include "io/image_writer.h"
#include "io/target_spec.h"

namespace flashpipe::input {

enum class VerifyOutcome : uint8_t { kNotRun, kPassed, kFailed };
std::string_view VerifyName(VerifyOutcome outcome);  // "not run", "passed", "failed"

// The class of a failure, from its Status code alone, for --json:
// "invalid_argument", "corrupt_image", "io_error", "too_small" (the image
// does not fit a target, or a target's file system is full), "not_found",
// "unsupported", "busy", "cancelled", "internal", "verify_mismatch".
// A report adds "interrupted" (a signal stopped the run) and, per target,
// "other_target_failed".
std::string_view ErrorClass(Code code);

// What a target is and how it is written.
enum class TargetKind : uint8_t {
  kUnknown,      // its check failed before it was known
  kBlockDevice,  // written in place
  kFile,         // an existing regular file: replaced whole (or in place)
  kNewFile,      // created
};
std::string_view TargetKindName(TargetKind kind);  // "unknown", "block_device", "file", "new_file"

// Where a target stands when the run ends.
enum class TargetState : uint8_t {
  kNotStarted,  // nothing was done to it (the run stopped before targets changed)
  kUnchanged,   // it holds what it held before (a file written beside it, since removed)
  kPartial,     // changed in place and not holding the whole image: do not use
  kWritten,     // holds the whole image, synced (and, with --verify, see `verify`)
};
std::string_view StateName(TargetState state);  // "not_started", "unchanged", "partially_written", "written"

struct TargetResult {
  std::string path;
  TargetKind kind = TargetKind::kUnknown;
  bool in_place = false;  // written in place (block devices, --in-place files)
  TargetState state = TargetState::kNotStarted;
  VerifyOutcome verify = VerifyOutcome::kNotRun;
  // Why this target did not get the image: its own failure, the run's (a
  // bad image, a signal), or another target's (other_target_failed). OK
  // when it did.
  Status status;
  bool stopped_by_other = false;  // status is about another target
  std::optional<uint64_t> partly_written_to;  // state kPartial: image bytes before it may have changed
  // An in-place file is cut to the image's size before the write: nothing it
  // held remains, also after partly_written_to. Block devices keep theirs.
  bool old_contents_discarded = false;
  // It got what was asked: written (and verified with --verify); with
  // --verify-only, it matched.
  bool ok = false;
  // A windowed target (TARGET:PARTNAME, --offset/--size): the GPT partition
  // (or empty) and the bytes of the file or device written; nullopt: the
  // whole target (or its window was never resolved).
  std::string partition;
  std::optional<io::ByteRange> window;
};

struct PhaseSeconds {
  std::optional<double> write, sync, verify;  // nullopt: the phase did not run
  // Seconds the run waited for the image digest (a full digest queue while
  // writing, then after the sync); nullopt: no digest was computed.
  std::optional<double> digest;
};

struct WriteReport {
  std::string image;
  std::string kind;                 // ImageForm::Name()
  std::vector<std::string> targets;
  std::string backend;              // queue name of the first target
  std::optional<uint64_t> image_size;  // known from the image's header, size or bmap; else after the write
  std::optional<std::string> image_sha256;  // image_digest.h; nullopt: not computed
  std::optional<double> digest_mib_per_s;   // the digest thread's hashing rate
  std::string bmap;                 // the block map used, "" for none
  bool bmap_found = false;          // found beside the image (find_bmap.h), not given
  std::string bmap_signed_by;       // fingerprint of the bmap's good signature, "" none
  std::optional<fetch::FetchReport> download;  // an image from a URL
  io::WriteStats stats;
  double seconds = 0;
  PhaseSeconds phases;
  bool verify_asked = false;       // --verify, or --verify-only
  bool verify_only = false;
  VerifyOutcome verify = VerifyOutcome::kNotRun;
  std::vector<TargetResult> results;  // one per target, in the order given
  // After a failure that left targets written in place (block devices,
  // --in-place files) changed: their bytes before this image offset may have
  // changed, none after it on a block device (a file was cut first: see
  // TargetResult::old_contents_discarded). nullopt: no target was changed.
  std::optional<uint64_t> partly_written_to;
  int signal = 0;                   // the signal that interrupted the run, 0: none
  Status status;                    // the outcome; OK when all went well
  // WriteRequest::other_outputs (the --json report) passed their checks and
  // may be written; false: writing one could destroy a target or an input.
  bool other_outputs_checked = false;

  bool interrupted() const { return signal != 0 && !status.ok(); }
  // "interrupted" when a signal stopped the run, else ErrorClass; "" when OK.
  std::string_view error_class() const;
};

// The report as one JSON object (for --json). Keys are only ever added
// within a schema version.
std::string ReportJson(const WriteReport& report);
// One target's result as JSON object members (also the "target" event).
std::string TargetJsonMembers(const TargetResult& result, const WriteReport& report);

// The line a successful run ends with:
//   "done: 2.5 GiB image to /dev/sdb in 4.0 s: 1.0 GiB written (330.0 MiB/s),
//    1.4 GiB zeroed, 100.0 MiB skipped; verified"
// The rate is that of the data written, over the writing and syncing phases.
// --verify-only: "done: /dev/sdb matches the 2.5 GiB image in 3.0 s (...)".
std::string SummaryLine(const WriteReport& report);
// One line per target after a failure or an interrupt:
//   "/dev/sdb: partially written, do not use (image bytes before 0x4400000 may have changed)"
//   "disk.img: partially written, do not use (cut to the image's size first: its old
//    contents are gone; image bytes before 0x4400000 may have been written)"
std::string TargetLine(const TargetResult& result, const WriteReport& report);

}  // namespace flashpipe::input
