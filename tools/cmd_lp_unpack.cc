// lp unpack [-p NAME]... [--slot N] SUPER [DIR]: writes DIR/NAME.img for
// every logical partition (or the named ones) of a super image (raw or
// sparse) or block device, as AOSP lpunpack does. DIR defaults to ".".
#include <cstdio>

#include "superimg/open_super.h"
#include "superimg/unpack.h"
#include "tools/commands.h"
#include "tools/flags.h"
#include "tools/lp_tools.h"

namespace flashpipe::tools {
namespace {

Status UnpackSuper(const std::string& path, uint32_t slot, const std::string& dir,
                   const std::vector<std::string>& names) {
  FP_ASSIGN_OR_RETURN(superimg::SuperFile f, superimg::OpenSuper(path));
  if (f.kind == superimg::SuperFile::Kind::kEmpty) {
    return InvalidArgument(fmt::format("{} is a super_empty.img: it holds metadata, no partition data", path));
  }
  FP_ASSIGN_OR_RETURN(lp::Metadata m, superimg::ReadSuperMetadata(f, slot));
  FP_ASSIGN_OR_RETURN(std::vector<std::string> written,
                      superimg::Unpack(*f.io, m, dir, {.partitions = names, .super_id = f.id}));
  for (const auto& w : written) std::printf("%s\n", w.c_str());
  return Status::Ok();
}

}  // namespace

void LpUnpack::Add(CLI::App& lp) {
  app = lp.add_subcommand("unpack", "write each logical partition of a super image (raw or sparse) out as "
                                    "DIR/NAME.img (like lpunpack)");
  app->add_option("-p,--partition", partitions, "unpack only this partition (repeatable)");
  app->add_option("-S,--slot", slot, "metadata slot to read (default 0)");
  app->add_option("SUPER", path, "super image (raw or sparse) or block device")->required();
  app->add_option("DIR", dir, "directory for the images (default .)");
}

int LpUnpack::Run() { return ExitWith("lp unpack", UnpackSuper(path, slot, dir, partitions)); }

}  // namespace flashpipe::tools
