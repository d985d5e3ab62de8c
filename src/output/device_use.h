// DeviceUse: who else uses a block device, from /proc/self/mountinfo and
// sysfs, for the read path's in-use policy (read_source.h): the mounts of the
// device and of its partitions, and the holders stacked on them
// (device-mapper, RAID). Best effort: what cannot be read is left out.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

namespace flashpipe::output {

struct Mount {
  std::string source;  // what mountinfo names: "/dev/loop3p1"
  std::string point;   // "/mnt"
  bool read_write = false;
  bool partition = false;  // a partition of the device, not the device itself
};

struct DeviceUse {
  std::vector<Mount> mounts;
  bool mounted_read_write = false;
  std::vector<std::string> holders;  // "dm-3"
};

// `dev` is the device number of a block device (st_rdev).
DeviceUse FindDeviceUse(dev_t dev);

// What `read` says about a mounted device: "/dev/sdb is mounted at /mnt
// (read-only)", or "/dev/sdb has mounted partitions: /dev/sdb1 at /boot
// (read-only), ..."; a read-write mount adds why that matters.
std::string MountWarning(const std::string& path, const DeviceUse& use);

// The same, from the text of a mountinfo file and a list of the device
// numbers to look for (the device, then its partitions); for tests.
void MountsFromMountinfo(const std::string& mountinfo, const std::vector<dev_t>& devs, DeviceUse* use);

}  // namespace flashpipe::output
