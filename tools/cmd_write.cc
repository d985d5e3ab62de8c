// flashpipe write [options] IMAGE TARGET...
// Writes one image (sparse, raw, parts, stdin, compressed, or raw + bmap) to
// one or more regular files or block devices at once; see src/input/write_job.h.
#include <unistd.h>

#include <chrono>
#include <cstdio>

#include "base/units.h"
#include "input/write_job.h"
#include "partition/kernel_table.h"
#include "tools/commands.h"
#include "tools/fetch_flags.h"
#include "tools/flags.h"
#include "tools/interrupt.h"
#include "tools/progress_flag.h"

namespace flashpipe::tools {
namespace {

struct Flags {
  std::string zero_mode = "auto", json, progress = "auto", offset, size;
  WriterFlags writer;
  FetchFlags fetch;
  bool verify_only = false, no_progress = false, no_crc_check = false, no_bmap = false, no_digest = false;
};

void AddFlags(CLI::App& app, input::WriteRequest& r, Flags& f) {
  app.add_option("IMAGE", r.image, "image: a file, - for stdin, sparse parts a.simg,b.simg, or an http(s) URL")->required();
  app.add_option("TARGET", r.targets,
                 "regular files or block devices, written at once; TARGET:NAME is the GPT partition NAME of one")
      ->required();
  app.footer(
      "Nothing is changed until every target and the image (header, size) passed their checks. A file target is\n"
      "written to a temporary file beside it and renamed over it when complete (--in-place: into the file itself);\n"
      "block devices are written in place. A target that is the image, a part, the bmap or stdin is refused, and\n"
      "so is one another run is writing (each target is locked for the run; the error names the holder).\n"
      "TARGET:NAME (a path that exists as given is never split at its ':') writes the image into the GPT partition\n"
      "NAME of a device or disk image file, and --offset/--size into a window of every target (inside the partition\n"
      "when one is named): written in place, a file too, nothing outside the window changes. The image must fit the\n"
      "window (checked before anything is written; a stream of unknown size stops with an error at its end).\n"
      "Without --bmap, IMAGE.bmap is used when it exists, else the same name with IMAGE's extensions removed one\n"
      "by one (foo.img.xz: foo.img.xz.bmap, foo.img.bmap, foo.bmap), as bmaptool copy finds it; it must match.\n"
      "An http(s) URL is fetched into the cache while it is written: a raw image with a bmap only its mapped ranges\n"
      "(by Range requests), anything else whole; a dropped or stalled transfer resumes where it stopped, a file that\n"
      "changed on the server fails the run. A bmap signature (inline, BMAP.asc, BMAP.sig) is checked as bmaptool does.\n"
      "SIGINT or SIGTERM stops at the next request (exit 130 or 143): a file target stays as it was, a device written\n"
      "in place is reported \"partially written, do not use\" (an --in-place file too: it was cut to the image's size\n"
      "first), and the --json report says \"interrupted\": true. The JSON Schema of --json and of --progress json\n"
      "events: docs/schema/ in the source, share/doc/flashpipe/schema/ once installed.");
  app.add_option("--offset", f.offset,
                 "write at this offset into every TARGET, or into its partition (K/M/G suffixes; a multiple of its "
                 "logical block)");
  app.add_option("--size", f.size, "the window's size (default: the rest of the target or partition)");
  app.add_option("--bmap", r.source.bmap_path, "bmaptool block map (a file or URL) of a raw image: write only its mapped ranges");
  app.add_flag("--no-bmap", f.no_bmap, "do not look for a block map beside the image");
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
  AddJsonFlag(app, f.json, "the report (one result per target, phase times, the image's SHA-256)");
  AddProgressFlags(app, f.progress, f.no_progress);
  app.add_flag("--no-digest", f.no_digest, "do not compute the image's SHA-256 for the report");
  app.add_flag("--no-crc-check", f.no_crc_check, "do not check CRC32 chunks of sparse images");
  AddFetchFlags(app, f.fetch);
}

Status ApplyFlags(const Flags& f, input::WriteRequest& r) {
  FP_ASSIGN_OR_RETURN(r.writer.zero_mode, io::ParseZeroMode(f.zero_mode));
  FP_ASSIGN_OR_RETURN(WriterSettings w, ParseWriterFlags(f.writer));
  r.backend = w.backend;
  if (w.queue_depth != 0) r.writer.queue_depth = w.queue_depth;
  if (w.request_size != 0) r.writer.request_size = w.request_size;
  r.source.decoder.check_crc = !f.no_crc_check;
  r.find_bmap = !f.no_bmap;
  r.digest = !f.no_digest;
  if (!f.offset.empty()) {
    auto v = ParseSize(f.offset);
    if (!v.ok()) return v.status().WithContext("--offset");
    r.window.offset = *v;
  }
  if (!f.size.empty()) {
    auto v = ParseSize(f.size);
    if (!v.ok()) return v.status().WithContext("--size");
    if (*v == 0) return InvalidArgument("--size 0: the window holds nothing");
    r.window.size = *v;
  }
  if (f.no_bmap && !r.source.bmap_path.empty()) return InvalidArgument("--bmap and --no-bmap exclude each other");
  if (f.verify_only && (r.writer.verify || r.writer.discard || r.writer.first_block_last)) {
    return InvalidArgument("--verify-only writes nothing: it cannot be combined with --verify, --discard or --first-block-last");
  }
  return Status::Ok();
}

// Each target's state, when it says more than the error line: after an
// interrupt, with several targets, or once a target was touched.
bool ShowTargets(const input::WriteReport& r) {
  if (r.interrupted() || r.results.size() > 1) return true;
  for (const auto& t : r.results)
    if (t.state != input::TargetState::kNotStarted) return true;
  return false;
}

// A whole disk that now holds a disk image's GPT: the kernel is told, so its
// partitions are there without a reboot (as after `flashpipe partition`).
// The image is written either way: a failure here is a warning.
void TellKernel(const input::WriteReport& r) {
  for (const auto& t : r.results) {
    if (t.state != input::TargetState::kWritten || t.window || !t.partition.empty()) continue;
    auto u = partition::UpdateAfterWholeDiskWrite(t.path, std::chrono::seconds(10));
    if (!u.ok()) {
      std::fprintf(stderr, "flashpipe write: warning: %s holds a partition table the kernel was not told of: %s\n",
                   t.path.c_str(), u.status().ToString().c_str());
    } else if (u->has_value()) {
      std::fprintf(stderr, "flashpipe write: %s: partitions %s\n", t.path.c_str(), (*u)->Describe().c_str());
    }
  }
}

void PrintOutcome(const input::WriteReport& r) {
  if (r.status.ok()) {
    std::fprintf(stderr, "flashpipe write: %s\n", input::SummaryLine(r).c_str());
    return;
  }
  if (!ShowTargets(r)) return;
  for (const auto& t : r.results) std::fprintf(stderr, "flashpipe write: %s\n", input::TargetLine(t, r).c_str());
}

}  // namespace

int RunWrite(int argc, char** argv) {
  CLI::App app{"Write an image (sparse, raw, parts, stdin, gzip/xz/zstd/bzip2/lz4, raw + bmap) to files or block devices",
               CommandName(argv[0])};
  input::WriteRequest request;
  Flags flags;
  AddFlags(app, request, flags);
  if (auto code = ParseOrExit(app, argc, argv, /*interruptible=*/true)) return *code;
  if (Status s = ApplyFlags(flags, request); !s.ok()) return UsageError(app, s);
  auto mode = ParseProgressFlags(flags.progress, flags.no_progress, flags.json);
  if (!mode.ok()) return UsageError(app, mode.status());
  if (!flags.json.empty()) request.other_outputs.push_back({flags.json, "the --json report"});
  if (*mode == input::ProgressMode::kJson) request.other_outputs.push_back({"-", "the --progress=json events"});
  request.cancel = CancelOnSignals();
  if (Status s = ApplyFetchFlags(flags.fetch, request.image, &request.source, request.cancel); !s.ok()) {
    return s.code() == Code::kInvalidArgument ? UsageError(app, s) : ExitWith("write", s);
  }
  input::Progress progress(stderr, *mode, "flashpipe write");
  input::WriteReport report =
      flags.verify_only ? input::VerifyOnly(request, &progress) : input::RunWriteJob(request, &progress);
  Status st = report.status;
  if (report.other_outputs_checked) {
    for (const auto& t : report.results) progress.Event("target", input::TargetJsonMembers(t, report));
    progress.Event("report", "\"report\": " + input::ReportJson(report));
  }
  if (!flags.json.empty() && report.other_outputs_checked) {
    Status js = WriteJson(flags.json, input::ReportJson(report));
    if (st.ok()) st = js;
  }
  if (report.status.ok() && !flags.verify_only) TellKernel(report);
  if (report.status.ok()) PrintOutcome(report);
  int code = ExitWith("write", st);
  if (!report.status.ok()) PrintOutcome(report);
  return code;
}

}  // namespace flashpipe::tools
