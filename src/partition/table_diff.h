// What changed from one table to the next, in a few words for a person
// (serve's INFO lines after `flash gpt` / `oem format`).
//
//   for (const std::string& line : DescribeChanges(old, new)) SendInfo(line);
//
// Partitions are matched by name (unnamed ones by entry number): "added
// system 4 GiB", "removed cache", "resized userdata 1 GiB -> 2 GiB", "moved
// boot" (same size, another start), then "N unchanged" when some were.
// No old table: every partition is added. The same table: "no change".
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "partition/layout.h"

namespace flashpipe::partition {

std::vector<std::string> DescribeChanges(const std::optional<Table>& old, const Table& now);

}  // namespace flashpipe::partition
