// After a new table is on a block device: make the kernel's partitions
// match it without a reboot, and wait until their nodes are there.
//
//   FP_ASSIGN_OR_RETURN(KernelUpdate u, UpdateKernelPartitions(fd, "/dev/loop0", rdev, table, 5s));
//
// First BLKRRPART (the kernel drops its partitions and reads the table,
// as `blockdev --rereadpt` does). The kernel refuses that with EBUSY while
// any partition is open; then each partition is changed on its own with
// BLKPG, as partx/resizepart do: the kernel's partitions that the new
// table does not have with the same start and size are deleted (one that
// is open cannot be: kBusy naming it), and the new table's missing ones
// added. The same when BLKRRPART succeeds but the kernel's list is not the
// table (a kernel built without CONFIG_EFI_PARTITION: the scan found
// nothing; BLKPG needs no parser). A disk whose driver does not scan partitions (a loop device
// attached without -P: EINVAL) is left as it is, and the update says so.
// Then, polling every 2 ms for at most `wait`, until sysfs lists exactly
// the table's partitions with their starts and sizes and every
// /dev/NAME is a block device with the right number (devtmpfs creates
// them; udev may add links later): kTimedOut naming what is missing.
// `fd` is the caller's descriptor of the whole disk (its O_EXCL claim
// does not stop BLKRRPART: the kernel allows the claim's holder).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "partition/layout.h"

namespace flashpipe::partition {

struct KernelUpdate {
  enum class Method { kReread, kPerPartition, kNotScanned };
  Method method = Method::kReread;
  std::string why;                 // kPerPartition: why BLKRRPART was not enough
  std::vector<std::string> nodes;  // "/dev/loop0p1", by number
  std::chrono::microseconds took{0};
  std::string Describe() const;    // "re-read (BLKRRPART): /dev/loop0p1, /dev/loop0p2 ready"
};

Result<KernelUpdate> UpdateKernelPartitions(int fd, const std::string& path, dev_t rdev, const Table& table,
                                            std::chrono::milliseconds wait);

// After an image was written over the whole block device `path` (`write`
// of a disk image, serve's flash of a whole-disk partition): when the disk
// now starts with a valid GPT, its partitions made the kernel's as above,
// the ioctls on `claim_fd` (the caller's O_EXCL descriptor, whose holder
// the kernel allows) or, when -1, on a descriptor of its own. nullopt,
// doing nothing, for a regular file, a partition (sysfs has its
// `partition` file), or a disk without a valid GPT.
Result<std::optional<KernelUpdate>> UpdateAfterWholeDiskWrite(const std::string& path, std::chrono::milliseconds wait,
                                                              int claim_fd = -1);

}  // namespace flashpipe::partition
