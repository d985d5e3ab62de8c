#include "partition/table_change.h"

#include <fcntl.h>
#include <linux/fs.h>
#include <sys/ioctl.h>

#include <fmt/format.h>

#include "base/file_id.h"
#include "base/unique_fd.h"
#include "lp/block_io.h"
#include "partition/gpt_io.h"
#include "partition/table_source.h"

namespace flashpipe::partition {
namespace {

using Clock = std::chrono::steady_clock;

// A buffered descriptor of the held disk, with its size and sector size.
Result<OpenDisk> OpenHeld(const HeldDisk& held, UniqueFd* owned) {
  OpenDisk d;
  d.path = held.path;
  owned->Reset(::open(held.path.c_str(), O_RDWR | O_CLOEXEC));
  if (!owned->valid()) return ErrnoError("cannot open " + held.path);
  d.fd = owned->get();
  d.kernel_fd = held.claim_fd >= 0 ? held.claim_fd : d.fd;
  if (::fstat(d.fd, &d.st) != 0) return ErrnoError("cannot stat " + held.path);
  d.block = S_ISBLK(d.st.st_mode);
  if (!d.block && !S_ISREG(d.st.st_mode)) return InvalidArgument(held.path + ": not a regular file or block device");
  if (d.block) {
    int sector = 0;
    if (::ioctl(d.fd, BLKGETSIZE64, &d.size) != 0) return ErrnoError(held.path + ": BLKGETSIZE64");
    if (::ioctl(d.fd, BLKSSZGET, &sector) != 0) return ErrnoError(held.path + ": BLKSSZGET");
    d.sector = static_cast<uint32_t>(sector);
  } else {
    d.size = static_cast<uint64_t>(d.st.st_size);
  }
  return d;
}

}  // namespace

std::vector<PartitionInUse> PartitionsInUse(const struct stat& st, bool claimed_by_caller) {
  std::vector<PartitionInUse> out;
  if (!S_ISBLK(st.st_mode)) return out;
  for (const io::KernelPartition& k : io::KernelPartitionsOf(st.st_rdev)) {
    io::BlockUse use = io::UseOfBlockDevice(k.dev);
    if (claimed_by_caller) use.busy = false;  // our own claim of the disk
    if (use.in_use()) out.push_back({k, use});
  }
  return out;
}

Status CheckPartitionsInUseKept(const std::string& path, const std::vector<PartitionInUse>& in_use, const Table& t) {
  for (const auto& [k, use] : in_use) {
    bool kept = false;
    for (const Partition& p : t.partitions) {
      kept |= p.number == k.number && p.start * (t.sector_size / 512) == k.start &&
              p.size * (t.sector_size / 512) == k.size;
    }
    if (!kept) {
      return Busy(fmt::format("{}: {} is in use ({}) and the new table would move, resize or drop partition {}; "
                              "refused even with --force", path, use.device, use.Why(), k.number));
    }
  }
  return Status::Ok();
}

Result<PartitionOutcome> ApplyTable(const OpenDisk& d, const Table& table, bool dry_run,
                                    std::chrono::milliseconds kernel_wait, const ApproveFn& approve) {
  PartitionOutcome out;
  out.table = table;
  out.block_device = d.block;
  lp::FdBlockIo disk(d.fd, d.path, 0, d.size, !dry_run);
  auto old = ReadTable(disk, table.sector_size, &out.notes);
  if (old.ok()) out.old = *old;
  else out.old_problem = old.status().ToString();
  if (approve) FP_RETURN_IF_ERROR(approve(out));
  if (dry_run) return out;

  const auto start = Clock::now();
  FP_RETURN_IF_ERROR(WriteGpt(disk, out.table));
  out.write_took = std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - start);
  if (!d.block) {
    for (const io::BlockUse& l : io::LoopDevicesBackedBy(FileIdOf(d.st))) {
      out.notes.push_back(fmt::format("{} over this file still has the old partitions (blockdev --rereadpt {}, "
                                      "or detach and attach it with losetup -P)", l.device, l.device));
    }
    return out;
  }
  FP_ASSIGN_OR_RETURN(out.kernel, UpdateKernelPartitions(d.kernel_fd, d.path, d.st.st_rdev, out.table, kernel_wait));
  return out;
}

Result<PartitionOutcome> ChangeHeldDiskTable(const HeldDisk& held, std::span<const uint8_t> source,
                                             std::string_view source_name, const HeldChangeOptions& options) {
  UniqueFd owned;
  FP_ASSIGN_OR_RETURN(OpenDisk d, OpenHeld(held, &owned));
  const std::vector<PartitionInUse> in_use = PartitionsInUse(d.st, held.claimed);
  auto table = TableFromSource(source, {.size = d.size, .sector_size = d.sector});
  if (!table.ok()) return table.status().WithContext(source_name);  // the cause first: it must fit a FAIL
  FP_RETURN_IF_ERROR(CheckPartitionsInUseKept(d.path, in_use, *table));
  return ApplyTable(d, *table, options.dry_run, options.kernel_wait, options.approve);
}

}  // namespace flashpipe::partition
