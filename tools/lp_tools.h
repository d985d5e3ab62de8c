// `flashpipe lp`: Android dynamic partitions (super) tools, like AOSP's
// lpdump, lpmake and lpunpack. RunLp dispatches to a subcommand by argv[1];
// each takes argv with its own name first ("dump"), as the other commands do.
#pragma once

#include <string>

#include "lp/metadata.h"

namespace flashpipe::tools {

int RunLpDump(int argc, char** argv);
int RunLpMake(int argc, char** argv);
int RunLpUnpack(int argc, char** argv);

// The metadata as lpdump prints it, and as JSON (one object).
std::string LpText(const lp::Metadata& m);
std::string LpJson(const lp::Metadata& m);

}  // namespace flashpipe::tools
