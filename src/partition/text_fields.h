// Small pieces both layout formats share: sizes as sfdisk and U-Boot write
// them, and attribute bits by name.
//
//   ParseAmount("1MiB", kSectors) == {1 << 20, bytes}   ParseAmount("2048", kSectors) == {2048, sectors}
//   ParseAmount("4096", kBytes)   == {4096, bytes}       (U-Boot: plain numbers are bytes)
// Suffixes are K, M, G, T, P with an optional "iB" (binary: KiB = 1024) and
// KB, MB, GB, TB, PB (decimal, 1000), as util-linux's strtosize reads them;
// U-Boot's ustrtoull also takes lower-case k, m, g. A hex number (0x...) is
// taken as it is. FormatBytes gives the shortest exact binary form
// ("64MiB", "1536KiB", "4097").
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "base/status.h"
#include "partition/layout.h"

namespace flashpipe::partition {

enum class PlainUnit { kSectors, kBytes };

Result<Amount> ParseAmount(std::string_view text, PlainUnit plain);
std::string FormatExactBytes(uint64_t bytes);

// sfdisk's attribute words: RequiredPartition (bit 0), NoBlockIOProtocol
// (1), LegacyBIOSBootable (2), GUID:N[,N...] for the others (48-63 in the
// UEFI spec; flashpipe accepts and prints any bit this way).
Result<uint64_t> ParseAttributes(std::string_view text);
std::string FormatAttributes(uint64_t attributes);

}  // namespace flashpipe::partition
