// WriteReport: what one `flashpipe write` did, for its summary and --json.
// Every field that a program may act on is derived from typed values (the
// Status code, the verify outcome), never from the wording of a message, so
// rewording an error changes no decision and no --json value except "error".
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "io/image_writer.h"

namespace flashpipe::input {

enum class VerifyOutcome : uint8_t { kNotRun, kPassed, kFailed };
std::string_view VerifyName(VerifyOutcome outcome);  // "not run", "passed", "failed"

// The class of a failure, from its Status code alone, for --json:
// "invalid_argument", "corrupt_image", "io_error", "too_small" (the image
// does not fit a target, or a target's file system is full), "not_found",
// "unsupported", "busy", "cancelled", "internal", "verify_mismatch".
std::string_view ErrorClass(Code code);

struct WriteReport {
  std::string image;
  std::string kind;                 // ImageForm::Name()
  std::vector<std::string> targets;
  std::string backend;              // queue name of the first target
  uint64_t image_size = 0;
  io::WriteStats stats;
  double seconds = 0;
  VerifyOutcome verify = VerifyOutcome::kNotRun;
  // After a failure that left targets written in place (block devices,
  // --in-place files) changed: their bytes before this image offset may have
  // changed, none after it. nullopt: no target was changed.
  std::optional<uint64_t> partly_written_to;
  Status status;                    // the outcome; OK when all went well
  // WriteRequest::other_outputs (the --json report) passed their checks and
  // may be written; false: writing one could destroy a target or an input.
  bool other_outputs_checked = false;
};

// The report as one JSON object (for --json). Keys are only ever added.
std::string ReportJson(const WriteReport& report);

}  // namespace flashpipe::input
