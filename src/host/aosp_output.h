// AospOutput: the lines the AOSP client 29.0.6 prints, on stderr, so that a
// script reading `fastboot`'s output reads `flashpipe fastboot`'s alike:
//   "Sending 'boot_a' (3072 KB)                         OKAY [  0.003s]"
//   "Sending sparse 'system' 2/5 (16380 KB)             OKAY [  0.120s]"
//   "Writing 'system'                                   FAILED (remote: 'x')"
//   "(bootloader) version:0.4"
// A status line is the text padded to 50 columns, then OKAY with the
// seconds it took or FAILED with the reason.
#pragma once

#include <chrono>
#include <cstdio>
#include <string>
#include <string_view>
#include <utility>

#include "base/status.h"
#include "host/device_session.h"

namespace flashpipe::host {

class AospOutput : public FlashObserver {
 public:
  explicit AospOutput(FILE* err) : err_(err) {}

  void Begin(std::string_view what);
  // OKAY [ 0.001s] or FAILED (reason).
  void End(const Status& st);
  void Info(std::string_view line);
  void Line(std::string_view text);  // as it is, with a newline

  void OnResparse() override;
  void OnSending(std::string_view partition, size_t index, size_t count, uint64_t bytes, bool sparse) override;
  void OnSent(const Status& st) override { End(st); }
  void OnWriting(std::string_view partition) override;
  void OnWritten(const Status& st) override { End(st); }
  void OnStep(std::string_view what) override { Begin(what); }
  void OnStepDone(const Status& st) override { End(st); }

  // The reason as the AOSP client words it: the device's "remote: '...'"
  // as it is, anything else as its message.
  static std::string Reason(const Status& st);
  // Whether a FAILED line was printed since the last call.
  bool TakeFailed() { return std::exchange(failed_, false); }

 private:
  FILE* err_;
  bool failed_ = false;
  std::chrono::steady_clock::time_point start_;
  bool open_ = false;
};

}  // namespace flashpipe::host
