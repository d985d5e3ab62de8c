#include "tools/interrupt.h"

#include <signal.h>

#include <csignal>

#include "mmc/boot_area.h"

namespace flashpipe::tools {
namespace {

CancelFlag g_cancel;

extern "C" void OnSignal(int signal_number) {
  if (g_cancel.cancelled()) {  // the second one: as if there were no handler
    mmc::RestoreForceRoFromSignal();  // no destructor runs past here
    std::signal(signal_number, SIG_DFL);
    std::raise(signal_number);
    return;
  }
  g_cancel.Cancel(signal_number);
}

}  // namespace

const CancelFlag* CancelOnSignals() {
  struct sigaction sa = {};
  sa.sa_handler = OnSignal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;  // requests in flight complete; the job polls the flag
  for (int s : {SIGINT, SIGTERM, SIGHUP}) {
    struct sigaction old = {};
    // A signal ignored when we started (a background job of a script, nohup)
    // stays ignored, as the shell meant.
    if (sigaction(s, nullptr, &old) == 0 && old.sa_handler == SIG_IGN) continue;
    sigaction(s, &sa, nullptr);
  }
  return &g_cancel;
}

int CaughtSignal() { return g_cancel.signal(); }

}  // namespace flashpipe::tools
