#include "partition/kernel_table.h"

#include <linux/blkpg.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <thread>

#include <fmt/format.h>

#include "base/fd_io.h"
#include "base/unique_fd.h"
#include "io/device_users.h"
#include "io/gpt.h"

namespace flashpipe::partition {
namespace {

using Clock = std::chrono::steady_clock;

// The kernel's view in 512-byte units.
uint64_t Units(uint64_t lbas, uint32_t sector) { return lbas * (sector / 512); }

bool Same(const io::KernelPartition& k, const Partition& p, uint32_t sector) {
  return k.number == p.number && k.start == Units(p.start, sector) && k.size == Units(p.size, sector);
}

const Partition* Find(const Table& t, uint32_t number) {
  for (const Partition& p : t.partitions) {
    if (p.number == number) return &p;
  }
  return nullptr;
}

Status Blkpg(int fd, int op, const Partition* p, uint32_t number, uint32_t sector) {
  blkpg_partition part{};
  part.pno = static_cast<int>(number);
  if (p) {
    part.start = static_cast<long long>(p->start * sector);
    part.length = static_cast<long long>(p->size * sector);
  }
  blkpg_ioctl_arg arg{};
  arg.op = op;
  arg.datalen = sizeof(part);
  arg.data = &part;
  if (RetryOnEintr([&] { return ::ioctl(fd, BLKPG, &arg); }) == 0) return Status::Ok();
  return ErrnoError(fmt::format("BLKPG {} partition {}", op == BLKPG_DEL_PARTITION ? "delete" : "add", number));
}

Status PerPartition(int fd, const std::string& path, dev_t rdev, const Table& t) {
  for (const io::KernelPartition& k : io::KernelPartitionsOf(rdev)) {
    const Partition* p = Find(t, k.number);
    if (p && Same(k, *p, t.sector_size)) continue;
    Status s = Blkpg(fd, BLKPG_DEL_PARTITION, nullptr, k.number, t.sector_size);
    if (s.ok()) continue;
    if (s.sys_errno() == EBUSY) {
      return Busy(fmt::format("{}: the kernel keeps /dev/{} as it was (it is open); the new table is on the disk "
                              "and the kernel sees it once /dev/{} is closed and `blockdev --rereadpt {}` runs, "
                              "or after a restart", path, k.name, k.name, path));
    }
    return s.WithContext(path);
  }
  auto now = io::KernelPartitionsOf(rdev);
  for (const Partition& p : t.partitions) {
    bool there = std::any_of(now.begin(), now.end(), [&](const auto& k) { return Same(k, p, t.sector_size); });
    if (!there) FP_RETURN_IF_ERROR(Blkpg(fd, BLKPG_ADD_PARTITION, &p, p.number, t.sector_size).WithContext(path));
  }
  return Status::Ok();
}

bool SameList(const std::vector<io::KernelPartition>& now, const Table& t) {
  if (now.size() != t.partitions.size()) return false;
  for (size_t i = 0; i < now.size(); ++i) {
    if (!Same(now[i], t.partitions[i], t.sector_size)) return false;
  }
  return true;
}

// "" when the kernel's partitions and their nodes match the table, else
// what is still different.
std::string Difference(dev_t rdev, const Table& t, std::vector<std::string>* nodes) {
  auto now = io::KernelPartitionsOf(rdev);
  nodes->clear();
  if (now.size() != t.partitions.size()) {
    return fmt::format("the kernel lists {} partitions, the table has {}", now.size(), t.partitions.size());
  }
  for (size_t i = 0; i < now.size(); ++i) {
    const Partition& p = t.partitions[i];
    if (!Same(now[i], p, t.sector_size)) {
      return fmt::format("partition {}: the kernel has {} (start {}, size {} x 512 bytes)", p.number, now[i].name,
                         now[i].start, now[i].size);
    }
    std::string node = "/dev/" + now[i].name;
    struct stat st;
    if (::stat(node.c_str(), &st) != 0 || !S_ISBLK(st.st_mode) || st.st_rdev != now[i].dev) {
      return fmt::format("{} is not there yet", node);
    }
    nodes->push_back(node);
  }
  return "";
}

}  // namespace

std::string KernelUpdate::Describe() const {
  if (method == Method::kNotScanned) {
    return "not told: the kernel does not scan partitions on this device (a partition itself, or a loop "
           "device attached without losetup -P)";
  }
  std::string list;
  for (const auto& n : nodes) list += (list.empty() ? "" : ", ") + n;
  std::string how = method == Method::kReread ? "re-read (BLKRRPART)" : fmt::format("per partition (BLKPG: {})", why);
  return fmt::format("{}: {} ready in {:.3f} s", how, list.empty() ? "no partitions" : list, took.count() / 1e6);
}

Result<KernelUpdate> UpdateKernelPartitions(int fd, const std::string& path, dev_t rdev, const Table& t,
                                            std::chrono::milliseconds wait) {
  const auto start = Clock::now();
  KernelUpdate u;
  if (RetryOnEintr([&] { return ::ioctl(fd, BLKRRPART); }) != 0) {
    int e = errno;
    if (e == EINVAL) {
      u.method = KernelUpdate::Method::kNotScanned;
      return u;
    }
    if (e != EBUSY) return IoError(fmt::format("{}: BLKRRPART", path), e);
    u.method = KernelUpdate::Method::kPerPartition;
    u.why = "partitions are open";
    FP_RETURN_IF_ERROR(PerPartition(fd, path, rdev, t));
  } else if (!SameList(io::KernelPartitionsOf(rdev), t)) {
    // The scan is synchronous: a list that differs now is a kernel that
    // could not read the table (built without CONFIG_EFI_PARTITION).
    u.method = KernelUpdate::Method::kPerPartition;
    u.why = "the kernel's re-read did not find the table (no EFI partition support?)";
    FP_RETURN_IF_ERROR(PerPartition(fd, path, rdev, t));
  }
  const auto deadline = start + wait;
  for (;;) {
    std::string diff = Difference(rdev, t, &u.nodes);
    if (diff.empty()) break;
    if (Clock::now() >= deadline) {
      return TimedOut(fmt::format("{}: the table is written, but after {} ms {}", path, wait.count(), diff));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  u.took = std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - start);
  return u;
}

}  // namespace flashpipe::partition

namespace flashpipe::partition {

Result<std::optional<KernelUpdate>> UpdateAfterWholeDiskWrite(const std::string& path, std::chrono::milliseconds wait,
                                                              int claim_fd) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 || !S_ISBLK(st.st_mode)) return std::optional<KernelUpdate>();
  std::string sysfs = fmt::format("/sys/dev/block/{}:{}/partition", major(st.st_rdev), minor(st.st_rdev));
  if (::access(sysfs.c_str(), F_OK) == 0) return std::optional<KernelUpdate>();  // a partition has no table
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) return ErrnoError("open " + path);
  uint64_t size = 0;
  uint32_t sector = 0;
  int ssz = 0;
  if (::ioctl(fd.get(), BLKGETSIZE64, &size) != 0 || ::ioctl(fd.get(), BLKSSZGET, &ssz) != 0) {
    return ErrnoError("size of " + path);
  }
  sector = static_cast<uint32_t>(ssz);
  auto read_at = [&](uint64_t off, std::span<uint8_t> out) { return PreadExact(fd.get(), out, off, path); };
  auto gpt = io::ReadGpt(read_at, size, sector);
  if (!gpt.ok()) return std::optional<KernelUpdate>();
  FP_ASSIGN_OR_RETURN(KernelUpdate u, UpdateKernelPartitions(claim_fd >= 0 ? claim_fd : fd.get(), path, st.st_rdev,
                                                             FromGpt(*gpt, size), wait));
  return std::optional<KernelUpdate>(std::move(u));
}

}  // namespace flashpipe::partition
