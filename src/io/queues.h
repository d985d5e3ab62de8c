// The production IoQueue backends and the blocking primitive they share.
//
//   SyncQueue    each op runs to completion inside Submit (the "blocking"
//                reference: nothing overlaps).
//   ThreadQueue  `depth` threads doing pwrite/pread/ioctl on one fd.
//   UringQueue   io_uring (liburing): O_DIRECT reads/writes, fixed buffers
//                when registration succeeds, FALLOCATE for zeroout/holes,
//                BLKDISCARD synchronously (no async discard in liburing 2.3).
//
// All of them finish short transfers by issuing the rest; a read that hits the
// end of a regular file fills the remainder of the buffer with zeros (so the
// writer can read-modify-write a file's last, partial block). The queue does
// not own the fd: it must outlive the queue.
#pragma once

#include <memory>

#include "base/status.h"
#include "io/io_queue.h"

namespace flashpipe::io {

std::unique_ptr<IoQueue> MakeSyncQueue(int fd, unsigned depth);
std::unique_ptr<IoQueue> MakeThreadQueue(int fd, unsigned depth);
Result<std::unique_ptr<IoQueue>> MakeUringQueue(int fd, unsigned depth);

// Whether io_uring can be used in this process (probed once, then cached).
// Not OK means: ENOSYS (old kernel), EPERM (sysctl kernel.io_uring_disabled or
// a seccomp profile) or EINVAL; the status says which.
Status ProbeUring();

// Runs one op to completion on fd with plain system calls. Used by the sync
// and thread backends, and by io_uring for what it cannot do asynchronously.
Status RunOpBlocking(int fd, const IoOp& op);

// "write 0x1000+4096" -- how errors name an op.
std::string DescribeOp(const IoOp& op);

}  // namespace flashpipe::io
