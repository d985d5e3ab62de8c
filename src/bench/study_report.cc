#include "bench/study_report.h"

#include <algorithm>

#include "base/json.h"
#include "bench/plot.h"
#include "bench/report.h"

namespace flashpipe::bench {
namespace {

double Seconds(const StudyResult& r) { return double(r.ns) / 1e9; }
double MBPerS(const StudyResult& r) { return r.ns ? double(r.data_bytes) * 1e3 / double(r.ns) : 0; }

uint64_t Fastest(const std::vector<StudyResult>& rs) {
  uint64_t fastest = UINT64_MAX;
  for (const auto& r : rs) fastest = std::min(fastest, std::max<uint64_t>(r.ns, 1));
  return fastest;
}

double XFastest(const StudyResult& r, uint64_t fastest) {
  return double(std::max<uint64_t>(r.ns, 1)) / double(fastest);
}

}  // namespace

std::string FormatStudyCsv(const StudyInfo& info, const std::vector<StudyResult>& results) {
  std::string out =
      "target,image,variant,buffer_blocks,chunk,pipelined,ns,data_bytes,requests,device_ns,MB_per_s,x_fastest\n";
  const uint64_t fastest = Fastest(results);
  for (const auto& r : results) {
    out += fmt::format("{},{},{},{},{},{},{},{},{},{},{:.3f},{:.3f}\n", CsvField(info.target), CsvField(info.image),
                       CsvField(VariantLabel(r.variant)), r.variant.buffer_blocks, r.variant.chunk,
                       r.variant.pipelined, r.ns, r.data_bytes, r.requests, r.device_ns, MBPerS(r),
                       XFastest(r, fastest));
  }
  return out;
}

std::string FormatStudyJson(const StudyInfo& info, const std::vector<StudyResult>& results) {
  const ImageSummary& s = info.summary;
  std::string out = fmt::format(
      "{{{}, \"target\": {}, \"image\": {}, \"image_size\": {}, \"raw_bytes\": {}, \"fill_bytes\": {}, "
      "\"zero_fill_bytes\": {}, \"skip_bytes\": {}, \"chunks\": {}, \"largest_raw\": {}, \"area_offset\": {}, "
      "\"area_size\": {}, \"logical_block\": {}, \"queue_depth\": {}, \"results\": [",
      JsonSchemaMembers("bench-sparse", 1), JsonString(info.target), JsonString(info.image), s.image_size, s.raw_bytes, s.fill_bytes, s.zero_fill_bytes,
      s.skip_bytes, s.chunks, s.largest_raw, info.area_offset, info.area_size, info.logical_block,
      info.queue_depth);
  const uint64_t fastest = Fastest(results);
  for (size_t i = 0; i < results.size(); ++i) {
    const auto& r = results[i];
    out += fmt::format(
        "{}\n  {{\"variant\": {}, \"buffer_blocks\": {}, \"chunk\": {}, \"pipelined\": {}, \"ns\": {}, "
        "\"data_bytes\": {}, \"requests\": {}, \"device_ns\": {}, \"MB_per_s\": {:.3f}, \"x_fastest\": {:.3f}}}",
        i ? "," : "", JsonString(VariantLabel(r.variant)), r.variant.buffer_blocks, r.variant.chunk,
        r.variant.pipelined, r.ns, r.data_bytes, r.requests, r.device_ns, MBPerS(r), XFastest(r, fastest));
  }
  return out + "\n]}\n";
}

std::string RenderStudySvg(const std::vector<StudyResult>& results, std::string_view title) {
  const uint64_t fastest = Fastest(results);
  std::vector<Bar> bars;
  for (const auto& r : results) {
    const double x = XFastest(r, fastest);
    const std::string ratio = x <= 1.0 ? "fastest" : fmt::format("{:.2f}x", x);
    bars.push_back({VariantLabel(r.variant), MBPerS(r),
                    fmt::format("{:.1f} MB/s, {:.3f} s ({})", MBPerS(r), Seconds(r), ratio), r.variant.pipelined});
  }
  return RenderBarsSvg(bars, title, "MB/s of the image's data (RAW + FILL); one bar per way of writing it");
}

}  // namespace flashpipe::bench
