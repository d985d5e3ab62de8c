// flashpipe bmap create IMAGE [-o FILE]
// bmaptool create's job: see src/output/bmap_job.h.
#include <unistd.h>

#include <cstdio>

#include "output/bmap_job.h"
#include "tools/commands.h"
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
  create->add_option("IMAGE", r.image, "a raw image file, a block device, or DEVICE:NAME (a GPT partition)")
      ->required();
  create->add_option("-o,--output", r.output, "the bmap file (default: stdout)");
  create->add_flag("--zeros-unmapped", r.zeros_unmapped,
                   "leave out allocated blocks that hold only zeros (default: mapped, as bmaptool create maps them)");
  create->add_flag("--force", r.force, "read a block device another program holds exclusively");
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
