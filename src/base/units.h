// Parsing and printing of sizes and rates as users type them.
//   ParseSize("8G") == 8 GiB: sizes are binary (K, M, G, T = 2^10..2^40),
//     with an optional "iB"/"B" ("64KiB", "1MB" is still 2^20), or
//     hex/decimal bytes ("0x1000", "4096").
//   ParseRate("45M") == 45'000'000: rates are SI (k/K, M, G = 10^3..10^9).
//   ParseNumber("0x1000") == 4096: a plain number, decimal or 0x hex.
// One rule for the digits everywhere (flags, protocol arguments, a
// device's answers): decimal, or hex after 0x/0X; no sign, no spaces; a
// decimal number does not start with 0 unless it is 0 ("010" is refused:
// strtoull's base 0 would read it as octal 8, other tools as 10); at most
// 64 bits.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace flashpipe {

Result<uint64_t> ParseNumber(std::string_view text);
Result<uint64_t> ParseSize(std::string_view text);
Result<uint64_t> ParseRate(std::string_view text);
// "a,b,c" -> ParseSize of each.
Result<std::vector<uint64_t>> ParseSizeList(std::string_view text);
// 1536 -> "1.5 KiB", 3221225472 -> "3.0 GiB", 100 -> "100 B".
std::string FormatBytes(uint64_t bytes);

}  // namespace flashpipe
