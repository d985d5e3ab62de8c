// Shared plumbing of the sparse subcommands (img2simg, simg2img, append2simg,
// resparse, dump): CLI11 parsing that returns an exit status instead of
// throwing, and opening "-" as stdin.
#pragma once

#include <CLI/CLI.hpp>

#include <optional>
#include <string>

#include "base/status.h"
#include "base/unique_fd.h"

namespace flashpipe::tools {

// Parses argv; on --help or a usage error prints and returns the exit status.
std::optional<int> ParseOrExit(CLI::App& app, int argc, char** argv);

// "-" is stdin (a dup of it); anything else is opened read-only. (The
// converters open their files through sparse/files.h.)
Result<UniqueFd> OpenForRead(const std::string& path);

}  // namespace flashpipe::tools
