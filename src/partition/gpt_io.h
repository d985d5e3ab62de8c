// A Table read from and written to a disk (an lp::BlockIo: a file or block
// device through lp::FdBlockIo, or a test double).
//
// WriteGpt's order, so that a power cut at any point leaves the old table,
// the new one, or no valid table (io/gpt.h's reader, the kernel's efi.c and
// sgdisk all read the primary copy first and fall back to the backup only
// when the primary header or its entries fail their CRC):
//
//   1. backup entry array (before the last LBA)      flush
//   2. backup header (the last LBA)                  flush
//   3. protective MBR (LBA 0), primary entries (LBA 2..)  flush
//   4. primary header (LBA 1)                        flush
//
// Until step 3 lands the old primary (if it was valid) still validates
// against its own entries and is what every reader takes: old table. Once
// step 3 has touched the primary entries, the old primary header's entry
// CRC fails and readers fall back to the backup, which steps 1-2 made new
// (flushed before step 3 began): new table. Step 4 makes the primary new.
// A header validates only over the entries it was written with (their CRC
// is inside the header's own CRC), so no prefix and no torn write can pair
// an old header with new entries or the reverse; a cut inside steps 1-2
// when the old primary was already invalid leaves no valid table, which
// the readers report. Tested by replaying every prefix of the recorded
// writes, with the last one torn at every sector (gpt_io_test.cc).
//
// Nothing outside the four areas is written: an old backup header at
// another LBA (the disk grew) is left as it is; no reader looks there once
// the primary says where the backup is.
//
// After the last flush the table is read back through io/gpt.h and
// compared with what was asked; a difference is kMismatch.
#pragma once

#include <string>
#include <vector>

#include "base/status.h"
#include "lp/block_io.h"
#include "partition/layout.h"

namespace flashpipe::partition {

// REQUIRES: CheckTable(table).ok() and table.disk_lbas * sector_size <= disk.size().
Status WriteGpt(lp::BlockIo& disk, const Table& table);

// The table on `disk`, primary or backup (sector_size 0: 512, then 4096).
// Warnings (a bad backup, the primary unusable) go to *warnings.
Result<Table> ReadTable(lp::BlockIo& disk, uint32_t sector_size, std::vector<std::string>* warnings = nullptr);

}  // namespace flashpipe::partition
