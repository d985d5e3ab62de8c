// flashpipe: puts disk images onto storage as fast as the storage allows.
// Dispatches to a subcommand by argv[1], or by argv[0] when invoked through a
// link named like an AOSP tool (img2simg, simg2img, append2simg).
#include <cstdio>
#include <cstring>
#include <exception>
#include <new>
#include <string_view>
#include <vector>

#include "tools/commands.h"
#include "tools/describe.h"

namespace {

struct Command {
  const char* name;
  int (*run)(int, char**);
  const char* help;
};

constexpr Command kCommands[] = {
    {"write", flashpipe::tools::RunWrite, "write an image (sparse, raw, compressed, bmap; a file or an http(s) URL) to files or devices"},
    {"read", flashpipe::tools::RunRead, "read a device, file or GPT partition into an image (raw, sparse, compressed) + bmap"},
    {"partition", flashpipe::tools::RunPartition, "write a GPT from an sfdisk script or U-Boot $partitions string, or --dump the table"},
    {"mmc", flashpipe::tools::RunMmc, "mmc extcsd|partconf|bootbus: an eMMC's boot area and boot bus settings (EXT_CSD), as U-Boot's mmc partconf"},
    {"bmap", flashpipe::tools::RunBmap, "bmap create: a bmaptool block map of an image, as bmaptool create"},
    {"serve", flashpipe::tools::RunServe, "fastboot device daemon over TCP/UDP on a disk or partitions"},
    {"flash", flashpipe::tools::RunFlash, "flash images to many fastboot devices at once (USB, TCP, UDP)"},
    {"fastboot", flashpipe::tools::RunFastboot, "fastboot client with the AOSP client's verbs and output"},
    {"bench", flashpipe::tools::RunBench, "mmc_test-style transfer tests and the bounce-buffer study"},
    {"img2simg", flashpipe::tools::RunImg2simg, "convert a raw image to a sparse image (AOSP compatible)"},
    {"simg2img", flashpipe::tools::RunSimg2img, "expand sparse images (overlaid in order) to a raw image"},
    {"append2simg", flashpipe::tools::RunAppend2simg, "append raw data to a sparse image"},
    {"resparse", flashpipe::tools::RunResparse, "split a sparse image into parts of at most N bytes"},
    {"dump", flashpipe::tools::RunDump, "print a sparse image's header, chunks and totals"},
    {"cache", flashpipe::tools::RunCache, "cache ls|rm|gc: the download cache of images fetched from http(s) URLs"},
    {"lp", flashpipe::tools::RunLp, "Android super partitions: lp dump, lp make, lp unpack (like lpdump/lpmake/lpunpack)"},
};

constexpr const char* kSummary = "disk images onto storage at the speed of the storage";
constexpr const char* kExitStatus =
    "exit status: 0 done, 1 failed, 2 usage error, 130/143/129 interrupted by SIGINT/SIGTERM/SIGHUP (write, read, bench)";

void Usage(FILE* out) {
  std::fprintf(out, "flashpipe %s: %s\n\n"
                    "usage: flashpipe COMMAND [ARGS...]   (flashpipe COMMAND --help for details)\n\n"
                    "commands:\n", FLASHPIPE_VERSION, kSummary);
  for (const auto& c : kCommands) std::fprintf(out, "  %-12s %s\n", c.name, c.help);
  std::fprintf(out, "\n%s\n", kExitStatus);
}

// The table as JSON, for the generated man pages and completion.
int DescribeCommands() {
  std::vector<flashpipe::tools::CommandSummary> list;
  for (const auto& c : kCommands) list.push_back({c.name, c.help});
  std::fputs(flashpipe::tools::DescribeProgramJson(list, kSummary, kExitStatus).c_str(), stdout);
  return std::fflush(stdout) == 0 ? 0 : 1;
}

const Command* Find(std::string_view name) {
  for (const auto& c : kCommands) {
    if (name == c.name) return &c;
  }
  return nullptr;
}

int Dispatch(int argc, char** argv) {
  std::string_view self = argv[0];
  if (auto slash = self.rfind('/'); slash != std::string_view::npos) self.remove_prefix(slash + 1);
  if (const Command* c = Find(self); c != nullptr && self != "write") return c->run(argc, argv);
  if (argc < 2) {
    Usage(stderr);
    return 2;
  }
  std::string_view cmd = argv[1];
  if (cmd == "--help" || cmd == "-h" || cmd == "help") {
    Usage(stdout);
    return 0;
  }
  if (cmd == flashpipe::tools::kHelpJsonFlag) return DescribeCommands();
  if (cmd == "--version" || cmd == "version") {
    std::printf("flashpipe %s\n", FLASHPIPE_VERSION);
    return 0;
  }
  const Command* c = Find(cmd);
  if (c == nullptr) {
    std::fprintf(stderr, "flashpipe: unknown command '%s'\n\n", argv[1]);
    Usage(stderr);
    return 2;
  }
  return c->run(argc - 1, argv + 1);
}

}  // namespace

// Errors are Status values; an exception reaching here is a resource failure
// (std::bad_alloc for a buffer the machine cannot give): a message and exit 1,
// never an abort.
int main(int argc, char** argv) {
  try {
    return Dispatch(argc, argv);
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "flashpipe: out of memory\n");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "flashpipe: %s\n", e.what());
  }
  return 1;
}
