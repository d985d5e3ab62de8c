// flashpipe write [options] IMAGE TARGET...
// Writes one image (sparse, raw, parts, stdin, compressed, or raw + bmap) to
// one or more regular files or block devices at once; see src/input/write_job.h.
#include <unistd.h>

#include <cstdio>

#include "base/units.h"
#include "input/write_job.h"
#include "tools/commands.h"
#include "tools/flags.h"

namespace flashpipe::tools {
namespace {

struct Flags {
  std::string zero_mode = "auto", json;
  WriterFlags writer;
  bool verify_only = false, no_progress = false, no_crc_check = false;
};

void AddFlags(CLI::App& app, input::WriteRequest& r, Flags& f) {
  app.add_option("IMAGE", r.image, "image: a file, - for stdin, or sparse parts a.simg,b.simg")->required();
  app.add_option("TARGET", r.targets, "regular files or block devices, written at once")->required();
  app.footer(
      "Nothing is changed until every target and the image (header, size) passed their checks. A file target is\n"
      "written to a temporary file beside it and renamed over it when complete (--in-place: into the file itself);\n"
      "block devices are written in place. A target that is the image, a part, the bmap or stdin is refused.");
  app.add_option("--bmap", r.source.bmap_path, "bmaptool block map of a raw image: write only its mapped ranges");
  app.add_flag("--verify", r.writer.verify, "read every target back (O_DIRECT) and compare");
  app.add_flag("--verify-only", f.verify_only, "do not write: compare the targets with the image");
  app.add_flag("--force", r.force,
               "write to a block device even if it is mounted or in use, or to a file behind a loop device in use");
  app.add_flag("--in-place", r.in_place,
               "write existing regular files in place (default: a temporary file beside, renamed when complete)");
  app.add_flag("--first-block-last", r.writer.first_block_last, "write the first MiB only after all else succeeded");
  app.add_option("--zero-mode", f.zero_mode, "zero ranges: auto (zeroout/holes) or write (real zeros)");
  app.add_flag("--discard", r.writer.discard, "DONT_CARE ranges: BLKDISCARD on block devices");
  AddWriterFlags(app, f.writer);
  AddJsonFlag(app, f.json, "the report");
  app.add_flag("--no-progress", f.no_progress, "no progress output");
  app.add_flag("--no-crc-check", f.no_crc_check, "do not check CRC32 chunks of sparse images");
}

Status ApplyFlags(const Flags& f, input::WriteRequest& r) {
  FP_ASSIGN_OR_RETURN(r.writer.zero_mode, io::ParseZeroMode(f.zero_mode));
  FP_ASSIGN_OR_RETURN(WriterSettings w, ParseWriterFlags(f.writer));
  r.backend = w.backend;
  if (w.queue_depth != 0) r.writer.queue_depth = w.queue_depth;
  if (w.request_size != 0) r.writer.request_size = w.request_size;
  r.source.decoder.check_crc = !f.no_crc_check;
  if (f.verify_only && (r.writer.verify || r.writer.discard || r.writer.first_block_last)) {
    return InvalidArgument("--verify-only writes nothing: it cannot be combined with --verify, --discard or --first-block-last");
  }
  return Status::Ok();
}

input::ProgressMode ProgressModeFor(const Flags& f) {
  if (f.no_progress || f.json == "-") return input::ProgressMode::kOff;
  return ::isatty(STDERR_FILENO) ? input::ProgressMode::kBar : input::ProgressMode::kLines;
}

}  // namespace

int RunWrite(int argc, char** argv) {
  CLI::App app{"Write an image (sparse, raw, parts, stdin, gzip/xz/zstd/bzip2/lz4, raw + bmap) to files or block devices",
               CommandName(argv[0])};
  input::WriteRequest request;
  Flags flags;
  AddFlags(app, request, flags);
  if (auto code = ParseOrExit(app, argc, argv)) return *code;
  if (Status s = ApplyFlags(flags, request); !s.ok()) return UsageError(app, s);
  if (!flags.json.empty()) request.other_outputs.push_back({flags.json, "the --json report"});
  input::Progress progress(stderr, ProgressModeFor(flags));
  input::WriteReport report =
      flags.verify_only ? input::VerifyOnly(request, &progress) : input::RunWriteJob(request, &progress);
  Status st = report.status;
  if (!flags.json.empty() && report.other_outputs_checked) {
    Status js = WriteJson(flags.json, input::ReportJson(report));
    if (st.ok()) st = js;
  }
  return ExitWith("write", st);
}

}  // namespace flashpipe::tools
