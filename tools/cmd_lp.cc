// lp SUBCOMMAND ...: the `flashpipe lp` app and its subcommands
// (dump, make, unpack), one CLI11 app so that usage errors, --help and
// --help-json work as for every other command.
#include "tools/commands.h"
#include "tools/flags.h"
#include "tools/lp_tools.h"

namespace flashpipe::tools {

int RunLp(int argc, char** argv) {
  CLI::App app{"Android dynamic partitions: the liblp metadata of a super partition, super images and "
               "super_empty.img (like AOSP lpdump, lpmake, lpunpack)",
               "flashpipe lp"};
  app.require_subcommand(1);
  LpDump dump;
  LpMake make;
  LpUnpack unpack;
  dump.Add(app);
  make.Add(app);
  unpack.Add(app);
  if (auto code = ParseOrExit(app, argc, argv)) return *code;
  if (dump.app->parsed()) return dump.Run();
  if (make.app->parsed()) return make.Run(app);
  return unpack.Run();
}

}  // namespace flashpipe::tools
