// RunTool: runs a program of the host (e2fsck, debugfs) to completion, its
// standard input /dev/null, its output and errors captured together (the
// first 64 KiB). For the power-cut checkers, which read file system images
// with e2fsprogs rather than mounting them.
#pragma once

#include <string>
#include <vector>

#include "base/status.h"

namespace flashpipe::powercut {

struct ToolResult {
  int exit_code = 0;  // 128 + N when killed by signal N
  std::string output;
};

// kNotFound when the program is not on PATH; kIoError when it cannot run.
Result<ToolResult> RunTool(const std::vector<std::string>& argv);

}  // namespace flashpipe::powercut
