// A layout file read whole (`flashpipe partition TARGET LAYOUT`, `serve
// --layout FILE`): at most 1 MiB; "-" is stdin.
#pragma once

#include <string>

#include "base/status.h"

namespace flashpipe::tools {

Result<std::string> ReadLayoutFile(const std::string& path);

}  // namespace flashpipe::tools
