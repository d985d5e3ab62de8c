// flashpipe bmap create IMAGE [-o FILE]
// bmaptool create's job: see src/output/bmap_job.h.
#include <unistd.h>

#include <cstdio>

#include "fetch/url.h"
#include "input/remote_image.h"
#include "output/bmap_job.h"
#include "tools/commands.h"
#include "tools/fetch_flags.h"
#include "tools/flags.h"

namespace flashpipe::tools {

int RunBmap(int argc, char** argv) {
  CLI::App app{"Block maps in bmaptool's format 2.0", CommandName(argv[0])};
  app.require_subcommand(1);
  CLI::App* create = app.add_subcommand(
      "create", "write the bmap of an image (a file, or a block device: its non-zero blocks), as bmaptool create");
  output::BmapRequest r;
  WriterFlags io;
  std::string json;
  bool no_progress = false;
  FetchFlags fetch_flags;
  AddFetchFlags(*create, fetch_flags);
  create->add_option("IMAGE", r.image,
                     "a raw image file, a block device, DEVICE:NAME (a GPT partition), or an http(s) URL (fetched "
                     "whole; its non-zero blocks are mapped)")
      ->required();
  create->add_option("-o,--output", r.output, "the bmap file (default: stdout)");
  create->add_flag("--zeros-unmapped", r.zeros_unmapped,
                   "leave out allocated blocks that hold only zeros (default: mapped, as bmaptool create maps them)");
  create->add_flag("--force", r.force, "read a block device another program holds exclusively");
  create->add_option("--threads", r.threads,
                     "threads that read and hash at once, each a part of an image file cut at a hole "
                     "(default: one per core, at most 4)")
      ->check(CLI::Range(1u, 64u));
  AddWriterFlags(*create, io);
  AddJsonFlag(*create, json, "the report");
  create->add_flag("--no-progress", no_progress, "no progress output");
  if (auto code = ParseOrExit(app, argc, argv)) return *code;
  auto w = ParseWriterFlags(io);
  if (!w.ok()) return UsageError(app, w.status());
  r.queue = {w->backend, w->queue_depth, w->request_size};
  if (json == "-" && r.output == "-") {
    return UsageError(app, InvalidArgument("the bmap and --json cannot both go to stdout: use -o FILE or --json=FILE"));
  }
  if (Status s = CheckJsonFile(json, {r.image, r.output}); !s.ok()) return UsageError(app, s);
  std::optional<input::FetchedImage> fetched;  // a URL: its cache entry is the image
  if (fetch::IsUrl(r.image)) {
    input::SourceOptions o;
    if (Status s = ApplyFetchFlags(fetch_flags, r.image, &o); !s.ok()) return UsageError(app, s);
    auto f = input::FetchImage(r.image, o);
    if (!f.ok()) return ExitWith("bmap create", f.status());
    std::fprintf(stderr, "flashpipe bmap create: %s: %s\n", f->report.url.c_str(), fetch::FetchSummary(f->report).c_str());
    fetched = std::move(*f);
    r.image = fetched->path;
    r.zeros_unmapped = true;  // a fetched file has no holes of its own to tell
  }
  bool quiet = no_progress || json == "-" || !::isatty(STDERR_FILENO);
  input::Progress progress(stderr, quiet ? input::ProgressMode::kOff : input::ProgressMode::kBar,
                           "flashpipe bmap create");
  auto warn = [](const std::string& m) { std::fprintf(stderr, "flashpipe bmap create: warning: %s\n", m.c_str()); };
  output::BmapReport report = output::RunBmapCreate(r, &progress, warn);
  Status st = report.status;
  if (!json.empty()) {
    Status js = WriteJson(json, output::BmapReportJson(report));
    if (st.ok()) st = js;
  }
  return ExitWith("bmap create", st);
}

}  // namespace flashpipe::tools
