// The flashpipe subcommands. Each Run* parses its own flags (CLI11), wires the
// library parts together and returns the process exit status. argv[0] is the
// subcommand name ("img2simg"), so the AOSP-compatible commands also work when
// flashpipe is invoked through a link of that name.
#pragma once

#include "base/status.h"

namespace flashpipe::tools {

int RunImg2simg(int argc, char** argv);
int RunSimg2img(int argc, char** argv);
int RunAppend2simg(int argc, char** argv);
int RunResparse(int argc, char** argv);
int RunDump(int argc, char** argv);
int RunWrite(int argc, char** argv);
int RunServe(int argc, char** argv);
int RunBench(int argc, char** argv);
int RunRead(int argc, char** argv);
int RunBmap(int argc, char** argv);
int RunLp(int argc, char** argv);
int RunFlash(int argc, char** argv);
int RunFastboot(int argc, char** argv);
int RunCache(int argc, char** argv);
int RunPartition(int argc, char** argv);
int RunMmc(int argc, char** argv);

// The one place a Status becomes an exit status: prints
// "flashpipe <command>: error: <status>" to stderr, returns 1 (0 when OK);
// for the kCancelled status of a job a signal stopped (tools/interrupt.h):
// "flashpipe <command>: interrupted by SIGINT...", 128 + the signal.
int ExitWith(const char* command, const Status& status);

// Flushes stdout and reports whether everything printed on it arrived
// ("write stdout: No space left on device" for `> /dev/full`).
Status FlushStdout();

}  // namespace flashpipe::tools
