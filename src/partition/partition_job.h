// `flashpipe partition`: a layout written to a disk or image file as a GPT,
// or the disk's table printed as a layout.
//
//   FP_ASSIGN_OR_RETURN(PartitionOutcome o, WritePartitions({.target = "/dev/loop0", .layout = text}));
//   FP_ASSIGN_OR_RETURN(std::string text, DumpPartitions("/dev/loop0", LayoutFormat::kSfdisk, &notes));
//
// WritePartitions checks everything before the first write, so a refusal
// leaves the target byte for byte as it was:
//   - the target exists (a file is never created: its size is the disk's)
//     and is a regular file or a block device;
//   - it is not in use: a block device mounted, held (device mapper, md)
//     or opened exclusively, itself or any of its partitions, or a file
//     behind a loop device in use, is refused unless `force`; with `force`
//     a partition in use is still refused when the new table would move,
//     resize or drop it (its file system would be cut under it);
//   - the layout parses (format given, or: a text starting "uuid_disk=",
//     or "name=" and holding a ';', is U-Boot's, anything else sfdisk's) and resolves on
//     the target (layout.h: it fits, no overlaps, names unique and at most
//     36 UTF-16 units); the sector size is the device's (BLKSSZGET), for a
//     file the layout's sector-size or 512.
// The in-use rules and the writes are table_change.h's, shared with serve.
// Then the table is written in the power-cut order of gpt_io.h (buffered
// writes and fdatasync, through the block device's page cache, which is
// where the kernel reads it), held with base/write_lock.h's lock and, for
// a block device, an O_EXCL claim; and for a block device the kernel is
// told (kernel_table.h) and its partition nodes waited for.
// `dry_run` stops after the checks, with the table that would be written.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "partition/kernel_table.h"
#include "partition/layout.h"
#include "partition/table_change.h"

namespace flashpipe::partition {

enum class LayoutFormat { kAuto, kSfdisk, kUboot };
// "auto", "sfdisk", "uboot" (also "u-boot").
Result<LayoutFormat> ParseLayoutFormat(std::string_view name);
Result<Layout> ParseLayout(std::string_view text, LayoutFormat format);
// The table as a layout in `format` (kAuto: sfdisk); `device` names sfdisk's
// nodes. Notes say what the U-Boot string could not carry.
Result<std::string> FormatLayout(const Table& table, LayoutFormat format, std::string_view device,
                                 std::vector<std::string>* notes);

struct PartitionRequest {
  std::string target;
  std::string layout;       // the layout's text
  std::string layout_name;  // for messages: "layout.txt", "stdin"
  LayoutFormat format = LayoutFormat::kAuto;
  bool force = false;
  bool dry_run = false;
  std::chrono::milliseconds kernel_wait{10000};
};

Result<PartitionOutcome> WritePartitions(const PartitionRequest& request);
// Warnings of the reader (a bad backup, the primary unusable) go to notes.
Result<std::string> DumpPartitions(const std::string& target, LayoutFormat format, std::vector<std::string>* notes);

}  // namespace flashpipe::partition
