#include "base/status.h"

#include <cstring>

namespace flashpipe {

std::string_view CodeName(Code code) {
  static constexpr std::string_view kNames[] = {
      "OK",          "invalid argument", "corrupt", "I/O error", "no space",
      "not found",   "unsupported",      "busy",    "cancelled", "internal",
      "mismatch", "timed out", "protocol error"};
  auto i = static_cast<size_t>(code);
  return i < std::size(kNames) ? kNames[i] : "unknown";
}

Status::Status(Code code, std::string message, int sys_errno) {
  if (code != Code::kOk) {
    rep_ = std::make_shared<const Rep>(Rep{code, sys_errno, std::move(message)});
  }
}

const std::string& Status::message() const {
  static const std::string kEmpty;
  return rep_ ? rep_->message : kEmpty;
}

std::string Status::ToString() const {
  if (ok()) return "OK";
  if (rep_->sys_errno == 0) return rep_->message;
  return fmt::format("{}: {}", rep_->message, std::strerror(rep_->sys_errno));
}

Status Status::WithContext(std::string_view context) const {
  if (ok()) return *this;
  return Status(rep_->code, fmt::format("{}: {}", context, rep_->message), rep_->sys_errno);
}

Status IoError(std::string m, int sys_errno) {
  return Status(sys_errno == ENOSPC ? Code::kNoSpace : Code::kIoError, std::move(m), sys_errno);
}

}  // namespace flashpipe
