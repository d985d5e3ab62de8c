#include "fastboot/hooks.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "testing/process.h"
#include "testing/temp_dir.h"

namespace flashpipe::fastboot {
namespace {

using Clock = std::chrono::steady_clock;

std::vector<std::string> Lines(const std::string& command, const std::vector<std::string>& args,
                               HookLimits limits = {}, HookResult* result = nullptr) {
  std::vector<std::string> lines;
  auto r = RunHook(command, "test", args, limits, [&](std::string_view l) { lines.emplace_back(l); });
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  if (r.ok() && result != nullptr) *result = *r;
  return lines;
}

TEST(Hooks, ArgumentsArePositionalParametersNotCommandText) {
  EXPECT_EQ(Lines("printf '%s|' \"$0\" \"$@\"; echo", {"a b", "$(id)", ";rm x"}),
            std::vector<std::string>{"test|a b|$(id)|;rm x|"});
}

TEST(Hooks, EnvironmentEntriesAreAddedAndReplaceTheDaemons) {
  ::setenv("FLASHPIPE_TEST_KEPT", "kept", 1);
  ::setenv("FLASHPIPE_SLOT", "stale", 1);
  std::vector<std::string> lines;
  auto r = RunHook("echo \"$FLASHPIPE_TEST_KEPT $FLASHPIPE_SLOT $FLASHPIPE_NEW\"; env | grep -c '^FLASHPIPE_SLOT='",
                   "test", {}, {}, [&](std::string_view l) { lines.emplace_back(l); },
                   {"FLASHPIPE_SLOT=b", "FLASHPIPE_NEW=x=y"});
  ::unsetenv("FLASHPIPE_TEST_KEPT");
  ::unsetenv("FLASHPIPE_SLOT");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(lines, (std::vector<std::string>{"kept b x=y", "1"}));
}

TEST(Hooks, ControlCharactersAndNonAsciiInArgumentsAreRefused) {
  for (const std::string& bad : std::vector<std::string>{"a\nb", std::string("a\0b", 3), "\x1b[2J", "caf\xc3\xa9"}) {
    auto r = RunHook("echo ran", "test", {bad}, {}, [](std::string_view) { ADD_FAILURE() << "the hook ran"; });
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), Code::kInvalidArgument);
  }
}

TEST(Hooks, ExitStatusAndOutputOfBothStreams) {
  HookResult r;
  EXPECT_EQ(Lines("echo out; echo err >&2; printf tail; exit 7", {}, {}, &r),
            (std::vector<std::string>{"out", "err", "tail"}));
  EXPECT_EQ(r.exit_status, 7);
  EXPECT_FALSE(r.timed_out);
}

TEST(Hooks, OutputPastTheLimitIsCountedNotKept) {
  HookResult r;
  HookLimits limits{.output_limit = 10};
  EXPECT_EQ(Lines("echo 1234; echo 5678; echo abcd; head -c 100000 /dev/zero", {}, limits, &r),
            (std::vector<std::string>{"1234", "5678"}));
  EXPECT_EQ(r.dropped_bytes, 5u + 100000u);
}

TEST(Hooks, TimeoutKillsTheWholeProcessGroup) {
  testing::TempDir dir;
  HookResult r;
  auto start = Clock::now();
  Lines("sleep 30 & echo $! > \"$1\"; wait", {dir / "pid"}, {.timeout = std::chrono::milliseconds(200)}, &r);
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(5));
  EXPECT_TRUE(r.timed_out);
  EXPECT_EQ(r.exit_status, 128 + 9);
  pid_t child = testing::PidFromFile(dir / "pid");
  ASSERT_GT(child, 0);
  EXPECT_TRUE(testing::ProcessGone(child));
}

// The shell is done but left a child holding the output pipe: the child is
// killed, the hook does not wait for it.
TEST(Hooks, LeftoversAreKilledWhenTheShellExits) {
  testing::TempDir dir;
  HookResult r;
  auto start = Clock::now();
  EXPECT_EQ(Lines("sleep 30 & echo $! > \"$1\"; echo done", {dir / "pid"}, {}, &r), std::vector<std::string>{"done"});
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(5));
  EXPECT_EQ(r.exit_status, 0);
  EXPECT_FALSE(r.timed_out);
  EXPECT_TRUE(testing::ProcessGone(testing::PidFromFile(dir / "pid")));
}

TEST(Hooks, CancelledWhenTheClientGoes) {
  std::atomic<bool> gone{false};
  std::thread leaver([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    gone = true;
  });
  HookResult r;
  auto start = Clock::now();
  Lines("sleep 30", {}, {.cancelled = [&] { return gone.load(); }}, &r);
  leaver.join();
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(5));
  EXPECT_TRUE(r.cancelled);
}

// The daemon blocks SIGTERM and ignores SIGPIPE; its hooks must not inherit that.
TEST(Hooks, DefaultSignalHandlingInTheHook) {
  sigset_t block, old;
  sigemptyset(&block);
  sigaddset(&block, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &block, &old);
  auto old_pipe = ::signal(SIGPIPE, SIG_IGN);
  HookResult r;
  Lines("kill -TERM $$; sleep 5", {}, {.timeout = std::chrono::seconds(10)}, &r);
  EXPECT_EQ(r.exit_status, 128 + SIGTERM);
  // With SIGPIPE ignored, `yes` would complain "Broken pipe" on stderr.
  EXPECT_EQ(Lines("yes | head -c 1 >/dev/null", {}, {}, &r), std::vector<std::string>{});
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  ::signal(SIGPIPE, old_pipe);
}

}  // namespace
}  // namespace flashpipe::fastboot
