// How a long text reaches a fastboot client whose lines hold 60 bytes
// (kMaxMessage): INFO lines broken at word boundaries, and a FAIL reason that
// is short and whole.
//
// A failure reason is built from context outwards ("flash 'system': invalid
// sparse image: chunk 3 at byte 0x2000: ..."), and the daemon's messages put
// what failed and why in their first part ("write-behind to 'system' failed
// (No space left on device): ..."). ShortReason keeps as many whole leading
// parts as fit; the whole text goes out before it as INFO lines (WrapWords),
// which the client prints as "(bootloader) ..." just above its FAILED line.
// Pure functions.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace flashpipe::fastboot {

// Lines of at most `width` bytes, broken at spaces (the space is dropped);
// a word longer than `width` (a long path) is the one thing cut, at `width`.
// Runs of spaces count as one break; an empty text gives no line.
std::vector<std::string> WrapWords(std::string_view text, size_t width);

// `reason` itself when it fits in `width`; else its longest run of whole
// leading ": "-separated parts that fits, when that fills more than half of
// `width` (a lone label such as "create-logical-partition" does not); else
// its leading whole words and "...". Never ends inside a word.
std::string ShortReason(std::string_view reason, size_t width);

}  // namespace flashpipe::fastboot
