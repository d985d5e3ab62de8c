// Running the shell commands a device is configured with (oem commands, the
// reboot and shutdown hooks) as `/bin/sh -c COMMAND NAME ARGS...`.
//
// The command text comes only from the daemon's own flags. Words from the
// client are passed as arguments ($1..$n), never spliced into the command
// string, and a word with a control character or a byte outside ASCII is
// refused (CheckHookArgument) before anything runs. The hook learns the
// device's state from environment variables (hook_env.h).
//
// Every run is bounded. The hook gets its own process group, with default
// signal handling and an empty signal mask (the daemon blocks SIGINT and
// SIGTERM and ignores SIGPIPE), and stdin from /dev/null. The whole group is
// killed (SIGKILL) when the timeout passes, when `cancelled` says the client
// went away, and when the shell itself has exited: a hook leaves nothing
// running behind it unless it detaches with setsid. Its output (stdout and
// stderr together) goes to `on_line` line by line up to `output_limit`
// bytes; the rest is counted in dropped_bytes, not kept.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace flashpipe::fastboot {

struct HookLimits {
  std::chrono::milliseconds timeout{60000};  // 0 = none
  size_t output_limit = 4096;
  std::function<bool()> cancelled;  // asked about ten times a second; may be empty
};

struct HookResult {
  int exit_status = 0;  // 128 + N when killed by signal N
  bool timed_out = false;
  bool cancelled = false;
  uint64_t dropped_bytes = 0;  // output past output_limit
};

// kInvalidArgument when `word` holds a byte below 0x20 or above 0x7e.
Status CheckHookArgument(std::string_view word);

// `env`: NAME=VALUE entries added to the daemon's environment (replacing
// an entry of the same name), e.g. HookEnvironment() (hook_env.h).
Result<HookResult> RunHook(const std::string& command, const std::string& name,
                           const std::vector<std::string>& args, const HookLimits& limits,
                           const std::function<void(std::string_view line)>& on_line,
                           const std::vector<std::string>& env = {});

}  // namespace flashpipe::fastboot
