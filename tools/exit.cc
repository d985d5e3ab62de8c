#include <cerrno>
#include <cstdio>

#include "base/utf8.h"
#include "tools/commands.h"
#include "tools/flags.h"
#include "tools/interrupt.h"

namespace flashpipe::tools {

int ExitWith(const char* command, const Status& status) {
  if (status.ok()) return kExitOk;
  int signal = status.code() == Code::kCancelled ? CaughtSignal() : 0;
  std::fprintf(stderr, "flashpipe %s: %s%s\n", command,
               signal ? "" : "error: ", TerminalText(status.ToString()).c_str());
  return signal ? kExitSignalBase + signal : kExitFailed;
}

Status FlushStdout() {
  errno = 0;
  if (std::fflush(stdout) != 0 || std::ferror(stdout)) {
    int e = errno ? errno : EIO;
    return IoError("write stdout", e);
  }
  return Status::Ok();
}

}  // namespace flashpipe::tools
