// UTF-8 judged byte by byte, for text that came from outside (a device's
// FAIL/INFO text, a serial, a name inside an image, a path) on its way to
// JSON or a terminal.
//
//   Utf8Length(s, i)  the length (1-4) of the well-formed UTF-8 sequence
//                     that starts at s[i], or 0 when there is none there
//                     (a stray continuation byte, an overlong form, a
//                     surrogate, past U+10FFFF, cut short)
//   TerminalText(s)   s with what a terminal would act on escaped as \xNN:
//                     C0 controls, DEL, C1 controls (U+0080-U+009F) and
//                     bytes that are not well-formed UTF-8. Printable text,
//                     backslashes and other UTF-8 pass unchanged, so
//                     ordinary output stays what the AOSP client prints.
//
// Beside log::Printable (base/log.h): Printable is for log lines and error
// messages, bounded in length and pure ASCII (every byte >= 0x7f escaped), so
// a FAIL text or a log stays short and plain. TerminalText keeps the whole
// text and its UTF-8, for output that must read as the AOSP client's does
// (getvar values, device names, summaries) while still being inert.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace flashpipe {

size_t Utf8Length(std::string_view s, size_t i);
std::string TerminalText(std::string_view s);

}  // namespace flashpipe
