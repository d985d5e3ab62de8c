// An SVG chart of transfer-test results: throughput (MiB/s, linear y) against
// request size (log x), one line per (direction, mode). Colour says the mode,
// a solid line is a write and a dashed one a read; each line is labelled at
// its right end (labels pushed apart so they never overlap), so the chart
// reads without a legend hunt. Self-contained SVG 1.1, no scripts or fonts.
// RenderBarsSvg draws the study's variants as bars.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "bench/transfer.h"

namespace flashpipe::bench {

std::string RenderPlotSvg(const std::vector<TransferResult>& results, std::string_view title);

// A horizontal bar chart (the bounce study): one bar per entry, top to bottom
// in the order given, its length proportional to `value` on a linear axis
// from 0, `label` left of it and `text` right of it; a highlighted bar (the
// engine) has its own colour. Same SVG rules as above.
struct Bar {
  std::string label;
  double value = 0;
  std::string text;
  bool highlight = false;
};
std::string RenderBarsSvg(const std::vector<Bar>& bars, std::string_view title, std::string_view axis_title);

}  // namespace flashpipe::bench
