// append2simg SPARSE RAW: append RAW's blocks to the sparse image SPARSE.
#include "sparse/append.h"
#include "tools/commands.h"
#include "tools/flags.h"
#include "tools/sparse_tools.h"

namespace flashpipe::tools {

int RunAppend2simg(int argc, char** argv) {
  CLI::App app{"Append a raw file (a multiple of the block size) to a sparse image.\n"
               "The image is rebuilt in a temp file beside it and renamed over it when complete (a symlink is\n"
               "written through, the mode kept).",
               CommandName(argv[0])};
  std::string sparse_path, raw_path;
  app.add_option("SPARSE", sparse_path, "sparse image (or a raw one, made sparse), replaced when complete")->required();
  app.add_option("RAW", raw_path, "raw data to append")->required();
  if (auto code = ParseOrExit(app, argc, argv)) return *code;
  return ExitWith("append2simg", sparse::AppendToSparse(sparse_path, raw_path));
}

}  // namespace flashpipe::tools
