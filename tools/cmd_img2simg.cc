// img2simg [-s] [-b BLOCK_SIZE] [--crc] RAW SPARSE [BLOCK_SIZE]
// AOSP-compatible: the block size may also be the third positional argument.
#include <unistd.h>

#include "base/units.h"
#include "sparse/encoder.h"
#include "tools/commands.h"
#include "tools/flags.h"
#include "tools/sparse_tools.h"

namespace flashpipe::tools {
namespace {

Status Img2simg(const std::string& in_path, const std::string& out_path, const sparse::EncoderOptions& o) {
  FP_ASSIGN_OR_RETURN(UniqueFd in, OpenForRead(in_path));
  FP_ASSIGN_OR_RETURN(UniqueFd out, OpenForWrite(out_path));
  const std::string out_name = out_path == "-" ? "stdout" : out_path;
  sparse::FdOutput output(out.get(), out_name);
  auto stats = sparse::EncodeImage(in.get(), in_path == "-" ? "stdin" : in_path, output, o);
  Status s = stats.status();
  if (s.ok() && out.Close() != 0) s = ErrnoError(fmt::format("close {}", out_name));
  if (!s.ok() && out_path != "-") ::unlink(out_path.c_str());  // never leave half an image
  return s;
}

}  // namespace

int RunImg2simg(int argc, char** argv) {
  CLI::App app{"Convert a raw image to an Android sparse image (AOSP img2simg compatible)", CommandName(argv[0])};
  std::string in, out, block_text = "4096", block_pos;
  sparse::EncoderOptions o;
  app.add_flag("-s", o.holes, "map holes of the input (SEEK_DATA/SEEK_HOLE) to DONT_CARE");
  app.add_option("-b,--block-size", block_text, "block size, a multiple of 4 (default 4096)");
  app.add_flag("--crc", o.crc, "append a CRC32 chunk (off by default: some bootloaders reject them)");
  app.add_option("RAW", in, "raw image, - for stdin")->required();
  app.add_option("SPARSE", out, "sparse image to write, - for stdout")->required();
  app.add_option("BLOCK_SIZE", block_pos, "block size (AOSP positional form)");
  if (auto code = ParseOrExit(app, argc, argv)) return *code;
  auto blk = ParseSize(block_pos.empty() ? block_text : block_pos);
  if (!blk.ok()) return UsageError(app, blk.status());
  if (*blk == 0 || *blk % 4 != 0 || *blk > UINT32_MAX) {
    return UsageError(app, InvalidArgument(fmt::format("block size {} is not a non-zero multiple of 4", *blk)));
  }
  o.block_size = static_cast<uint32_t>(*blk);
  return ExitWith("img2simg", Img2simg(in, out, o));
}

}  // namespace flashpipe::tools
