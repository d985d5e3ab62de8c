// Resparse to files: the parts of a sparse image go to PREFIX.0, PREFIX.1,
// ... (the names users of AOSP's simg2img and fastboot expect), all of them
// or none, and never mixed with the parts of an earlier run.
//
// Before anything is created, the input is read whole and validated, the
// parts are planned, and every name is checked: a part must be a regular
// file or absent (a symlink is written through, as by every sparse tool),
// and must not be the input (device+inode, through symlinks and hard links).
// PREFIX.N for N at or past the new count are stale, left by a run that made
// more parts: each must be a regular file or a symlink, and not the input;
// they are removed in the same step in which the new parts are renamed into
// place, so `simg2img PREFIX.*` never mixes two runs.
//
// Each part is written to its own AtomicFile temp and synced as soon as it is
// complete; only when all are complete does the set switch, in a few renames
// (AtomicFile::CommitTogether): old and stale parts are moved aside, the new
// parts renamed in with PREFIX.0 last, so a kill in between leaves no
// PREFIX.0 rather than a mix of two runs. A failure (ENOSPC, a read error)
// leaves the old parts as they were and no temp. The temps a killed run left
// for any PREFIX.N are removed first.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "base/status.h"
#include "sparse/files.h"

namespace flashpipe::sparse {

struct ResparseFilesResult {
  size_t parts = 0;
  std::vector<std::string> removed;  // stale parts, by path
};

Result<ResparseFilesResult> ResparseToFiles(const std::string& in_path, const std::string& prefix,
                                            uint64_t max_size);

// The same for an input that is already open and seekable (the read path
// stages its sparse image in an unnamed file). `before_commit`, when given,
// gets the parts' temporary files once all are written and synced, before
// the switch; an error from it leaves everything as it was (the read path
// verifies the parts there).
using PartsCheck = std::function<Status(std::span<const std::string> temp_paths)>;
Result<ResparseFilesResult> ResparseToFiles(const InputFile& in, const std::string& prefix, uint64_t max_size,
                                            const PartsCheck& before_commit);

// "PREFIX.N"
std::string PartPath(const std::string& prefix, uint64_t index);

}  // namespace flashpipe::sparse
