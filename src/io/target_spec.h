// TargetSpec: how `read` and `write` name what they read or write, and the
// byte window inside it.
//
//   ParseTargetSpec("disk.img:system")   -> path "disk.img", partition "system"
//
// A path that exists as given is a path, never split at its ':' (a file
// literally named "a:b"). Otherwise SPEC is PATH:NAME, split at its last ':',
// when PATH exists; else SPEC is a path that does not exist (exists false:
// `read` refuses it, `write` may create it).
//
// PlaceWindow puts [offset, offset + size) inside a range of the target
// (the whole target, or a GPT partition found by FindGptPartition, which
// reads the table through io/gpt.h, the one GPT reader). Both are pure
// checks; the caller opens the target with the window (io/target.h), and
// every write through it is bounds-checked against it from then on.
#pragma once

#include <sys/stat.h>

#include <cstdint>
#include <optional>
#include <string>

#include "base/status.h"
#include "io/target.h"

namespace flashpipe::io {

struct TargetSpec {
  std::string path;       // the file or block device
  std::string partition;  // the GPT partition name, or empty
  bool exists = false;    // `path` exists; `st` is its stat
  struct stat st {};
};
TargetSpec ParseTargetSpec(const std::string& spec);

// A range of bytes of a target: [offset, offset + size).
struct ByteRange {
  uint64_t offset = 0;
  uint64_t size = 0;
  bool operator==(const ByteRange&) const = default;
};

// The GPT partition `name` of `path` (sector size: the device's logical
// block; a file: 512, then 4096). Refused: no valid GPT, no partition of that
// name (the error lists the names there are), two of that name. A damaged
// copy of the table is logged as a warning, never used silently.
Result<ByteRange> FindGptPartition(const std::string& path, const std::string& name, const Geometry& geometry);

// What a command asks for inside `within`: its --offset, and its size flag
// (`size_flag`: "--length" for read, "--size" for write), in messages as
// `what` ("partition 'system' of disk.img", or the path) and `verb` ("read").
struct WindowRequest {
  uint64_t offset = 0;
  std::optional<uint64_t> size;  // unset: the rest of `within`
};
struct WindowNames {
  std::string what;
  const char* size_flag = "--size";
  const char* verb = "write";
};
// Refused (nothing opened, nothing changed): the offset beyond the end of
// `within`, a size that runs past it (kNoSpace, saying how much there is),
// an empty window.
Result<ByteRange> PlaceWindow(const ByteRange& within, const WindowRequest& request, const WindowNames& names);

// A target a window applies to: TARGET:NAME, or --offset/--size given.
bool IsWindowed(const TargetSpec& spec, const WindowRequest& request);

// A window `write` writes (and `write --verify-only` compares): `request`
// inside the partition spec.partition names, else inside the whole target;
// set as `target`'s window (target opened on spec.path). Its start must be
// a multiple of the target's logical block, and so must its size unless it
// ends where the target ends (the writer's O_DIRECT requests stay inside it).
// `what` names it in messages: "disk.img partition 'system'", "/dev/sdb",
// with " from offset N" when --offset was given.
struct TargetWindow {
  ByteRange range;  // absolute bytes of spec.path
  std::string what;
};
Result<TargetWindow> SetWriteWindow(const TargetSpec& spec, const WindowRequest& request, Target* target);

}  // namespace flashpipe::io
