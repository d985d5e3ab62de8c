// The flag vocabulary every flashpipe command shares, so that one flag means
// one thing everywhere, and the exit-code scheme:
//
//   0    the command did what was asked
//   1    it failed (bad image, target too small, I/O error, verify mismatch...)
//   2    usage: unknown flag, bad flag value, missing argument
//   130  interrupted by SIGINT, 143 by SIGTERM, 129 by SIGHUP (128 + the
//        signal, as shells report it), for the commands that stop cleanly
//        (tools/interrupt.h)
//
// Writer flags (write, serve, bench, and every later command that writes or
// reads a device through the engine):
//   --backend auto|io_uring|threads|sync   (hidden alias: --io-backend)
//   -Q, --queue-depth N                    1..256
//   --request-size SIZE                    4K..64M, a multiple of 4K; K/M/G suffixes
// Machine output: --json[=FILE] writes JSON to FILE, or to stdout when no
// FILE is given (then the human text goes to stderr).
#pragma once

#include <CLI/CLI.hpp>

#include <optional>
#include <string>

#include "base/status.h"
#include "io/target.h"

namespace flashpipe::tools {

inline constexpr int kExitOk = 0;
inline constexpr int kExitFailed = 1;
inline constexpr int kExitUsage = 2;
inline constexpr int kExitSignalBase = 128;

// "flashpipe CMD" for usage lines and messages. argv0 is the subcommand's
// argv[0]: "write", or the path of a link named like an AOSP tool.
std::string CommandName(const char* argv0);

// Parses argv. On --help prints the help and returns 0; on a usage error
// prints "flashpipe CMD: error: ..." and a hint, and returns 2; otherwise
// nullopt (go on). `interruptible`: the command stops cleanly on SIGINT and
// SIGTERM (and SIGHUP), and its help's exit status says 130/143/129.
std::optional<int> ParseOrExit(CLI::App& app, int argc, char** argv, bool interruptible = false);

// A flag value the parser accepted but the command refused (a bad --backend,
// two flags that exclude each other): the same message and exit 2.
int UsageError(CLI::App& app, const Status& status);

struct WriterFlags {
  std::string backend = "auto";
  unsigned queue_depth = 0;  // 0: the command's default
  std::string request_size;  // empty: from the device
};

struct WriterSettings {
  io::Backend backend = io::Backend::kAuto;
  unsigned queue_depth = 0;
  uint64_t request_size = 0;
};

// Adds --backend (and the hidden --io-backend), -Q/--queue-depth and
// --request-size. `default_depth` is only for the help text.
void AddWriterFlags(CLI::App& app, WriterFlags& flags, unsigned default_depth = 4);
Result<WriterSettings> ParseWriterFlags(const WriterFlags& flags);

// --json[=FILE]: `path` is "" when not given, "-" for stdout.
void AddJsonFlag(CLI::App& app, std::string& path, const std::string& what);
// A --json FILE must be none of the command's `files` (its inputs and other
// outputs; "" and "-" entries are skipped): the same file through links or
// the same path of a file not made yet is refused. Call it before anything
// is read or written: the report is written last, over whatever it names.
Status CheckJsonFile(const std::string& json, const std::vector<std::string>& files);
// WriteText: `text` to `path` as it is, "-" for stdout; a file appears whole
// or not at all (AtomicFile). WriteJson adds the final newline.
Status WriteText(const std::string& path, const std::string& text);
Status WriteJson(const std::string& path, const std::string& text);

}  // namespace flashpipe::tools
