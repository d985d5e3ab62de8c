// Text, CSV and JSON for transfer-test results.
//
// FormatTransferLine prints mmc_test's line exactly (without its "mmc0: "
// prefix and ", sg_len N" suffix), with 64-bit rates:
//   Transfer of 32768 x 8 sectors (32768 x 4 KiB) took 1.234567890 seconds
//   (108755 kB/s, 106206 KiB/s, 26551.62 IOPS)          <- one line
// Sectors are 512 bytes; kB = 1000 bytes, KiB = 1024; rates and IOPS are
// truncated, not rounded, as mmc_test does; a size with half a KiB prints
// ".5" ("1 x 1 sectors (1 x 0.5 KiB)").
// The summary puts the modes side by side per direction, in MiB/s, with each
// mode's gain over blocking. CSV has one header row and quotes a field that
// holds a comma, a quote or a line break (RFC 4180: a sim: target's
// "sim:size=8G,bw=45M" stays one field); JSON is one object.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/json.h"
#include "bench/transfer.h"

namespace flashpipe::bench {

struct Rates {
  uint64_t kb_per_s = 0;    // 1000 bytes
  uint64_t kib_per_s = 0;   // 1024 bytes
  uint64_t iops_x100 = 0;   // IOPS times 100
  double mib_per_s = 0;
};
Rates RatesOf(const TransferResult& r);

std::string FormatTransferLine(const TransferResult& r);
// "Write, non-blocking (depth 2), prep copy:" -- the line before a series.
std::string FormatTestHeader(Direction d, Mode m, unsigned depth, const Prep& prep);
std::string FormatSummary(const std::vector<TransferResult>& results);

// What was measured where, for the machine-readable forms.
struct RunInfo {
  std::string target;
  std::string backend;
  std::string prep;
  uint64_t area_offset = 0;
  uint64_t area_size = 0;
  bool buffered = false;
};
std::string FormatCsv(const RunInfo& info, const std::vector<TransferResult>& results);
std::string FormatJson(const RunInfo& info, const std::vector<TransferResult>& results);
using flashpipe::JsonString;  // quoted and escaped (base/json.h)
// One CSV field: as it is, or in double quotes with quotes doubled (RFC 4180).
std::string CsvField(std::string_view s);

}  // namespace flashpipe::bench
