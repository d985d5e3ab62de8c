#include "tools/layout_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <span>

#include <fmt/format.h>

#include "base/fd_io.h"
#include "base/unique_fd.h"

namespace flashpipe::tools {

constexpr size_t kMaxLayoutBytes = 1 << 20;

Result<std::string> ReadLayoutFile(const std::string& path) {
  UniqueFd owned;
  int fd = STDIN_FILENO;
  if (path != "-") {
    owned = UniqueFd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    if (!owned.valid()) return ErrnoError("cannot open layout " + path);
    fd = owned.get();
  }
  std::string text(kMaxLayoutBytes + 1, '\0');
  FP_ASSIGN_OR_RETURN(size_t n, ReadUpTo(fd, std::span(reinterpret_cast<uint8_t*>(text.data()), text.size()),
                                         path == "-" ? "stdin" : path));
  if (n > kMaxLayoutBytes) return InvalidArgument(fmt::format("layout {}: longer than 1 MiB", path));
  text.resize(n);
  return text;
}

}  // namespace flashpipe::tools
