// FileId: which file a path or descriptor really is (device and inode), so
// that "an input is never an output" can be checked through symlinks, hard
// links, "-" (stdin/stdout) and /dev/fd/N alike. For a block device the id
// is its device number, so two nodes of one device compare equal.
#pragma once

#include <sys/stat.h>

#include <optional>
#include <string>

#include "base/status.h"

namespace flashpipe {

struct FileId {
  dev_t dev = 0;
  ino_t ino = 0;
  bool block_device = false;
  bool operator==(const FileId&) const = default;
};

FileId FileIdOf(const struct stat& st);
// The file `fd` refers to; an error only when fstat fails.
Result<FileId> FileIdOfFd(int fd, std::string_view name);
// The file `path` names (following symlinks), or nullopt when it does not
// exist yet. Other stat errors (EACCES, ELOOP) are errors.
Result<std::optional<FileId>> FileIdOfPath(const std::string& path);

}  // namespace flashpipe
