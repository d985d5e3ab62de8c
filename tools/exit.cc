#include <cerrno>
#include <cstdio>

#include "tools/commands.h"

namespace flashpipe::tools {

int ExitWith(const char* command, const Status& status) {
  if (status.ok()) return 0;
  std::fprintf(stderr, "flashpipe %s: error: %s\n", command, status.ToString().c_str());
  return 1;
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
