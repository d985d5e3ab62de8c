// Shared plumbing of the sparse subcommands (img2simg, simg2img, append2simg,
// resparse, dump): opening "-" as stdin. Flag parsing is tools/flags.h; the
// converters open their files through sparse/files.h.
#pragma once

#include <string>

#include "base/status.h"
#include "base/unique_fd.h"

namespace flashpipe::tools {

// "-" is stdin (a dup of it); anything else is opened read-only.
Result<UniqueFd> OpenForRead(const std::string& path);

}  // namespace flashpipe::tools
