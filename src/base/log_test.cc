#include "base/log.h"

#include <fcntl.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <regex>

#include "base/fd_io.h"

namespace flashpipe::log {
namespace {

TEST(Log, PrintableEscapesControlCharactersAndBackslash) {
  EXPECT_EQ(Printable("boot_a"), "boot_a");
  EXPECT_EQ(Printable("a\nserve: fake\x1b[2J"), "a\\x0aserve: fake\\x1b[2J");
  EXPECT_EQ(Printable("x\\y\x7f\xff"), "x\\\\y\\x7f\\xff");
}

TEST(Log, PrintableCutsLongText) {
  EXPECT_EQ(Printable(std::string(300, 'a'), 4), "aaaa...");
}

// Captures stderr around f and returns what was written.
template <typename F>
std::string CaptureStderr(F f) {
  char name[] = "/tmp/log_test.XXXXXX";
  int fd = ::mkstemp(name);
  ::unlink(name);
  int saved = ::dup(STDERR_FILENO);
  ::dup2(fd, STDERR_FILENO);
  f();
  ::dup2(saved, STDERR_FILENO);
  ::close(saved);
  std::string out(4096, '\0');
  auto n = PreadUpTo(fd, {reinterpret_cast<uint8_t*>(out.data()), out.size()}, 0, "capture");
  ::close(fd);
  out.resize(n.ok() ? *n : 0);
  return out;
}

TEST(Log, LinesCarryThePrefixAndLevel) {
  std::string out = CaptureStderr([] {
    Init("serve", false);
    Info("session {}", "start");
    Warn("state file {}", "empty");
    Debug("not shown");
  });
  EXPECT_EQ(out, "serve: session start\nserve: warning: state file empty\n");
}

TEST(Log, DebugLinesOnlyWhenVerboseAndStamped) {
  std::string out = CaptureStderr([] {
    Init("serve", true);
    Debug("download of {} bytes", 4096);
  });
  Init("flashpipe", false);
  ASSERT_TRUE(out.starts_with("serve: 0.0")) << out;
  EXPECT_TRUE(out.ends_with(": download of 4096 bytes\n")) << out;
}

// With -v the Info and Warn lines are stamped too: one timeline.
TEST(Log, VerboseStampsEveryLine) {
  std::string out = CaptureStderr([] {
    Init("serve", true);
    Info("session {}", "start");
    Warn("state file {}", "empty");
  });
  Init("flashpipe", false);
  EXPECT_TRUE(std::regex_match(out, std::regex("serve: 0\\.0[0-9]{2}: session start\n"
                                               "serve: 0\\.0[0-9]{2}: warning: state file empty\n")))
      << out;
}

}  // namespace
}  // namespace flashpipe::log
