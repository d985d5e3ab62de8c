// lp SUBCOMMAND ...: the table of `flashpipe lp` subcommands.
#include <cstdio>
#include <string_view>

#include "tools/commands.h"
#include "tools/flags.h"
#include "tools/lp_tools.h"

namespace flashpipe::tools {
namespace {

struct Subcommand {
  const char* name;
  int (*run)(int, char**);
  const char* help;
};

constexpr Subcommand kSubcommands[] = {
    {"dump", RunLpDump, "print the metadata of a super image, device or super_empty.img (like lpdump)"},
    {"make", RunLpMake, "build a super_empty.img, or a super image from partition images (like lpmake)"},
    {"unpack", RunLpUnpack, "write each logical partition of a super image out as a file (like lpunpack)"},
};

void Usage(FILE* out) {
  std::fprintf(out, "usage: flashpipe lp SUBCOMMAND [ARGS...]   (flashpipe lp SUBCOMMAND --help for details)\n\n"
                    "Android dynamic partitions: the liblp metadata of a super partition.\n\nsubcommands:\n");
  for (const auto& c : kSubcommands) std::fprintf(out, "  %-8s %s\n", c.name, c.help);
}

}  // namespace

int RunLp(int argc, char** argv) {
  if (argc < 2) {
    Usage(stderr);
    return kExitUsage;
  }
  const std::string_view name = argv[1];
  if (name == "--help" || name == "-h" || name == "help") {
    Usage(stdout);
    return kExitOk;
  }
  for (const auto& c : kSubcommands) {
    if (name == c.name) return c.run(argc - 1, argv + 1);
  }
  std::fprintf(stderr, "flashpipe lp: error: unknown subcommand '%s'\n\n", argv[1]);
  Usage(stderr);
  return kExitUsage;
}

}  // namespace flashpipe::tools
