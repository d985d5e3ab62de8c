#include "base/write_lock.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <thread>

#include <gtest/gtest.h>

#include "base/atomic_file.h"
#include "base/unique_fd.h"
#include "testing/temp_dir.h"

namespace flashpipe {
namespace {

using namespace std::chrono_literals;

UniqueFd OpenRw(const std::string& path) { return UniqueFd(::open(path.c_str(), O_RDWR | O_CLOEXEC)); }

// Two descriptions of one file (two runs, or two opens in one): the second
// writer is refused at once with kBusy, and may lock once the first closes.
TEST(WriteLock, ASecondWriterIsRefusedUntilTheFirstCloses) {
  testing::TempDir dir;
  std::string path = dir.path() + "/t.img";
  std::ofstream(path) << "data";
  UniqueFd first = OpenRw(path), second = OpenRw(path);
  ASSERT_TRUE(LockForWriting(first.get(), path).ok());
  Status busy = LockForWriting(second.get(), path, 0ms);
  EXPECT_EQ(busy.code(), Code::kBusy);
  EXPECT_EQ(busy.message().rfind(path + ": another writer has it open (", 0), 0u) << busy.message();
  first.Reset();
  EXPECT_TRUE(LockForWriting(second.get(), path, 0ms).ok());
}

// Another process holds it: the message names its PID and command line.
TEST(WriteLock, TheHolderIsNamed) {
  testing::TempDir dir;
  std::string path = dir.path() + "/t.img";
  std::ofstream(path) << "data";
  int ready[2];
  ASSERT_EQ(::pipe(ready), 0);
  pid_t child = ::fork();
  if (child == 0) {
    UniqueFd fd = OpenRw(path);
    char c = LockForWriting(fd.get(), path).ok() ? 'y' : 'n';
    if (::write(ready[1], &c, 1) != 1) ::_exit(1);
    ::pause();
    ::_exit(0);
  }
  char c = 0;
  ASSERT_EQ(::read(ready[0], &c, 1), 1);
  ASSERT_EQ(c, 'y');
  UniqueFd fd = OpenRw(path);
  Status busy = LockForWriting(fd.get(), path, 100ms);
  EXPECT_EQ(busy.code(), Code::kBusy);
  EXPECT_NE(busy.message().find(fmt::format("held by PID {} (", child)), std::string::npos) << busy.message();
  EXPECT_EQ(LockHolder(fd.get()).rfind(fmt::format("PID {}", child), 0), 0u);
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
  EXPECT_TRUE(LockForWriting(fd.get(), path, 0ms).ok());  // the holder died: its lock went with it
  ::close(ready[0]);
  ::close(ready[1]);
}

// A brief holder (as udev is while it probes a device) is waited out.
TEST(WriteLock, AShortHoldIsWaitedOut) {
  testing::TempDir dir;
  std::string path = dir.path() + "/t.img";
  std::ofstream(path) << "data";
  UniqueFd first = OpenRw(path), second = OpenRw(path);
  ASSERT_TRUE(LockForWriting(first.get(), path).ok());
  std::thread release([&] {
    std::this_thread::sleep_for(200ms);
    first.Reset();
  });
  EXPECT_TRUE(LockForWriting(second.get(), path, 5000ms).ok());
  release.join();
}

TEST(WriteLock, PipesAreLeftUnlocked) {
  int p[2];
  ASSERT_EQ(::pipe(p), 0);
  EXPECT_TRUE(LockForWriting(p[1], "pipe", 0ms).ok());
  EXPECT_TRUE(LockForWriting(p[1], "pipe", 0ms).ok());
  ::close(p[0]);
  ::close(p[1]);
}

// An AtomicFile over an existing output holds its lock until Commit: a
// second writer of that output (an in-place one, or another AtomicFile) is
// refused meanwhile, and nothing of the output changes.
TEST(WriteLock, AnAtomicFileLocksTheOutputItReplaces) {
  testing::TempDir dir;
  std::string path = dir.path() + "/out.img";
  std::ofstream(path) << "old";
  auto a = AtomicFile::Create(path);
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  UniqueFd in_place = OpenRw(path);
  EXPECT_EQ(LockForWriting(in_place.get(), path, 0ms).code(), Code::kBusy);
  auto b = AtomicFile::Create(path);
  EXPECT_EQ(b.status().code(), Code::kBusy) << b.status().ToString();
  ASSERT_TRUE(a->Commit().ok());
  in_place = OpenRw(path);
  EXPECT_TRUE(LockForWriting(in_place.get(), path, 0ms).ok());
}

}  // namespace
}  // namespace flashpipe
