// The production IoQueue backends and the blocking primitive they share.
//
//   SyncQueue    each op runs to completion inside Submit (the "blocking"
//                reference: nothing overlaps).
//   ThreadQueue  `depth` threads doing pwrite/pread/ioctl on one fd.
//   UringQueue   io_uring (liburing): O_DIRECT reads/writes, fixed buffers
//                when registration succeeds, FALLOCATE for zeroout/holes,
//                BLKDISCARD synchronously (no async discard in liburing 2.3).
//                Reads and writes the block layer would split go straight
//                to the kernel's io-wq workers (see MakeUringQueue).
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
// Reads and writes longer than `async_above` bytes (0: none) are queued with
// IOSQE_ASYNC. io_uring first tries every op without blocking (REQ_NOWAIT);
// the block layer refuses to split such a bio and fails it with EAGAIN, and
// io_uring then issues it again from a worker. The first attempt has already
// been charged by blk-throttle, so under a cgroup io.max limit every byte of
// such an op counted twice (2x the time), and without one the attempt is
// wasted work. Pass the device's Geometry::max_unsplit.
Result<std::unique_ptr<IoQueue>> MakeUringQueue(int fd, unsigned depth, uint64_t async_above = 0);

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
