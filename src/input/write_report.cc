#include "input/write_report.h"

#include <fmt/format.h>

namespace flashpipe::input {
namespace {

std::string JsonString(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      out += fmt::format("\\u{:04x}", static_cast<unsigned>(c));
    } else {
      out += c;
    }
  }
  return out + "\"";
}

}  // namespace

std::string_view VerifyName(VerifyOutcome outcome) {
  static constexpr std::string_view kNames[] = {"not run", "passed", "failed"};
  return kNames[static_cast<size_t>(outcome)];
}

std::string_view ErrorClass(Code code) {
  static constexpr std::pair<Code, std::string_view> kClasses[] = {
      {Code::kInvalidArgument, "invalid_argument"}, {Code::kCorrupt, "corrupt_image"},
      {Code::kIoError, "io_error"},                 {Code::kNoSpace, "too_small"},
      {Code::kNotFound, "not_found"},               {Code::kUnsupported, "unsupported"},
      {Code::kBusy, "busy"},                        {Code::kCancelled, "cancelled"},
      {Code::kInternal, "internal"},                {Code::kMismatch, "verify_mismatch"},
  };
  for (const auto& [c, name] : kClasses)
    if (c == code) return name;
  return code == Code::kOk ? "" : "internal";
}

std::string ReportJson(const WriteReport& r) {
  std::string targets;
  for (const auto& t : r.targets) targets += (targets.empty() ? "" : ", ") + JsonString(t);
  double mib_s = r.seconds > 0 ? static_cast<double>(r.image_size) / r.seconds / (1 << 20) : 0;
  std::string partly = r.partly_written_to ? std::to_string(*r.partly_written_to) : "null";
  return fmt::format(
      "{{\"ok\": {}, \"image\": {}, \"kind\": {}, \"targets\": [{}], \"backend\": {}, \"image_size\": {}, "
      "\"bytes_written\": {}, \"bytes_zeroed\": {}, \"bytes_discarded\": {}, \"bytes_skipped\": {}, "
      "\"requests\": {}, \"seconds\": {:.3f}, \"mib_per_s\": {:.1f}, \"verify\": {}, \"error\": {}, "
      "\"error_class\": {}, \"partly_written_to\": {}}}",
      r.status.ok(), JsonString(r.image), JsonString(r.kind), targets, JsonString(r.backend), r.image_size,
      r.stats.bytes_written, r.stats.bytes_zeroed, r.stats.bytes_discarded, r.stats.bytes_skipped, r.stats.requests,
      r.seconds, mib_s, JsonString(VerifyName(r.verify)), r.status.ok() ? "null" : JsonString(r.status.ToString()),
      r.status.ok() ? "null" : JsonString(ErrorClass(r.status.code())), partly);
}

}  // namespace flashpipe::input
