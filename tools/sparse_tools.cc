#include "tools/sparse_tools.h"

#include <fcntl.h>
#include <unistd.h>

namespace flashpipe::tools {

Result<UniqueFd> OpenForRead(const std::string& path) {
  if (path == "-") return UniqueFd(::dup(STDIN_FILENO));
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) return ErrnoError(fmt::format("open {}", path));
  return fd;
}

}  // namespace flashpipe::tools
