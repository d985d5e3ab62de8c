// SHA256SUMS files (what sha256sum writes: "HEX  NAME", "HEX *NAME"; also
// the BSD form "SHA256 (NAME) = HEX"): the digest listed for one file name.
// Pure.
#pragma once

#include <string>
#include <string_view>

#include "base/status.h"

namespace flashpipe::fetch {

// The lowercase hex digest listed for `name` (matched as written, or by the
// listed name's last path component). kNotFound when it is not listed,
// kCorrupt for a digest that is not 64 hex digits.
Result<std::string> Sha256FromSums(std::string_view sums, std::string_view name, std::string_view what);

// `hex` as 64 lowercase hex digits, or kInvalidArgument.
Result<std::string> NormalizeSha256(std::string_view hex);

}  // namespace flashpipe::fetch
