#include "partition/partition_job.h"

#include <fcntl.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/stat.h>

#include <cerrno>
#include <cctype>

#include <fmt/format.h>

#include "base/file_id.h"
#include "base/unique_fd.h"
#include "base/write_lock.h"
#include "io/device_users.h"
#include "lp/block_io.h"
#include "partition/gpt_io.h"
#include "partition/sfdisk_script.h"
#include "partition/uboot_string.h"

namespace flashpipe::partition {
namespace {


struct Opened {
  UniqueFd fd;
  struct stat st {};
  bool block = false;
  uint64_t size = 0;
  uint32_t sector = 0;  // 0 for a file: the layout's or 512
};

Result<struct stat> StatTarget(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) {
      return NotFound(fmt::format("{}: no such file or device (an image file must exist: its size is the disk's, "
                                  "e.g. truncate -s 8G {})", path, path));
    }
    return ErrnoError("cannot stat " + path);
  }
  if (!S_ISREG(st.st_mode) && !S_ISBLK(st.st_mode)) {
    return InvalidArgument(path + ": not a regular file or block device");
  }
  return st;
}

// Mounted, held or claimed, the disk or any partition; for a file, a loop
// device in use over it.
Status CheckNotInUse(const std::string& path, const struct stat& st, bool force) {
  std::string why;
  if (S_ISBLK(st.st_mode)) {
    io::BlockUse use = io::UseOfBlockDevice(st.st_rdev);
    if (use.in_use()) why = use.Why();
  } else {
    for (const io::BlockUse& l : io::LoopDevicesBackedBy(FileIdOf(st))) {
      if (l.in_use()) why = fmt::format("behind {}", l.Describe());
    }
  }
  if (why.empty() || force) return Status::Ok();
  return Busy(fmt::format("{}: in use ({}); unmount it or stop what holds it, or --force to write the table anyway "
                          "(partitions in use must keep their place)", path, why));
}

Result<Opened> Open(const std::string& path, bool writable, bool force) {
  Opened o;
  FP_ASSIGN_OR_RETURN(o.st, StatTarget(path));
  o.block = S_ISBLK(o.st.st_mode);
  int flags = (writable ? O_RDWR : O_RDONLY) | O_CLOEXEC;
  int fd = ::open(path.c_str(), flags | (o.block && writable ? O_EXCL : 0));
  if (fd < 0 && errno == EBUSY && force) fd = ::open(path.c_str(), flags);
  if (fd < 0 && errno == EBUSY) {
    return Busy(fmt::format("{}: in use (opened exclusively by another program); --force to write anyway", path));
  }
  if (fd < 0) return ErrnoError("cannot open " + path);
  o.fd = UniqueFd(fd);
  if (writable) FP_RETURN_IF_ERROR(LockForWriting(o.fd.get(), path));
  if (o.block) {
    int sector = 0;
    if (::ioctl(fd, BLKGETSIZE64, &o.size) != 0) return ErrnoError(path + ": BLKGETSIZE64");
    if (::ioctl(fd, BLKSSZGET, &sector) != 0) return ErrnoError(path + ": BLKSSZGET");
    o.sector = static_cast<uint32_t>(sector);
  } else {
    o.size = static_cast<uint64_t>(o.st.st_size);
  }
  return o;
}

bool LooksLikeUboot(std::string_view text) {
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.front()))) text.remove_prefix(1);
  // sfdisk lines may start with name= too; they never hold ';' outside a
  // quoted name.
  return text.starts_with("uuid_disk=") || (text.starts_with("name=") && text.find(';') != std::string_view::npos);
}

}  // namespace

Result<LayoutFormat> ParseLayoutFormat(std::string_view name) {
  if (name == "auto") return LayoutFormat::kAuto;
  if (name == "sfdisk") return LayoutFormat::kSfdisk;
  if (name == "uboot" || name == "u-boot") return LayoutFormat::kUboot;
  return InvalidArgument(fmt::format("unknown layout format '{}' (auto, sfdisk, uboot)", name));
}

Result<Layout> ParseLayout(std::string_view text, LayoutFormat format) {
  if (format == LayoutFormat::kAuto) format = LooksLikeUboot(text) ? LayoutFormat::kUboot : LayoutFormat::kSfdisk;
  return format == LayoutFormat::kUboot ? ParseUbootString(text) : ParseSfdiskScript(text);
}

Result<std::string> FormatLayout(const Table& t, LayoutFormat format, std::string_view device,
                                 std::vector<std::string>* notes) {
  if (format != LayoutFormat::kUboot) return FormatSfdiskScript(t, device);
  FP_ASSIGN_OR_RETURN(std::string text, FormatUbootString(t));
  for (const std::string& lost : UbootLost(t)) notes->push_back("the U-Boot string leaves out " + lost);
  return text + "\n";
}

Result<PartitionOutcome> WritePartitions(const PartitionRequest& r) {
  FP_ASSIGN_OR_RETURN(struct stat st, StatTarget(r.target));
  FP_RETURN_IF_ERROR(CheckNotInUse(r.target, st, r.force));
  const std::vector<PartitionInUse> in_use = PartitionsInUse(st, /*claimed_by_caller=*/false);
  auto layout = ParseLayout(r.layout, r.format);
  if (!layout.ok()) return layout.status().WithContext(r.layout_name);
  FP_ASSIGN_OR_RETURN(Opened o, Open(r.target, /*writable=*/!r.dry_run, r.force));
  if (o.sector == 0) o.sector = layout->sector_size.value_or(512);
  auto table = Resolve(*layout, {.size = o.size, .sector_size = o.sector});
  if (!table.ok()) return table.status().WithContext(fmt::format("{} on {}", r.layout_name, r.target));
  FP_RETURN_IF_ERROR(CheckPartitionsInUseKept(r.target, in_use, *table));
  OpenDisk disk{.path = r.target, .fd = o.fd.get(), .kernel_fd = o.fd.get(), .st = o.st, .block = o.block,
                .size = o.size, .sector = o.sector};
  return ApplyTable(disk, *table, r.dry_run, r.kernel_wait);
}

Result<std::string> DumpPartitions(const std::string& target, LayoutFormat format, std::vector<std::string>* notes) {
  FP_ASSIGN_OR_RETURN(Opened o, Open(target, /*writable=*/false, false));
  lp::FdBlockIo disk(o.fd.get(), target, 0, o.size, false);
  FP_ASSIGN_OR_RETURN(Table t, ReadTable(disk, o.sector, notes));
  return FormatLayout(t, format, target, notes);
}

}  // namespace flashpipe::partition
