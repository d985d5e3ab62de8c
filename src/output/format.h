// The formats `flashpipe read` writes, by name (--format) or by the output's
// suffix: .simg and .sparse are sparse, .zst zstd, .xz xz, .gz gzip; any other
// name (and "-") is raw unless --format says otherwise.
#pragma once

#include <string>
#include <string_view>

#include "base/status.h"

namespace flashpipe::output {

enum class Format { kRaw, kSparse, kZstd, kXz, kGzip };

Result<Format> ParseFormat(std::string_view name);  // raw|sparse|zstd|xz|gzip
Format FormatForPath(std::string_view path);
std::string_view FormatName(Format format);
bool IsCompressed(Format format);

}  // namespace flashpipe::output
