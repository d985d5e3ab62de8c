// Who else uses a block device or a file, read from sysfs and the mount
// table, so that a write never lands under a mounted file system by way of a
// loop device, and so that a refusal can say what holds the device:
//
//   BlockUse u = UseOfBlockDevice(st.st_rdev);          // mounts, holders
//   for (BlockUse& l : LoopDevicesBackedBy(file_id))    // loop devices over a file
//     if (l.in_use()) ... refuse, naming l.Describe()
//
// "In use" means mounted (/proc/self/mountinfo names the device or one of its
// partitions), held by another block device (holders/: device mapper, md),
// or opened exclusively by someone (an O_EXCL open fails with EBUSY, which
// is how the kernel itself refuses a second claim). A plain open by another
// process is not visible this way.
//
// `root` prefixes /sys, /proc and /dev, for tests that build a fake tree;
// "" is the real system.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

#include "base/file_id.h"

namespace flashpipe::io {

// One mount of a device or of one of its partitions, from mountinfo
// (paths unescaped: "\040" is a blank).
struct MountInfo {
  std::string source;  // what mountinfo names: "/dev/loop3p1"
  std::string point;   // "/mnt"
  bool read_write = false;
  bool partition = false;  // of a partition of the device, not of the device itself
};

struct BlockUse {
  std::string device;                // "/dev/loop3"
  std::vector<MountInfo> mounts;     // of it or of its partitions
  std::vector<std::string> holders;  // "dm-0"
  bool busy = false;                 // an O_EXCL open fails with EBUSY
  bool in_use() const { return !mounts.empty() || !holders.empty() || busy; }
  // "mounted on /mnt", "held by dm-0", "opened exclusively by another
  // program"; "" when not in use.
  std::string Why() const;
  // "/dev/loop3 (mounted on /mnt)", or just the device when not in use.
  std::string Describe() const;
  bool mounted_read_write() const;
};

// The mounts in mountinfo text of `device` (partition false) and of the
// devices in `partitions` (partition true).
std::vector<MountInfo> MountsFromMountinfo(const std::string& mountinfo, dev_t device,
                                           const std::vector<dev_t>& partitions);

// A partition the kernel has for a disk now (sysfs: /sys/dev/block/M:m/NAME
// with a "partition" file), which may differ from the table on the disk.
struct KernelPartition {
  uint32_t number = 0;  // "partition"
  uint64_t start = 0;   // 512-byte units, as sysfs gives them
  uint64_t size = 0;
  dev_t dev = 0;
  std::string name;     // "loop0p1": the node is /dev/NAME
};

// The kernel's partitions of disk `rdev`, by number.
std::vector<KernelPartition> KernelPartitionsOf(dev_t rdev, const std::string& root = "");

// The uses of block device `rdev` and of its partitions.
BlockUse UseOfBlockDevice(dev_t rdev, const std::string& root = "");

// Loop devices whose backing file is `file` (compared by device and inode),
// with their uses; empty when there are none.
std::vector<BlockUse> LoopDevicesBackedBy(const FileId& file, const std::string& root = "");

// The backing file of loop device `rdev`; nullopt when `rdev` is not a loop
// device, has no backing file, or the file is gone.
std::optional<FileId> LoopBackingFile(dev_t rdev, const std::string& root = "");

// The whole disk a partition belongs to; `rdev` itself when it is not a
// partition.
dev_t WholeDisk(dev_t rdev, const std::string& root = "");

// Whether writing one of two block devices changes the other: the same
// device, or a disk and one of its partitions.
bool BlockDevicesOverlap(dev_t a, dev_t b, const std::string& root = "");

}  // namespace flashpipe::io
