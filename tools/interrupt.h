// SIGINT, SIGTERM and SIGHUP for the commands that run long jobs (write,
// read, bench): the first one sets a CancelFlag the job polls, so it stops at
// its next request, drains what is in flight, removes its temporary files and
// reports (exit 128 + signal: 130 for SIGINT, 143 for SIGTERM, 129 for SIGHUP,
// as a shell reports a program killed by it). SIGHUP is what a closed ssh
// session or terminal sends, and what LAVA sends first when a command
// overruns its timeout (pexpect's terminate). A second one ends the process at once,
// the default way, for a job stuck where it cannot poll (a read from a
// silent pipe).
#pragma once

#include "base/cancel.h"

namespace flashpipe::tools {

// Installs the handlers (once) and returns the flag they set.
const CancelFlag* CancelOnSignals();

// The signal that cancelled the process's job, 0 when none did.
int CaughtSignal();

}  // namespace flashpipe::tools
