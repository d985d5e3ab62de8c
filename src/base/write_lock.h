// WriteLock: one writer at a time per file or block device, across
// processes, so that two runs writing the same target (two `write --in-place`
// of one file, `serve` on a storage that `write` also writes, two `read`s
// into one device) cannot mix their bytes and both report success.
//
//   FP_RETURN_IF_ERROR(LockForWriting(fd, path));
//
// An exclusive flock(2) on the open file description, taken without waiting
// and held until the descriptor is closed (every descriptor of the
// description). A second writer is refused with kBusy and a message that
// names the holder when /proc/locks tells it ("held by PID 123 (flashpipe
// write ...)"). A lock held briefly by a reader of the device (udev takes a
// shared flock while it probes a block device) is waited out for up to
// `patience`. Block devices are also opened O_EXCL where the caller can
// (io::Target, the converters); the lock covers --force and files, which O_EXCL does not.
// Descriptors that are not regular files or block devices (pipes, character
// devices) are left unlocked. Advisory: it stops every flashpipe writer and
// any tool that takes flock; it cannot stop one that ignores locks.
#pragma once

#include <chrono>
#include <string>

#include "base/status.h"

namespace flashpipe {

Status LockForWriting(int fd, const std::string& path,
                      std::chrono::milliseconds patience = std::chrono::milliseconds(2000));

// "PID 123 (flashpipe write a.img t.img)" for a process holding a flock on
// the inode `fd` refers to, other than this process; "" when none is found.
std::string LockHolder(int fd);

}  // namespace flashpipe
