// A new table on a disk: the checks every writer of a table shares, and the
// writes themselves, for `flashpipe partition` (partition_job.h, which opens
// the target) and for `serve` (which holds its storage open already: a
// HeldDisk).
//
//   FP_ASSIGN_OR_RETURN(PartitionOutcome o,
//                       ChangeHeldDiskTable({.path = "/dev/loop0", .claim_fd = fd}, bytes, "gpt", {}));
//
// Partitions in use: a partition of a block device that is mounted, held
// (device mapper, md) or opened exclusively must keep its number, start and
// size in the new table (its file system would be cut under it). A caller
// that holds the disk's O_EXCL claim itself (serve) makes every partition
// look opened exclusively, so for it only mounts and holders count: while
// it holds the claim nobody else can claim a partition anyway.
//
// ChangeHeldDiskTable: the source is a layout text (partition_job.h's
// ParseLayout, format detected) or a GPT image (table_source.h); it is
// resolved on the disk's size and sector size, checked (layout.h's
// CheckTable, the partitions in use), the old table read; only then is the
// table written (gpt_io.h's power-cut order) through a buffered descriptor
// of its own (the table goes through the page cache, which is where the
// kernel reads it; the holder's descriptor may be O_DIRECT), and for a
// block device the kernel told (kernel_table.h) through the holder's
// descriptor, which owns the claim BLKRRPART needs. The holder's write lock
// (base/write_lock.h) already covers the disk: none is taken here.
// `approve`, when given, sees the outcome before the first write (the old
// and the new table) and may refuse it (serve: critical partitions).
// `dry_run` stops after the checks. A refusal writes nothing.
#pragma once

#include <sys/stat.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "io/device_users.h"
#include "partition/kernel_table.h"
#include "partition/layout.h"

namespace flashpipe::partition {

struct PartitionOutcome {
  Table table;                      // what was (or would be) written
  std::optional<Table> old;         // what was there; nullopt: no valid table
  std::string old_problem;          // why there was none
  bool block_device = false;
  std::optional<KernelUpdate> kernel;
  std::chrono::microseconds write_took{0};  // the four writes, flushes, read-back
  std::vector<std::string> notes;
};

struct PartitionInUse {
  io::KernelPartition partition;
  io::BlockUse use;
};

// The kernel's partitions of the block device `st` that are in use (none
// for a file). `claimed_by_caller`: the caller holds the disk O_EXCL, so
// only mounts and holders count.
std::vector<PartitionInUse> PartitionsInUse(const struct stat& st, bool claimed_by_caller);
// Every partition in use keeps its number, start and size in `table`, or kBusy naming it.
Status CheckPartitionsInUseKept(const std::string& path, const std::vector<PartitionInUse>& in_use,
                                const Table& table);

// An open disk or image file: `fd` reads and writes the table (buffered),
// `kernel_fd` (the holder of the claim; may be fd) tells the kernel.
struct OpenDisk {
  std::string path;
  int fd = -1;
  int kernel_fd = -1;
  struct stat st {};
  bool block = false;
  uint64_t size = 0;
  uint32_t sector = 0;  // 0 for a file: the layout's or 512
};

using ApproveFn = std::function<Status(const PartitionOutcome& plan)>;

// Reads the old table into the outcome, then (unless dry_run, or `approve`
// refuses) writes `table` and tells the kernel. REQUIRES: CheckTable(table).ok(), it fits
// `disk`, and the in-use checks passed.
Result<PartitionOutcome> ApplyTable(const OpenDisk& disk, const Table& table, bool dry_run,
                                    std::chrono::milliseconds kernel_wait, const ApproveFn& approve = nullptr);

struct HeldDisk {
  std::string path;   // the disk or image file
  int claim_fd = -1;  // the holder's descriptor (O_EXCL for a block device unless it was forced)
  bool claimed = true;  // the holder has the O_EXCL claim (false: serve --force)
};
struct HeldChangeOptions {
  bool dry_run = false;
  std::chrono::milliseconds kernel_wait{10000};
  ApproveFn approve;
};
Result<PartitionOutcome> ChangeHeldDiskTable(const HeldDisk& disk, std::span<const uint8_t> source,
                                             std::string_view source_name, const HeldChangeOptions& options);

}  // namespace flashpipe::partition
