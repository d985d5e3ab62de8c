// flashpipe bench TARGET                      transfer tests (mmc_test 37-40 generalised)
// flashpipe bench --sparse IMAGE TARGET       the bounce-buffer study
// TARGET: a block device, a path to create (and remove), or sim:size=..,bw=..,cmd_us=..
// The model, the safety rules and the output are described in docs/bench.md.
#include <algorithm>
#include <cstdio>

#include "base/atomic_file.h"
#include "base/fd_io.h"
#include "base/file_id.h"
#include "base/units.h"
#include "bench/plot.h"
#include "bench/study_report.h"
#include "bench/suite.h"
#include "tools/commands.h"
#include "tools/flags.h"
#include "tools/interrupt.h"

namespace flashpipe::tools {
namespace {

using namespace flashpipe::bench;

struct Flags {
  std::string target, sizes = kDefaultSizes, total = "128M", modes = "blocking,non-blocking,queued";
  std::string tests = "write,read", prep = "copy", csv, json, plot, sparse;
  std::string buffer_blocks = "100,16384,chunk";
  WriterFlags writer;
  WriterSettings io;  // parsed from writer
  const CancelFlag* cancel = nullptr;
  unsigned repeat = 1;
  bool buffered = false, force = false;
};

void AddFlags(CLI::App& app, Flags& f) {
  app.add_option("TARGET", f.target, "block device, path of a file to create and remove, or sim:size=8G,bw=45M,cmd_us=300")
      ->required();
  app.add_option("--sizes", f.sizes, "request sizes (default 4k..512k, 1M, 4M)");
  app.add_option("--total", f.total, "bytes per request size (default 128M, at most half the device)");
  app.add_option("--modes", f.modes, "blocking,non-blocking,queued");
  app.add_option("--tests", f.tests, "write,read (reads read back the area the writes wrote)");
  app.add_option("--prep", f.prep, "host work per request: copy, crc, none, spin:MICROSECONDS (default copy)");
  AddWriterFlags(app, f.writer);
  app.add_flag("--buffered", f.buffered, "reads through the page cache (prints the read-ahead)");
  app.add_flag("--force", f.force, "write even where a filesystem or partition table is found");
  app.add_option("--repeat", f.repeat, "run each measurement N times, report the median");
  app.add_option("--csv", f.csv, "write results as CSV to FILE (- = stdout), also for --sparse");
  AddJsonFlag(app, f.json, "results (also of --sparse)");
  app.add_option("--plot", f.plot,
                 "write an SVG chart to FILE: throughput vs request size, or with --sparse one bar per variant");
  app.add_option("--sparse", f.sparse, "bounce-buffer study: write this sparse image instead");
  app.add_option("--buffer-blocks", f.buffer_blocks, "bounce buffer sizes in logical blocks, or chunk");
}

// An input is never an output: --csv, --json and --plot name neither the
// target nor the image, nor each other; only one of them may be stdout.
Status CheckOutputs(const Flags& f) {
  struct Named { const char* flag; const std::string& path; };
  const Named outputs[] = {{"--csv", f.csv}, {"--json", f.json}, {"--plot", f.plot}};
  const Named inputs[] = {{"TARGET", f.target}, {"--sparse", f.sparse}};
  for (size_t i = 0; i < std::size(outputs); ++i) {
    const Named& o = outputs[i];
    if (o.path.empty()) continue;
    for (size_t j = i + 1; j < std::size(outputs); ++j) {
      if (o.path == outputs[j].path) {
        return InvalidArgument(fmt::format("{} and {} both write to {}", o.flag, outputs[j].flag, o.path));
      }
    }
    if (o.path == "-") continue;
    FP_ASSIGN_OR_RETURN(auto out_id, FileIdOfPath(o.path));
    for (const Named& in : inputs) {
      if (in.path.empty() || in.path.starts_with("sim:")) continue;
      FP_ASSIGN_OR_RETURN(auto in_id, FileIdOfPath(in.path));
      if (o.path == in.path || (out_id && in_id && *out_id == *in_id)) {
        return InvalidArgument(fmt::format("{} {} is the {}: an input is never an output", o.flag, o.path, in.flag));
      }
    }
  }
  return Status::Ok();
}

Result<SuiteOptions> ParseSuite(const Flags& f) {
  SuiteOptions o;
  // --request-size is one request size: the transfer tests run just that one.
  if (f.io.request_size != 0) {
    if (f.sizes != kDefaultSizes) return InvalidArgument("give --sizes or --request-size, not both");
    o.sizes = {f.io.request_size};
  } else {
    FP_ASSIGN_OR_RETURN(o.sizes, ParseSizeList(f.sizes));
  }
  FP_ASSIGN_OR_RETURN(o.total, ParseSize(f.total));
  FP_ASSIGN_OR_RETURN(o.modes, ParseModes(f.modes));
  FP_ASSIGN_OR_RETURN(o.directions, ParseDirections(f.tests));
  FP_ASSIGN_OR_RETURN(o.prep, ParsePrep(f.prep));
  o.queue_depth = f.io.queue_depth;
  o.buffered = f.buffered;
  o.repeat = f.repeat;
  o.cancel = f.cancel;
  return o;
}

Result<std::unique_ptr<BenchTarget>> OpenTarget(const Flags& f, bool destructive, uint64_t new_file_size) {
  BenchTargetOptions to;
  to.force = f.force;
  to.destructive = destructive;
  to.buffered_reads = f.buffered;
  to.new_file_size = new_file_size;
  to.backend = f.io.backend;
  return BenchTarget::Open(f.target, to);
}

void PrintArea(FILE* out, const BenchTarget& t, const Area& a, const char* what) {
  std::fprintf(out, "target: %s\n", t.Describe().c_str());
  std::fprintf(out, "area:   offset %llu (%s) .. %llu, %s, %s\n", (unsigned long long)a.offset,
               FormatBytes(a.offset).c_str(), (unsigned long long)(a.offset + a.size), FormatBytes(a.size).c_str(),
               what);
  std::fflush(out);
}

Status Transfer(const Flags& f, FILE* out) {
  FP_ASSIGN_OR_RETURN(SuiteOptions o, ParseSuite(f));
  const bool writes = std::find(o.directions.begin(), o.directions.end(), Direction::kWrite) != o.directions.end();
  const uint64_t largest = *std::max_element(o.sizes.begin(), o.sizes.end());
  FP_ASSIGN_OR_RETURN(auto t, OpenTarget(f, writes, std::max(o.total, largest)));
  FP_ASSIGN_OR_RETURN(Area area, SuiteArea(*t, o));
  PrintArea(out, *t, area, writes ? "overwritten by the write tests" : "read only");
  std::fprintf(out, "%s per request size, prep %s, backend %s\n\n", FormatBytes(area.size).c_str(),
               PrepName(o.prep).c_str(), f.writer.backend.c_str());
  FP_ASSIGN_OR_RETURN(SuiteReport rep, RunTransferSuite(*t, o, area, out));
  std::fprintf(out, "\n%s", FormatSummary(rep.results).c_str());
  if (!f.csv.empty()) FP_RETURN_IF_ERROR(WriteText(f.csv, FormatCsv(rep.info, rep.results)));
  if (!f.json.empty()) FP_RETURN_IF_ERROR(WriteJson(f.json, FormatJson(rep.info, rep.results)));
  if (!f.plot.empty()) {
    const std::string title = fmt::format("flashpipe bench {} ({}, prep {})", t->name(), rep.info.backend,
                                          rep.info.prep);
    FP_RETURN_IF_ERROR(WriteText(f.plot, RenderPlotSvg(rep.results, title)));
  }
  return Status::Ok();
}

Status Study(const Flags& f, FILE* out) {
  StudyOptions o;
  o.image = f.sparse;
  FP_ASSIGN_OR_RETURN(o.variants, ParseBufferBlocks(f.buffer_blocks));
  o.queue_depth = f.io.queue_depth;
  o.request_size = f.io.request_size;
  o.repeat = f.repeat;
  o.cancel = f.cancel;
  FP_ASSIGN_OR_RETURN(ImageSummary img, SummarizeSparse(f.sparse));
  FP_ASSIGN_OR_RETURN(auto t, OpenTarget(f, true, img.image_size));
  FP_ASSIGN_OR_RETURN(Area area, StudyArea(*t, img));
  PrintArea(out, *t, area, "overwritten by the study");
  std::fprintf(out, "image:  %s, %s expanded: RAW %s, FILL %s (zeros %s), DONT_CARE %s, %llu chunks, largest RAW %s\n",
               f.sparse.c_str(), FormatBytes(img.image_size).c_str(), FormatBytes(img.raw_bytes).c_str(),
               FormatBytes(img.fill_bytes).c_str(), FormatBytes(img.zero_fill_bytes).c_str(),
               FormatBytes(img.skip_bytes).c_str(), (unsigned long long)img.chunks, FormatBytes(img.largest_raw).c_str());
  std::fprintf(out, "logical block %u; bounce variants write blocking, pipelined runs at depth %u\n\n",
               t->geometry().logical_block, o.queue_depth);
  FP_ASSIGN_OR_RETURN(auto results, RunSparseStudy(*t, img, o, area, out));
  uint64_t fastest = UINT64_MAX;
  for (const auto& r : results) fastest = std::min(fastest, r.ns);
  std::fprintf(out, "\n");
  for (const auto& r : results) std::fprintf(out, "%s\n", FormatStudyLine(r, fastest).c_str());
  const StudyInfo info{t->name(), f.sparse, img, area.offset, area.size, t->geometry().logical_block, o.queue_depth};
  if (!f.csv.empty()) FP_RETURN_IF_ERROR(WriteText(f.csv, FormatStudyCsv(info, results)));
  if (!f.json.empty()) FP_RETURN_IF_ERROR(WriteJson(f.json, FormatStudyJson(info, results)));
  if (!f.plot.empty()) {
    const std::string title = fmt::format("flashpipe bench --sparse {} {}", f.sparse, t->name());
    FP_RETURN_IF_ERROR(WriteText(f.plot, RenderStudySvg(results, title)));
  }
  return Status::Ok();
}

}  // namespace

int RunBench(int argc, char** argv) {
  CLI::App app{"mmc_test-style transfer tests, and the bounce-buffer study (--sparse IMAGE)", CommandName(argv[0])};
  Flags f;
  AddFlags(app, f);
  app.footer("SIGINT or SIGTERM stops at the next request; a file the run created is removed.");
  if (auto code = ParseOrExit(app, argc, argv, /*interruptible=*/true)) return *code;
  auto io = ParseWriterFlags(f.writer);
  if (!io.ok()) return UsageError(app, io.status());
  f.io = *io;
  if (f.io.queue_depth == 0) f.io.queue_depth = 4;
  if (Status s = CheckOutputs(f); !s.ok()) {
    return s.code() == Code::kInvalidArgument ? UsageError(app, s) : ExitWith("bench", s);
  }
  f.cancel = CancelOnSignals();  // the target's destructor then removes a file it created
  // Machine-readable output on stdout moves the human text to stderr.
  FILE* out = (f.csv == "-" || f.json == "-" || f.plot == "-") ? stderr : stdout;
  return ExitWith("bench", f.sparse.empty() ? Transfer(f, out) : Study(f, out));
}

}  // namespace flashpipe::tools
