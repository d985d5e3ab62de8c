// The bounce-buffer study's results for machines (flashpipe bench --sparse
// with --csv, --json, --plot), beside the text lines of FormatStudyLine:
//   CSV   one header row, then one row per variant in the order run;
//         fields quoted as in FormatCsv (RFC 4180)
//   JSON  one object: where and what was written (target, image and its
//         summary, area) and "results", one object per variant
//   SVG   one bar per variant, length = MB/s of the image's data, labelled
//         with the time and the ratio to the fastest
// Rates are MB/s (10^6 bytes) of RAW + FILL bytes, as in the text lines;
// x_fastest is the variant's time over the fastest one's (1 = fastest).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "bench/bounce_study.h"

namespace flashpipe::bench {

struct StudyInfo {
  std::string target;    // BenchTarget::name()
  std::string image;     // path as given
  ImageSummary summary;
  uint64_t area_offset = 0;
  uint64_t area_size = 0;
  uint32_t logical_block = 0;
  unsigned queue_depth = 0;  // of the pipelined engine
};

std::string FormatStudyCsv(const StudyInfo& info, const std::vector<StudyResult>& results);
std::string FormatStudyJson(const StudyInfo& info, const std::vector<StudyResult>& results);
std::string RenderStudySvg(const std::vector<StudyResult>& results, std::string_view title);

}  // namespace flashpipe::bench
