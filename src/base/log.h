// Log: the lines a long-running command (the fastboot daemon, and the USB
// transport) writes on stderr, in one format:
//
//   serve: tcp 127.0.0.1:40112: session start            (Info: always)
//   serve: 12.345: download of 1048576 bytes             (Debug: only with -v)
//   serve: warning: state file empty: starting locked    (Warn: always)
//
// With -v every line, Info and Warn too, carries the seconds since Init()
// after the prefix ("serve: 12.346: warning: ..."), so the lines read as
// one timeline.
//
// Each line is written with one write(2), so lines from several threads
// never interleave. Text that came from outside (GPT names, state files,
// client commands) goes through Printable() so control characters cannot
// forge log lines or move the terminal's cursor.
//
//   log::Init("serve", verbose);
//   log::Info("{}: session start", peer);
//   if (log::Verbose()) log::Debug("download of {} bytes", n);
#pragma once

#include <string>
#include <string_view>

#include <fmt/format.h>

namespace flashpipe::log {

// Sets the prefix ("serve") and whether Debug lines are written; resets the
// clock Debug lines are stamped with.
void Init(std::string_view prefix, bool verbose);
bool Verbose();

// Writes "PREFIX: LINE\n" (Warn: "PREFIX: warning: LINE\n"; with -v
// "PREFIX: SECONDS: ..." for every level) in one call.
void Write(std::string_view level, std::string_view line);

template <typename... Args>
void Info(fmt::format_string<Args...> f, Args&&... args) {
  Write("", fmt::format(f, std::forward<Args>(args)...));
}
template <typename... Args>
void Warn(fmt::format_string<Args...> f, Args&&... args) {
  Write("warning", fmt::format(f, std::forward<Args>(args)...));
}
template <typename... Args>
void Debug(fmt::format_string<Args...> f, Args&&... args) {
  if (Verbose()) Write("debug", fmt::format(f, std::forward<Args>(args)...));
}

// `text` with control characters and bytes >= 0x7f as \xNN (and a backslash
// as \\), at most `max` bytes of input.
std::string Printable(std::string_view text, size_t max = 256);

}  // namespace flashpipe::log
