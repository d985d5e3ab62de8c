#include "input/write_report.h"

#include <fmt/format.h>

#include "base/json.h"
#include "base/units.h"

namespace flashpipe::input {
namespace {


std::string JsonOr(const std::optional<uint64_t>& v) { return v ? std::to_string(*v) : "null"; }
std::string JsonOr(const std::optional<double>& v) { return v ? fmt::format("{:.3f}", *v) : "null"; }
std::string JsonOr(const std::optional<std::string>& v) { return v ? JsonString(*v) : "null"; }
std::string JsonError(const Status& s) { return s.ok() ? "null" : JsonString(s.ToString()); }
std::string JsonClass(std::string_view c) { return c.empty() ? "null" : JsonString(c); }
std::string JsonWindow(const std::optional<io::ByteRange>& w) {
  return w ? fmt::format("{{\"offset\": {}, \"size\": {}}}", w->offset, w->size) : "null";
}

// "disk.img:system (bytes 0x100000+4194304)": a target and its window.
std::string TargetName(const std::string& path, const std::optional<io::ByteRange>& w) {
  return w ? fmt::format("{} (bytes 0x{:x}+{})", path, w->offset, w->size) : path;
}

double MiBs(uint64_t bytes, double seconds) {
  return seconds > 0 ? static_cast<double>(bytes) / seconds / (1 << 20) : 0;
}

// Seconds the data took to reach the targets: writing and syncing.
double WriteSeconds(const WriteReport& r) {
  if (!r.phases.write) return r.seconds;
  return *r.phases.write + r.phases.sync.value_or(0);
}

std::string_view TargetErrorClass(const TargetResult& t, const WriteReport& r) {
  if (t.status.ok()) return "";
  if (t.stopped_by_other) return "other_target_failed";
  if (r.signal != 0 && t.status.code() == Code::kCancelled) return "interrupted";
  return ErrorClass(t.status.code());
}

}  // namespace

std::string_view VerifyName(VerifyOutcome outcome) {
  static constexpr std::string_view kNames[] = {"not run", "passed", "failed"};
  return kNames[static_cast<size_t>(outcome)];
}

std::string_view TargetKindName(TargetKind kind) {
  static constexpr std::string_view kNames[] = {"unknown", "block_device", "file", "new_file"};
  return kNames[static_cast<size_t>(kind)];
}

std::string_view StateName(TargetState state) {
  static constexpr std::string_view kNames[] = {"not_started", "unchanged", "partially_written", "written"};
  return kNames[static_cast<size_t>(state)];
}

std::string_view ErrorClass(Code code) {
  static constexpr std::pair<Code, std::string_view> kClasses[] = {
      {Code::kInvalidArgument, "invalid_argument"}, {Code::kCorrupt, "corrupt_image"},
      {Code::kIoError, "io_error"},                 {Code::kNoSpace, "too_small"},
      {Code::kNotFound, "not_found"},               {Code::kUnsupported, "unsupported"},
      {Code::kBusy, "busy"},                        {Code::kCancelled, "cancelled"},
      {Code::kInternal, "internal"},                {Code::kMismatch, "verify_mismatch"},
      {Code::kTimedOut, "timed_out"},               {Code::kProtocol, "protocol_error"},
  };
  for (const auto& [c, name] : kClasses)
    if (c == code) return name;
  return code == Code::kOk ? "" : "internal";
}

std::string_view WriteReport::error_class() const {
  if (status.ok()) return "";
  if (interrupted()) return "interrupted";
  return ErrorClass(status.code());
}

std::string TargetJsonMembers(const TargetResult& t, const WriteReport& r) {
  return fmt::format(
      "\"target\": {}, \"kind\": \"{}\", \"in_place\": {}, \"ok\": {}, \"state\": \"{}\", \"verify\": {}, "
      "\"error\": {}, \"error_class\": {}, \"partly_written_to\": {}, \"old_contents_discarded\": {}, "
      "\"partition\": {}, \"window\": {}",
      JsonString(t.path), TargetKindName(t.kind), t.in_place, t.ok, StateName(t.state),
      JsonString(VerifyName(t.verify)), JsonError(t.status), JsonClass(TargetErrorClass(t, r)),
      JsonOr(t.partly_written_to), t.old_contents_discarded,
      t.partition.empty() ? "null" : JsonString(t.partition), JsonWindow(t.window));
}

std::string ReportJson(const WriteReport& r) {
  std::string targets, results;
  for (const auto& t : r.targets) targets += (targets.empty() ? "" : ", ") + JsonString(t);
  for (const auto& t : r.results) results += fmt::format("{}{{{}}}", results.empty() ? "" : ", ", TargetJsonMembers(t, r));
  uint64_t size = r.status.ok() ? r.image_size.value_or(0) : 0;  // a failed run has no image rate
  return fmt::format(
      "{{{}, \"ok\": {}, \"interrupted\": {}, \"signal\": {}, \"image\": {}, \"kind\": {}, "
      "\"bmap\": {}, \"bmap_found\": {}, \"targets\": [{}], \"results\": [{}], \"backend\": {}, "
      "\"image_size\": {}, \"image_sha256\": {}, "
      "\"bytes_written\": {}, \"bytes_zeroed\": {}, \"bytes_discarded\": {}, \"bytes_skipped\": {}, "
      "\"requests\": {}, \"seconds\": {:.3f}, \"phases\": {{\"write\": {}, \"sync\": {}, \"verify\": {}, \"digest\": {}}}, "
      "\"digest_mib_per_s\": {}, "
      "\"mib_per_s\": {:.1f}, \"write_mib_per_s\": {:.1f}, \"verify_only\": {}, \"verify\": {}, \"error\": {}, "
      "\"error_class\": {}, \"partly_written_to\": {}, \"bmap_signed_by\": {}, \"download\": {}}}",
      JsonSchemaMembers("write", 1), r.status.ok(), r.interrupted(), r.signal ? JsonString(SignalName(r.signal)) : "null",
      JsonString(r.image), JsonString(r.kind), r.bmap.empty() ? "null" : JsonString(r.bmap), r.bmap_found, targets,
      results, JsonString(r.backend), JsonOr(r.image_size), JsonOr(r.image_sha256), r.stats.bytes_written,
      r.stats.bytes_zeroed, r.stats.bytes_discarded, r.stats.bytes_skipped, r.stats.requests, r.seconds,
      JsonOr(r.phases.write), JsonOr(r.phases.sync), JsonOr(r.phases.verify), JsonOr(r.phases.digest),
      JsonOr(r.digest_mib_per_s), MiBs(size, r.seconds),
      MiBs(r.stats.bytes_written, WriteSeconds(r)), r.verify_only, JsonString(VerifyName(r.verify)), JsonError(r.status),
      JsonClass(r.error_class()), JsonOr(r.partly_written_to),
      r.bmap_signed_by.empty() ? "null" : JsonString(r.bmap_signed_by),
      r.download ? fetch::FetchReportJson(*r.download) : "null");
}

std::string SummaryLine(const WriteReport& r) {
  std::string to = r.targets.size() != 1 ? fmt::format("{} targets", r.targets.size())
                   : r.results.size() == 1 ? TargetName(r.targets.front(), r.results.front().window)
                                           : r.targets.front();
  if (r.verify_only) {
    return fmt::format("done: {} {} the {} image in {:.1f} s ({} not defined by the image, not compared)", to,
                       r.targets.size() == 1 ? "matches" : "match", FormatBytes(r.image_size.value_or(0)), r.seconds,
                       FormatBytes(r.stats.bytes_skipped));
  }
  std::string line = fmt::format("done: {} image to {} in {:.1f} s: {} written ({:.1f} MiB/s), {} zeroed, {} skipped",
                                 FormatBytes(r.image_size.value_or(0)), to, r.seconds, FormatBytes(r.stats.bytes_written),
                                 MiBs(r.stats.bytes_written, WriteSeconds(r)), FormatBytes(r.stats.bytes_zeroed),
                                 FormatBytes(r.stats.bytes_skipped));
  if (r.stats.bytes_discarded > 0) line += fmt::format(" ({} discarded)", FormatBytes(r.stats.bytes_discarded));
  if (r.verify == VerifyOutcome::kPassed) line += "; verified";
  if (r.download) line += "; " + fetch::FetchSummary(*r.download);
  return line;
}

std::string TargetLine(const TargetResult& t, const WriteReport& r) {
  std::string text;
  switch (t.state) {
    case TargetState::kNotStarted: text = "not started"; break;
    case TargetState::kUnchanged:
      text = t.kind == TargetKind::kNewFile ? "not created"
             : t.in_place                   ? "unchanged (nothing was written to it)"
                                            : "unchanged (the image was going to a temporary file, now removed)";
      break;
    case TargetState::kPartial:
      text = t.verify == VerifyOutcome::kFailed ? "does not read back as the image, do not use"
                                                : "partially written, do not use";
      if (t.old_contents_discarded) {
        text += fmt::format(" (cut to the image's size first: its old contents are gone; image bytes before 0x{:x} "
                            "may have been written)", t.partly_written_to.value_or(0));
      } else if (t.partly_written_to) {
        text += fmt::format(" (image bytes before 0x{:x} may have changed)", *t.partly_written_to);
      }
      break;
    case TargetState::kWritten:
      text = t.verify == VerifyOutcome::kPassed ? "written and verified"
             : r.verify_asked                   ? "written, not verified"
                                                : "written";
      break;
  }
  return fmt::format("{}: {}", t.path, text);
}

}  // namespace flashpipe::input
