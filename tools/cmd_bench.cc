// PLACEHOLDER until the owning part lands: replace this file.
#include <cstdio>

#include "tools/commands.h"

namespace flashpipe::tools {

int RunBench(int, char**) {
  std::fprintf(stderr, "flashpipe: not built yet\n");
  return 2;
}

}  // namespace flashpipe::tools
