#include "host/aosp_output.h"

#include <fmt/format.h>

#include "base/utf8.h"

namespace flashpipe::host {

void AospOutput::Begin(std::string_view what) {
  std::fprintf(err_, "%-50s ", TerminalText(what).c_str());
  std::fflush(err_);
  start_ = std::chrono::steady_clock::now();
  open_ = true;
}

void AospOutput::End(const Status& st) {
  if (!open_) return;
  open_ = false;
  if (st.ok()) {
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    std::fprintf(err_, "OKAY [%7.3fs]\n", s);
  } else {
    std::fprintf(err_, "FAILED (%s)\n", TerminalText(Reason(st)).c_str());
    failed_ = true;
  }
  std::fflush(err_);
}

void AospOutput::Info(std::string_view line) {
  std::fprintf(err_, "(bootloader) %s\n", TerminalText(line).c_str());
  std::fflush(err_);
}

void AospOutput::Line(std::string_view text) {
  std::fprintf(err_, "%s\n", TerminalText(text).c_str());
  std::fflush(err_);
}

// libsparse's complaint when the AOSP client tries the raw file as sparse
// before it resparses it.
void AospOutput::OnResparse() { Line("Invalid sparse file format at header magic"); }

void AospOutput::OnSending(std::string_view partition, size_t index, size_t count, uint64_t bytes, bool sparse) {
  if (!sparse) {
    Begin(fmt::format("Sending '{}' ({} KB)", partition, bytes / 1024));
  } else {
    Begin(fmt::format("Sending sparse '{}' {}/{} ({} KB)", partition, index, count == 0 ? "?" : std::to_string(count),
                      bytes / 1024));
  }
}

void AospOutput::OnWriting(std::string_view partition) { Begin(fmt::format("Writing '{}'", partition)); }

std::string AospOutput::Reason(const Status& st) { return st.ToString(); }

}  // namespace flashpipe::host
