// flashpipe read [options] SOURCE OUTPUT
// Reads a block device, a file or a GPT partition by name into an image
// (raw, sparse, zstd, xz, gzip) and a bmap; see src/output/read_job.h.
#include <unistd.h>

#include <cstdio>

#include "base/units.h"
#include "output/read_job.h"
#include "tools/commands.h"
#include "tools/flags.h"
#include "tools/interrupt.h"
#include "tools/progress_flag.h"

namespace flashpipe::tools {
namespace {

struct Flags {
  std::string offset, length, format, max_size, json, progress = "auto";
  int level = -1;
  unsigned threads = 0;
  WriterFlags io;
  bool no_progress = false;
};

void AddFlags(CLI::App& app, output::ReadRequest& r, Flags& f) {
  app.add_option("SOURCE", r.source.spec, "a block device, a file, or DEVICE:NAME (the GPT partition NAME)")
      ->required();
  app.add_option("OUTPUT", r.output, "the image to write, - for stdout")->required();
  app.add_option("--offset", f.offset, "start this far into SOURCE (K/M/G suffixes; a multiple of its logical block)");
  app.add_option("--length", f.length, "read this much (default: to the end); a shorter SOURCE is an error");
  app.add_option("--format", f.format,
                 "raw, sparse, zstd, xz or gzip (default: from OUTPUT's suffix .simg/.sparse, .zst, .xz, .gz; else raw)");
  app.add_flag("--dont-care-zeros", r.sparse.dont_care_zeros,
               "sparse: zero runs as DONT_CARE, not FILL 0 (smaller; the device keeps what it had there)");
  app.add_option("--max-size", f.max_size, "sparse: parts OUTPUT.0, OUTPUT.1, ... of at most SIZE, as resparse cuts");
  app.add_option("--level", f.level, "compression level (default: zstd 3, xz 3, gzip 6)");
  app.add_option("--threads", f.threads, "compression threads for zstd and xz (default: all processors)");
  app.add_option("--bmap", r.bmap, "also write a bmap (bmaptool format 2.0) of the image to FILE");
  app.add_flag("--zeros-unmapped", r.zeros_unmapped,
               "bmap: leave out a file's allocated blocks that hold only zeros (default: mapped, as bmaptool create)");
  app.add_flag("--verify", r.verify, "read SOURCE again and compare it with the output decoded back");
  app.add_flag("--force", r.source.force, "read a block device another program holds exclusively");
  AddWriterFlags(app, f.io);
  AddJsonFlag(app, f.json, "the report");
  AddProgressFlags(app, f.progress, f.no_progress);
  app.footer("Every output is written to a temporary file beside it and renamed into place once complete (and verified):\n"
             "a failure, SIGINT or SIGTERM leaves no output behind.");
}

Status ApplyFlags(const Flags& f, output::ReadRequest& r) {
  auto size = [](const std::string& text, const char* flag, uint64_t* out) -> Status {
    if (text.empty()) return Status::Ok();
    auto v = ParseSize(text);
    if (!v.ok()) return v.status().WithContext(flag);
    *out = *v;
    return Status::Ok();
  };
  FP_RETURN_IF_ERROR(size(f.offset, "--offset", &r.source.offset));
  uint64_t length = 0;
  FP_RETURN_IF_ERROR(size(f.length, "--length", &length));
  if (!f.length.empty()) r.source.length = length;
  FP_RETURN_IF_ERROR(size(f.max_size, "--max-size", &r.max_size));
  if (!f.format.empty()) {
    FP_ASSIGN_OR_RETURN(r.format, output::ParseFormat(f.format));
  }
  r.compress.level = f.level;
  r.compress.threads = f.threads;
  FP_ASSIGN_OR_RETURN(WriterSettings w, ParseWriterFlags(f.io));
  r.queue = {w.backend, w.queue_depth, w.request_size};
  if (f.json == "-" && r.output == "-") return InvalidArgument("the image and --json cannot both go to stdout: use --json=FILE");
  // SOURCE may be DEVICE:PARTNAME: the device (or disk image) is an input too.
  const std::string device = r.source.spec.substr(0, r.source.spec.rfind(':'));
  FP_RETURN_IF_ERROR(CheckJsonFile(f.json, {r.source.spec, device, r.output, r.bmap}));
  return output::CheckReadRequest(r);
}

// "done: /dev/sdb -> sd.img (raw) in 3.1 s: 2.5 GiB read (812.4 MiB/s): 1.0 GiB data, 1.4 GiB zeros,
// 100.0 MiB holes; 1.0 GiB out; verified"
void Summary(const output::ReadReport& r) {
  double read_s = r.phases.read.value_or(r.seconds);
  double mib_s = read_s > 0 ? static_cast<double>(r.length) / read_s / (1 << 20) : 0;
  std::string out = r.parts.empty() ? r.output : fmt::format("{} parts {}.0..{}", r.parts.size(), r.output, r.parts.size() - 1);
  std::fprintf(stderr, "flashpipe read: done: %s -> %s (%s) in %.1f s: %s read (%.1f MiB/s): %s data, %s zeros, "
               "%s holes; %s out%s\n", r.source.c_str(), out.c_str(), r.format.c_str(), r.seconds,
               FormatBytes(r.length).c_str(), mib_s, FormatBytes(r.scan.data_bytes).c_str(),
               FormatBytes(r.scan.zero_bytes).c_str(), FormatBytes(r.scan.hole_bytes).c_str(),
               FormatBytes(r.output_bytes).c_str(), r.verify == input::VerifyOutcome::kPassed ? "; verified" : "");
}

}  // namespace

int RunRead(int argc, char** argv) {
  CLI::App app{"Read a block device, a file or a GPT partition into an image (raw, sparse, zstd, xz, gzip) and a bmap,\n"
               "with O_DIRECT reads at queue depth",
               CommandName(argv[0])};
  output::ReadRequest request;
  Flags flags;
  AddFlags(app, request, flags);
  if (auto code = ParseOrExit(app, argc, argv, /*interruptible=*/true)) return *code;
  if (Status s = ApplyFlags(flags, request); !s.ok()) return UsageError(app, s);
  auto mode = ParseProgressFlags(flags.progress, flags.no_progress, flags.json);
  if (!mode.ok()) return UsageError(app, mode.status());
  if (*mode == input::ProgressMode::kJson && request.output == "-") {
    return UsageError(app, InvalidArgument("the image and --progress json cannot both go to stdout"));
  }
  request.cancel = CancelOnSignals();
  input::Progress progress(stderr, *mode, "flashpipe read");
  auto warn = [&](const std::string& w) { progress.Note("warning: " + w); };
  output::ReadReport report = output::RunRead(request, &progress, warn);
  Status st = report.status;
  progress.Event("report", "\"report\": " + output::ReadReportJson(report));
  if (!flags.json.empty()) {
    Status js = WriteJson(flags.json, output::ReadReportJson(report));
    if (st.ok()) st = js;
  }
  if (report.status.ok()) Summary(report);
  return ExitWith("read", st);
}

}  // namespace flashpipe::tools
