#include "powercut/tool_run.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>

#include "base/fd_io.h"
#include "base/unique_fd.h"

extern char** environ;

namespace flashpipe::powercut {

Result<ToolResult> RunTool(const std::vector<std::string>& args) {
  if (args.empty()) return InvalidArgument("RunTool: no program");
  int p[2];
  if (::pipe2(p, O_CLOEXEC) != 0) return ErrnoError("pipe");
  UniqueFd read_end(p[0]), write_end(p[1]);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, write_end.get(), 1);
  posix_spawn_file_actions_adddup2(&fa, write_end.get(), 2);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  std::vector<std::string> words = args;
  std::vector<char*> argv;
  for (auto& w : words) argv.push_back(w.data());
  argv.push_back(nullptr);
  pid_t pid = 0;
  int rc = ::posix_spawnp(&pid, argv[0], &fa, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  write_end.Reset();
  if (rc == ENOENT) return NotFound(fmt::format("{} is not installed (e2fsprogs)", args[0]));
  if (rc != 0) return IoError(fmt::format("run {}", args[0]), rc);
  ToolResult out;
  std::array<char, 4096> buf;
  for (;;) {
    ssize_t n = RetryOnEintr([&] { return ::read(read_end.get(), buf.data(), buf.size()); });
    if (n <= 0) break;
    if (out.output.size() < (64u << 10)) out.output.append(buf.data(), static_cast<size_t>(n));
  }
  int status = 0;
  if (RetryOnEintr([&] { return ::waitpid(pid, &status, 0); }) < 0) return ErrnoError(fmt::format("wait {}", args[0]));
  out.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  // posix_spawnp reports a missing program as exit 127 on some libcs.
  if (out.exit_code == 127 && out.output.empty()) return NotFound(fmt::format("{} is not installed", args[0]));
  return out;
}

}  // namespace flashpipe::powercut
