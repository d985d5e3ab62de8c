// JsonString: a string as a JSON string literal (quoted; '"', '\' and control
// characters escaped), for the --json reports. Bytes >= 0x80 pass through, so
// UTF-8 stays UTF-8.
#pragma once

#include <string>
#include <string_view>

namespace flashpipe {

std::string JsonString(std::string_view s);

}  // namespace flashpipe
