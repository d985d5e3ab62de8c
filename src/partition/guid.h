// GUIDs as a GPT stores them and as people write them.
//
// A Guid holds the 16 bytes in on-disk order (UEFI's mixed endianness: the
// first three fields little-endian, the last two as they are), which is what
// io/gpt.h reads and partition/gpt_image.h writes. Text is the usual
// "0FC63DAF-8483-4772-8E79-3D69D8477DE4" (either case in, upper case out, as
// sfdisk prints).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

#include "base/status.h"

namespace flashpipe::partition {

using Guid = std::array<uint8_t, 16>;

// kInvalidArgument "'xyz' is not a GUID (8-4-4-4-12 hex digits)".
Result<Guid> ParseGuid(std::string_view text);
std::string FormatGuid(const Guid& guid);
bool IsZero(const Guid& guid);
// A version 4 (random) GUID from getrandom(2).
Guid RandomGuid();

}  // namespace flashpipe::partition
