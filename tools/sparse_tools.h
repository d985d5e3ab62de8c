// Shared plumbing of the sparse subcommands (img2simg, simg2img, append2simg,
// resparse, dump): opening "-" as stdin/stdout. Flag parsing is tools/flags.h.
#pragma once

#include <string>

#include "base/status.h"
#include "base/unique_fd.h"

namespace flashpipe::tools {

// "-" is stdin (a dup of it); anything else is opened read-only.
Result<UniqueFd> OpenForRead(const std::string& path);
// "-" is stdout; anything else is created or truncated (mode 0666 & ~umask).
Result<UniqueFd> OpenForWrite(const std::string& path);

}  // namespace flashpipe::tools
