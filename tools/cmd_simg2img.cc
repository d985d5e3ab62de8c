// simg2img [--no-crc-check] SPARSE... RAW
// Several inputs are laid over each other in order (fastboot's split parts).
#include "sparse/expand.h"
#include "tools/commands.h"
#include "tools/flags.h"
#include "tools/sparse_tools.h"

namespace flashpipe::tools {

int RunSimg2img(int argc, char** argv) {
  CLI::App app{"Expand Android sparse images, laid over each other in order, to a raw image.\n"
               "Every input is checked before the output is touched; a file output appears only when complete\n"
               "(a temp file beside it, then rename; a symlink is written through, an existing file keeps its\n"
               "mode); a block device is written in place; no input may be the output.",
               CommandName(argv[0])};
  std::vector<std::string> paths;
  bool no_crc = false;
  app.add_flag("--no-crc-check", no_crc, "do not verify CRC32 chunks");
  app.add_option("FILES", paths, "SPARSE... RAW: sparse images (- for stdin), then the output (- for stdout)")
      ->required();
  if (auto code = ParseOrExit(app, argc, argv)) return *code;
  if (paths.size() < 2) return UsageError(app, InvalidArgument("give at least one sparse image and the output"));
  std::string out = paths.back();
  paths.pop_back();
  return ExitWith("simg2img", sparse::ExpandToPath(paths, out, {.check_crc = !no_crc}));
}

}  // namespace flashpipe::tools
