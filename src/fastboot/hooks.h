// Running the shell commands a device is configured with (oem commands, the
// reboot and shutdown hooks): `/bin/sh -c COMMAND NAME ARGS...`, so the
// command sees the words after it as $1..$n. Output (stdout and stderr) is
// handed back line by line; the result is the exit status.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace flashpipe::fastboot {

Result<int> RunShell(const std::string& command, const std::string& name,
                     const std::vector<std::string>& args,
                     const std::function<void(std::string_view line)>& on_line);

}  // namespace flashpipe::fastboot
