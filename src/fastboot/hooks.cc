#include "fastboot/hooks.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <optional>

#include "base/fd_io.h"
#include "base/unique_fd.h"

extern char** environ;

namespace flashpipe::fastboot {
namespace {

using Clock = std::chrono::steady_clock;
constexpr auto kTick = std::chrono::milliseconds(100);    // how often cancelled() is asked
constexpr auto kAfterExit = std::chrono::milliseconds(200);  // output still on its way after the shell exited

// Cuts output into lines and stops handing them on once `limit` bytes went.
class LineCap {
 public:
  LineCap(size_t limit, const std::function<void(std::string_view)>& on_line) : limit_(limit), on_line_(on_line) {}

  void Feed(std::string_view bytes) {
    pending_.append(bytes);
    size_t nl;
    while ((nl = pending_.find('\n')) != std::string::npos) {
      Emit(std::string_view(pending_).substr(0, nl), nl + 1);
      pending_.erase(0, nl + 1);
    }
    if (pending_.size() >= limit_) Flush();  // a "line" that never ends
  }
  void Flush() {
    if (!pending_.empty()) Emit(pending_, pending_.size());
    pending_.clear();
  }
  uint64_t dropped() const { return dropped_; }

 private:
  void Emit(std::string_view line, size_t bytes) {
    if (dropped_ > 0 || used_ + bytes > limit_) {
      dropped_ += bytes;
      return;
    }
    used_ += bytes;
    on_line_(line);
  }

  size_t limit_;
  const std::function<void(std::string_view)>& on_line_;
  std::string pending_;
  size_t used_ = 0;
  uint64_t dropped_ = 0;
};

// The daemon's environment with `extra` (NAME=VALUE) added or replacing.
std::vector<std::string> Environment(const std::vector<std::string>& extra) {
  std::vector<std::string> out;
  for (char** e = environ; *e != nullptr; ++e) {
    std::string_view entry(*e);
    std::string_view name = entry.substr(0, entry.find('=') + 1);
    bool replaced = std::any_of(extra.begin(), extra.end(), [&](const std::string& x) { return x.starts_with(name); });
    if (!replaced) out.emplace_back(entry);
  }
  out.insert(out.end(), extra.begin(), extra.end());
  return out;
}

// The shell in a process group of its own, with default signal handling.
Result<pid_t> Spawn(std::vector<std::string> words, std::vector<std::string> env, int out_fd,
                    const std::string& name) {
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, out_fd, 1);
  posix_spawn_file_actions_adddup2(&fa, out_fd, 2);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  posix_spawnattr_setpgroup(&attr, 0);
  sigset_t none, defaults;
  sigemptyset(&none);
  posix_spawnattr_setsigmask(&attr, &none);
  sigemptyset(&defaults);
  for (int sig : {SIGPIPE, SIGINT, SIGTERM, SIGHUP, SIGQUIT}) sigaddset(&defaults, sig);
  posix_spawnattr_setsigdefault(&attr, &defaults);
  std::vector<char*> argv, envp;
  for (auto& w : words) argv.push_back(w.data());
  argv.push_back(nullptr);
  for (auto& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);
  pid_t pid = 0;
  int rc = posix_spawn(&pid, "/bin/sh", &fa, &attr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&attr);
  if (rc != 0) return IoError("spawn /bin/sh for " + name, rc);
  return pid;
}

// Whether the child has exited, without reaping it: while it is a zombie
// its process group id cannot be reused, so killing the group stays safe.
bool Exited(pid_t pid) {
  siginfo_t info{};
  int r = RetryOnEintr([&] { return ::waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG | WNOWAIT); });
  return r == 0 && info.si_pid == pid;
}

int PollMs(Clock::time_point now, Clock::time_point deadline, std::chrono::milliseconds tick) {
  auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - now);
  return static_cast<int>(std::clamp<int64_t>(left.count(), 0, tick.count()));
}

}  // namespace

Status CheckHookArgument(std::string_view word) {
  for (size_t i = 0; i < word.size(); ++i) {
    auto c = static_cast<unsigned char>(word[i]);
    if (c < 0x20 || c > 0x7e) {
      return InvalidArgument(fmt::format("argument byte {} is 0x{:02x}, not printable ASCII", i, c));
    }
  }
  return Status::Ok();
}

Result<HookResult> RunHook(const std::string& command, const std::string& name,
                           const std::vector<std::string>& args, const HookLimits& limits,
                           const std::function<void(std::string_view line)>& on_line,
                           const std::vector<std::string>& env) {
  for (const auto& a : args) FP_RETURN_IF_ERROR(CheckHookArgument(a).WithContext(name));
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return ErrnoError("pipe");
  UniqueFd rd(fds[0]), wr(fds[1]);
  std::vector<std::string> words = {"/bin/sh", "-c", command, name};
  words.insert(words.end(), args.begin(), args.end());
  FP_ASSIGN_OR_RETURN(pid_t pid, Spawn(std::move(words), Environment(env), wr.get(), name));
  wr.Reset();

  HookResult result;
  LineCap cap(limits.output_limit, on_line);
  auto deadline = limits.timeout.count() > 0 ? Clock::now() + limits.timeout : Clock::time_point::max();
  std::optional<Clock::time_point> exited_at;
  bool eof = false;
  char buf[4096];
  for (;;) {
    if (!exited_at && Exited(pid)) exited_at = Clock::now();
    auto now = Clock::now();
    if (exited_at && (eof || now - *exited_at >= kAfterExit)) break;
    if (now >= deadline) {
      result.timed_out = true;
      break;
    }
    if (limits.cancelled && limits.cancelled()) {
      result.cancelled = true;
      break;
    }
    pollfd p{rd.get(), POLLIN, 0};
    auto tick = eof ? std::chrono::milliseconds(5) : kTick;  // after EOF: only the exit is awaited
    int r = RetryOnEintr([&] { return ::poll(&p, eof ? 0 : 1, PollMs(now, deadline, tick)); });
    if (r <= 0) continue;
    ssize_t n = RetryOnEintr([&] { return ::read(rd.get(), buf, sizeof buf); });
    if (n <= 0) eof = true;
    if (n > 0) cap.Feed(std::string_view(buf, static_cast<size_t>(n)));
  }
  // The whole group: the shell if it still runs, and whatever it started.
  ::kill(-pid, SIGKILL);
  int status = 0;
  if (RetryOnEintr([&] { return ::waitpid(pid, &status, 0); }) < 0) return ErrnoError("waitpid for " + name);
  cap.Flush();
  result.dropped_bytes = cap.dropped();
  result.exit_status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return result;
}

}  // namespace flashpipe::fastboot
