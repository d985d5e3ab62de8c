// An SVG chart of transfer-test results: throughput (MiB/s, linear y) against
// request size (log x), one line per (direction, mode). Colour says the mode,
// a solid line is a write and a dashed one a read; each line is labelled at
// its right end (labels pushed apart so they never overlap), so the chart
// reads without a legend hunt. Self-contained SVG 1.1, no scripts or fonts.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "bench/transfer.h"

namespace flashpipe::bench {

std::string RenderPlotSvg(const std::vector<TransferResult>& results, std::string_view title);

}  // namespace flashpipe::bench
