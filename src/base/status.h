// Status and Result<T>: how every fallible flashpipe function reports failure.
//
// A Status is either OK or carries a Code, a message with context ("chunk 12
// at byte 0x3000: RAW total_sz 40 < header") and, for system failures, the
// errno captured where the call failed. Result<T> holds a T or a non-OK
// Status. Both are cheap to move and [[nodiscard]]: ignoring one is a bug.
// No exceptions are thrown for control flow anywhere in flashpipe.
#pragma once

#include <cerrno>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

#include <fmt/format.h>

namespace flashpipe {

enum class Code : uint8_t {
  kOk = 0,
  kInvalidArgument,  // the caller or the user asked for something impossible
  kCorrupt,          // input data breaks its format's rules
  kIoError,          // a system call failed; errno is kept
  kNoSpace,          // the target is too small or full
  kNotFound,
  kUnsupported,
  kBusy,             // in use by someone else (O_EXCL, a second session)
  kCancelled,
  kInternal,
  kMismatch,         // data read back differs from the image (verify)
  kTimedOut,         // a deadline passed (not the same as the peer going away)
  kProtocol,         // a peer (a fastboot device, a server) broke its protocol
};

std::string_view CodeName(Code code);

class [[nodiscard]] Status {
 public:
  Status() = default;  // OK
  Status(Code code, std::string message, int sys_errno = 0);

  static Status Ok() { return Status(); }

  bool ok() const { return rep_ == nullptr; }
  Code code() const { return rep_ ? rep_->code : Code::kOk; }
  int sys_errno() const { return rep_ ? rep_->sys_errno : 0; }
  // The message alone, without the errno text.
  const std::string& message() const;
  // "message: strerror(errno)" or "OK".
  std::string ToString() const;
  // A copy whose message is "context: message"; OK stays OK.
  Status WithContext(std::string_view context) const;

 private:
  struct Rep {
    Code code;
    int sys_errno;
    std::string message;
  };
  std::shared_ptr<const Rep> rep_;
};

inline Status InvalidArgument(std::string m) { return {Code::kInvalidArgument, std::move(m)}; }
inline Status Corrupt(std::string m) { return {Code::kCorrupt, std::move(m)}; }
inline Status NoSpace(std::string m) { return {Code::kNoSpace, std::move(m)}; }
inline Status NotFound(std::string m) { return {Code::kNotFound, std::move(m)}; }
inline Status Unsupported(std::string m) { return {Code::kUnsupported, std::move(m)}; }
inline Status Busy(std::string m) { return {Code::kBusy, std::move(m)}; }
inline Status ProtocolError(std::string m) { return {Code::kProtocol, std::move(m)}; }
inline Status Cancelled(std::string m) { return {Code::kCancelled, std::move(m)}; }
inline Status Internal(std::string m) { return {Code::kInternal, std::move(m)}; }
inline Status Mismatch(std::string m) { return {Code::kMismatch, std::move(m)}; }
inline Status TimedOut(std::string m) { return {Code::kTimedOut, std::move(m)}; }
// A failed system call. Pass errno as it was right after the call.
Status IoError(std::string m, int sys_errno);
// Same as IoError but reads errno itself: call it first thing after the failure.
inline Status ErrnoError(std::string m) { int e = errno; return IoError(std::move(m), e); }

template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}  // NOLINT: implicit by design
  Result(Status status) : v_(std::move(status)) {}  // NOLINT
  bool ok() const { return v_.index() == 0; }
  const Status& status() const {
    static const Status kOk;
    return ok() ? kOk : std::get<1>(v_);
  }
  T& value() & { return std::get<0>(v_); }
  const T& value() const& { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

 private:
  std::variant<T, Status> v_;
};

}  // namespace flashpipe

#define FP_CONCAT_INNER(a, b) a##b
#define FP_CONCAT(a, b) FP_CONCAT_INNER(a, b)

#define FP_RETURN_IF_ERROR(expr)                  \
  do {                                            \
    ::flashpipe::Status fp_status_ = (expr);      \
    if (!fp_status_.ok()) return fp_status_;      \
  } while (0)

#define FP_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                             \
  if (!tmp.ok()) return tmp.status();            \
  lhs = std::move(tmp).value()

// FP_ASSIGN_OR_RETURN(auto fd, OpenFile(path));
#define FP_ASSIGN_OR_RETURN(lhs, expr) \
  FP_ASSIGN_OR_RETURN_IMPL(FP_CONCAT(fp_result_, __LINE__), lhs, expr)
