// resparse --max-size N IN OUT_PREFIX: writes OUT_PREFIX.0, OUT_PREFIX.1, ...
#include <cstdio>

#include "base/units.h"
#include "sparse/part_files.h"
#include "tools/commands.h"
#include "tools/flags.h"
#include "tools/sparse_tools.h"

namespace flashpipe::tools {
namespace {

Status Resparse(const std::string& in_path, const std::string& prefix, uint64_t max_size) {
  FP_ASSIGN_OR_RETURN(sparse::ResparseFilesResult r, sparse::ResparseToFiles(in_path, prefix, max_size));
  std::fprintf(stderr, "resparse: %zu part%s of at most %llu bytes: %s .. %s\n", r.parts, r.parts == 1 ? "" : "s",
               static_cast<unsigned long long>(max_size), sparse::PartPath(prefix, 0).c_str(),
               sparse::PartPath(prefix, r.parts - 1).c_str());
  if (!r.removed.empty()) {
    std::fprintf(stderr, "resparse: removed %zu stale part%s of an earlier run: %s .. %s\n", r.removed.size(),
                 r.removed.size() == 1 ? "" : "s", r.removed.front().c_str(), r.removed.back().c_str());
  }
  return Status::Ok();
}

}  // namespace

int RunResparse(int argc, char** argv) {
  CLI::App app{"Split a sparse image into complete sparse images of at most N bytes each.\n"
               "All parts are written to temp files and renamed into place together when all are complete;\n"
               "parts OUT_PREFIX.N left by an earlier run with more parts are removed in the same step.\n"
               "A symlinked part is written through; no part may be the input.",
               CommandName(argv[0])};
  std::string in, prefix, max_text;
  app.add_option("--max-size,-m", max_text, "largest part in bytes (K/M/G suffixes: 2^10..)")->required();
  app.add_option("IN", in, "sparse image (a file)")->required();
  app.add_option("OUT_PREFIX", prefix, "parts are written to OUT_PREFIX.0, OUT_PREFIX.1, ...")->required();
  if (auto code = ParseOrExit(app, argc, argv)) return *code;
  auto max = ParseSize(max_text);
  if (!max.ok()) return UsageError(app, max.status());
  return ExitWith("resparse", Resparse(in, prefix, *max));
}

}  // namespace flashpipe::tools
