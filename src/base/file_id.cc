#include "base/file_id.h"

namespace flashpipe {

FileId FileIdOf(const struct stat& st) {
  if (S_ISBLK(st.st_mode)) return FileId{.dev = st.st_rdev, .ino = 0, .block_device = true};
  return FileId{.dev = st.st_dev, .ino = st.st_ino, .block_device = false};
}

Result<FileId> FileIdOfFd(int fd, std::string_view name) {
  struct stat st;
  if (::fstat(fd, &st) != 0) return ErrnoError(fmt::format("stat {}", name));
  return FileIdOf(st);
}

Result<std::optional<FileId>> FileIdOfPath(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return std::optional<FileId>();
    return ErrnoError(fmt::format("stat {}", path));
  }
  return std::optional<FileId>(FileIdOf(st));
}

}  // namespace flashpipe
