// What a new table comes as, turned into a Table for one disk: a layout
// text (an sfdisk script or a U-Boot $partitions string) or a GPT image
// (what U-Boot's `gpt` pseudo-partition and fastbootd take: a protective
// MBR, the primary header at LBA 1 and its entries; a whole disk image made
// by sgdisk on a file is one too).
//
//   FP_ASSIGN_OR_RETURN(Table t, TableFromSource(bytes, {.size = disk_bytes, .sector_size = 512}));
//
// A GPT image is recognised by "EFI PART" at byte 512 (or 4096 for a
// 4096-byte sector); its primary header and entries must pass their CRCs
// (io/gpt.h; bytes past the image read as zeros, so a backup is not
// needed). Its sector size must be the disk's. The partitions, GUIDs,
// names and attributes are kept; the usable range is the disk's (as U-Boot
// places the backup at the disk's end): a partition past it is refused.
// Anything else must be text (no NUL, no control bytes but tab, CR, LF) and
// is parsed as partition_job.h's ParseLayout (format detected) and
// resolved (layout.h). Garbage is "neither a GPT image nor a layout text";
// the caller names the source.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

#include "base/status.h"
#include "partition/layout.h"

namespace flashpipe::partition {

bool LooksLikeGptImage(std::span<const uint8_t> bytes);
// disk.sector_size 0: a file; the layout's sector-size or 512 (a GPT image: its own).
Result<Table> TableFromSource(std::span<const uint8_t> bytes, Disk disk);

}  // namespace flashpipe::partition
