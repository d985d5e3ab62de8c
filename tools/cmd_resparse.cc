// resparse --max-size N IN OUT_PREFIX: writes OUT_PREFIX.0, OUT_PREFIX.1, ...
#include <cstdio>
#include <memory>
#include <vector>

#include "base/units.h"
#include "sparse/resparse.h"
#include "tools/commands.h"
#include "tools/flags.h"
#include "tools/sparse_tools.h"

namespace flashpipe::tools {
namespace {

Status Resparse(const std::string& in_path, const std::string& prefix, uint64_t max_size) {
  FP_ASSIGN_OR_RETURN(UniqueFd in, OpenForRead(in_path));
  std::vector<UniqueFd> fds;
  std::vector<std::unique_ptr<sparse::FdOutput>> outs;
  auto open_part = [&](size_t i) -> Result<sparse::Output*> {
    std::string path = fmt::format("{}.{}", prefix, i);
    FP_ASSIGN_OR_RETURN(UniqueFd fd, OpenForWrite(path));
    outs.push_back(std::make_unique<sparse::FdOutput>(fd.get(), path));
    fds.push_back(std::move(fd));
    return outs.back().get();
  };
  FP_ASSIGN_OR_RETURN(size_t parts, sparse::Resparse(in.get(), in_path, max_size, open_part));
  for (size_t i = 0; i < fds.size(); ++i) {
    if (fds[i].Close() != 0) return ErrnoError(fmt::format("close {}.{}", prefix, i));
  }
  std::fprintf(stderr, "resparse: %zu part%s of at most %llu bytes: %s.0 .. %s.%zu\n", parts, parts == 1 ? "" : "s",
               static_cast<unsigned long long>(max_size), prefix.c_str(), prefix.c_str(), parts - 1);
  return Status::Ok();
}

}  // namespace

int RunResparse(int argc, char** argv) {
  CLI::App app{"Split a sparse image into complete sparse images of at most N bytes each", CommandName(argv[0])};
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
