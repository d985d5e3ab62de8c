#include "bench/suite.h"

#include <unistd.h>

#include <algorithm>

#include "base/units.h"

namespace flashpipe::bench {
namespace {

// On a sim, what the device did during `run` (busy time, requests).
template <typename F>
Result<StudyResult> WithDeviceStats(io::IoQueue* q, F run) {
  auto* sim = dynamic_cast<SimQueue*>(q);
  const SimStats before = sim ? sim->stats() : SimStats{};
  FP_ASSIGN_OR_RETURN(StudyResult r, run());
  if (sim) {
    r.device_ns = sim->stats().busy_ns - before.busy_ns;
    r.requests = sim->stats().requests - before.requests;
  }
  return r;
}

template <typename R>
R Median(std::vector<R> runs) {
  std::sort(runs.begin(), runs.end(), [](const R& a, const R& b) { return a.ns < b.ns; });
  return runs[runs.size() / 2];
}

TransferSpec SpecFor(const BenchTarget& t, const SuiteOptions& o, const Area& area, Direction d, Mode m,
                     uint64_t size) {
  return TransferSpec{d, m, ModeDepth(m, o.queue_depth), size, area.size / size, area.offset,
                      static_cast<uint32_t>(t.geometry().mem_align), o.prep, o.cancel};
}

// One direction. For each size the modes run back to back, `repeat` rounds of
// that, so load that comes and goes on a shared machine hits every mode alike;
// the medians are printed as mmc_test series once the direction is done.
Result<std::vector<TransferResult>> RunDirection(BenchTarget& t, const SuiteOptions& o, const Area& area,
                                                 Direction d, FILE* out) {
  const bool buffered = d == Direction::kRead && o.buffered;
  std::vector<std::unique_ptr<io::IoQueue>> queues;
  for (Mode m : o.modes) {
    FP_ASSIGN_OR_RETURN(auto q, t.MakeQueue(ModeDepth(m, o.queue_depth), buffered));
    queues.push_back(std::move(q));
  }
  const bool progress = isatty(STDERR_FILENO);
  std::vector<std::vector<TransferResult>> by_mode(o.modes.size());
  for (uint64_t size : o.sizes) {
    if (progress) std::fprintf(stderr, "\r%s %s ...   ", DirectionName(d), FormatBytes(size).c_str());
    std::vector<std::vector<TransferResult>> runs(o.modes.size());
    for (unsigned round = 0; round < std::max(o.repeat, 1u); ++round) {
      for (size_t i = 0; i < o.modes.size(); ++i) {
        const TransferSpec spec = SpecFor(t, o, area, d, o.modes[i], size);
        if (buffered) t.DropCache(spec.offset, spec.request * spec.count);
        FP_ASSIGN_OR_RETURN(TransferResult r, RunTransfer(*queues[i], t.clock(), spec));
        runs[i].push_back(r);
      }
    }
    for (size_t i = 0; i < o.modes.size(); ++i) by_mode[i].push_back(Median(runs[i]));
  }
  if (progress) std::fprintf(stderr, "\r%30s\r", "");
  std::vector<TransferResult> results;
  for (size_t i = 0; i < o.modes.size(); ++i) {
    const Mode m = o.modes[i];
    std::fprintf(out, "%s\n", FormatTestHeader(d, m, ModeDepth(m, o.queue_depth), o.prep).c_str());
    for (const TransferResult& r : by_mode[i]) std::fprintf(out, "%s\n", FormatTransferLine(r).c_str());
    results.insert(results.end(), by_mode[i].begin(), by_mode[i].end());
  }
  std::fflush(out);
  return results;
}

Status CheckSizes(const io::Geometry& g, const std::vector<uint64_t>& sizes, const Area& area) {
  const uint64_t align = std::max<uint64_t>(g.logical_block, 512);
  for (uint64_t s : sizes) {
    if (s == 0 || s % align != 0) {
      return InvalidArgument(fmt::format("request size {} is not a multiple of the logical block {}", s, align));
    }
    if (s > area.size) {
      return InvalidArgument(fmt::format("request size {} is larger than the test area ({})", FormatBytes(s),
                                         FormatBytes(area.size)));
    }
  }
  return Status::Ok();
}

}  // namespace

Result<Area> SuiteArea(const BenchTarget& t, const SuiteOptions& o) {
  const uint64_t largest = *std::max_element(o.sizes.begin(), o.sizes.end());
  const uint64_t align = std::max<uint64_t>(t.geometry().offset_align, 4096);
  Area a = ChooseArea(t.geometry().size, std::max(o.total, largest), align, t.created_file(), largest);
  FP_RETURN_IF_ERROR(CheckSizes(t.geometry(), o.sizes, a));
  return a;
}

Result<SuiteReport> RunTransferSuite(BenchTarget& t, const SuiteOptions& o, const Area& area, FILE* out) {
  SuiteReport rep;
  rep.area = area;
  if (o.buffered && std::find(o.directions.begin(), o.directions.end(), Direction::kRead) != o.directions.end()) {
    std::fprintf(out, "buffered reads; %s\n", t.ReadAheadInfo().c_str());
  }
  for (Direction d : o.directions) {
    FP_ASSIGN_OR_RETURN(auto results, RunDirection(t, o, area, d, out));
    rep.results.insert(rep.results.end(), results.begin(), results.end());
  }
  rep.info = RunInfo{t.name(), t.backend_name(), PrepName(o.prep), area.offset, area.size, o.buffered};
  return rep;
}

Result<Area> StudyArea(const BenchTarget& t, const ImageSummary& image) {
  const io::Geometry& g = t.geometry();
  if (image.image_size > g.size) {
    return NoSpace(fmt::format("{}: the image expands to {}, the target holds {}", t.name(),
                               FormatBytes(image.image_size), FormatBytes(g.size)));
  }
  Area a = ChooseArea(g.size, image.image_size, std::max<uint64_t>(g.offset_align, 4096), t.created_file());
  if (a.offset + image.image_size > g.size) a.offset = 0;
  a.size = image.image_size;
  return a;
}

Result<std::vector<StudyResult>> RunSparseStudy(BenchTarget& t, const ImageSummary& image,
                                                const StudyOptions& o, const Area& area, FILE* out) {
  StudyVariant pipelined;
  pipelined.pipelined = true;
  std::vector<StudyVariant> variants = o.variants;
  variants.push_back(pipelined);
  io::WriterOptions wo;
  wo.queue_depth = o.queue_depth;
  wo.request_size = o.request_size;
  wo.cancel = o.cancel;
  std::vector<StudyResult> results;
  for (const StudyVariant& v : variants) {
    std::fprintf(out, "running %s ...\n", VariantLabel(v).c_str());
    std::fflush(out);
    // The bootloader model never has two requests in flight.
    FP_ASSIGN_OR_RETURN(auto queue, t.MakeQueue(v.pipelined ? o.queue_depth : 1));
    io::Device dev = t.target() ? io::DeviceFor(*t.target(), queue.get())
                                : io::Device{t.name(), queue.get(), t.geometry()};
    dev.window_offset = area.offset;
    dev.window_size = area.size;
    dev.reads_zero = false;  // earlier runs wrote the area: zero ranges must be zeroed
    std::vector<StudyResult> runs;
    for (unsigned i = 0; i < std::max(o.repeat, 1u); ++i) {
      FP_ASSIGN_OR_RETURN(StudyResult r, WithDeviceStats(queue.get(), [&] {
        return RunVariant(o.image, image, v, dev, wo, t.clock());
      }));
      runs.push_back(r);
    }
    results.push_back(Median(runs));
  }
  return results;
}

}  // namespace flashpipe::bench
