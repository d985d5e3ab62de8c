// img2simg [-s] [-b BLOCK_SIZE] [--crc] RAW SPARSE [BLOCK_SIZE]
// AOSP-compatible: the block size may also be the third positional argument.
#include "base/units.h"
#include "sparse/encoder.h"
#include "tools/commands.h"
#include "tools/flags.h"
#include "tools/sparse_tools.h"

namespace flashpipe::tools {

int RunImg2simg(int argc, char** argv) {
  CLI::App app{"Convert a raw image to an Android sparse image (AOSP img2simg compatible).\n"
               "A file output appears only when complete (a temp file beside it, then rename; a symlink is\n"
               "written through, an existing file keeps its mode); the output must not be the input.",
               CommandName(argv[0])};
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
  return ExitWith("img2simg", sparse::EncodeToPath(in, out, o).status());
}

}  // namespace flashpipe::tools
