#include "fastboot/state.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <string>

#include "testing/temp_dir.h"

namespace flashpipe::fastboot {
namespace {

using testing::TempDir;

std::string Text(const std::string& path) {
  auto bytes = testing::ReadFile(path);
  return std::string(bytes.begin(), bytes.end());
}
void Put(const std::string& path, std::string_view text) { testing::WriteFile(path, {text.begin(), text.end()}); }

bool Mentions(const PersistentState& s, std::string_view what) {
  return std::any_of(s.warnings().begin(), s.warnings().end(),
                     [&](const std::string& w) { return w.find(what) != std::string::npos; });
}

TEST(PersistentStateTest, SurvivesReload) {
  TempDir dir;
  std::string path = dir / "state";
  {
    auto s = PersistentState::Open(path);
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    EXPECT_EQ(s->slot(), 'a');
    EXPECT_TRUE(s->SetSlot('b').ok());
    EXPECT_TRUE(s->SetLocked(true).ok());
    EXPECT_TRUE(s->critical_locked());
    EXPECT_TRUE(s->SetCriticalLocked(false).ok());
    EXPECT_FALSE(s->SetSlot('c').ok());
  }
  auto s = PersistentState::Open(path);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->slot(), 'b');
  EXPECT_TRUE(s->locked());
  EXPECT_FALSE(s->critical_locked());
  EXPECT_TRUE(s->warnings().empty());
}

// The temp file used to be "<state>.tmp", opened O_CREAT|O_TRUNC: a symlink
// planted there made the daemon (root) overwrite any file.
TEST(PersistentStateTest, SaveNeverWritesThroughAPlantedTempSymlink) {
  TempDir dir;
  std::string path = dir / "state", victim = dir / "victim";
  Put(victim, "precious");
  ASSERT_EQ(::symlink(victim.c_str(), (path + ".tmp").c_str()), 0);
  auto s = PersistentState::Open(path);
  ASSERT_TRUE(s.ok());
  ASSERT_TRUE(s->SetLocked(true).ok());
  EXPECT_EQ(Text(victim), "precious");
  EXPECT_NE(Text(path).find("locked=1\n"), std::string::npos);
}

// The first start (no file) follows initial_locked and writes the file, so
// that deleting nothing later makes a "first start" again.
TEST(PersistentStateTest, FirstStartFollowsInitialLockAndWritesTheFile) {
  TempDir dir;
  auto unlocked = PersistentState::Open(dir / "a", {.initial_locked = false});
  ASSERT_TRUE(unlocked.ok());
  EXPECT_FALSE(unlocked->locked());
  EXPECT_TRUE(unlocked->critical_locked());
  EXPECT_NE(Text(dir / "a").find("locked=0\n"), std::string::npos);
  auto locked = PersistentState::Open(dir / "b", {.initial_locked = true});
  ASSERT_TRUE(locked.ok());
  EXPECT_TRUE(locked->locked());
  EXPECT_NE(Text(dir / "b").find("locked=1\n"), std::string::npos);
}

// A file that exists but is not a good state file means locked, whatever
// --initial-lock says, and the warning says why.
TEST(PersistentStateTest, EveryBadFileMeansLocked) {
  struct Case {
    std::string content;
    std::string why;
  };
  const Case cases[] = {
      {"", "is empty"},
      {"slot=a\ncritical_locked=0\n", "no locked= line"},
      {"slot=a\nlocked=0\nlocked=0\n", "'locked=0' repeated"},
      {"slot=a\nlocked=2\n", "'locked=2' not understood"},
      {"locked=0\ngarbage\n", "'garbage' not understood"},
      {"locked=0\nslot=", "'slot=' not understood"},
      {std::string(5000, '#'), "over 4096 bytes"},
  };
  for (const auto& c : cases) {
    TempDir dir;
    Put(dir / "state", c.content);
    auto s = PersistentState::Open(dir / "state", {.initial_locked = false});
    ASSERT_TRUE(s.ok()) << c.why << ": " << s.status().ToString();
    EXPECT_TRUE(s->locked()) << c.why;
    EXPECT_TRUE(s->critical_locked()) << c.why;
    EXPECT_TRUE(Mentions(*s, c.why)) << c.why << ": " << (s->warnings().empty() ? "" : s->warnings()[0]);
    EXPECT_TRUE(Mentions(*s, "starting locked")) << c.why;
  }
}

TEST(PersistentStateTest, UnreadableFileMeansLocked) {
  TempDir dir;
  ASSERT_EQ(::mkdir((dir / "state").c_str(), 0700), 0);  // exists, cannot be read as a file
  auto s = PersistentState::Open(dir / "state");
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_TRUE(s->locked());
  EXPECT_TRUE(Mentions(*s, "not a regular file")) << s->warnings()[0];
}

TEST(PersistentStateTest, ControlCharactersOfABadLineAreEscaped) {
  TempDir dir;
  Put(dir / "state", "locked=0\x1b[2J\n");
  auto s = PersistentState::Open(dir / "state");
  ASSERT_TRUE(s.ok());
  ASSERT_EQ(s->warnings().size(), 1u);
  EXPECT_NE(s->warnings()[0].find("'locked=0\\x1b[2J'"), std::string::npos) << s->warnings()[0];
  EXPECT_EQ(s->warnings()[0].find('\x1b'), std::string::npos);
}

TEST(PersistentStateTest, ForceLockedStartsLockedAndSavesIt) {
  TempDir dir;
  Put(dir / "state", "slot=b\nlocked=0\ncritical_locked=0\n");
  auto s = PersistentState::Open(dir / "state", {.force_locked = true});
  ASSERT_TRUE(s.ok());
  EXPECT_TRUE(s->locked());
  EXPECT_TRUE(s->critical_locked());
  EXPECT_EQ(s->slot(), 'b');
  EXPECT_EQ(Text(dir / "state"), "# flashpipe serve state\nslot=b\nlocked=1\ncritical_locked=1\n");
}

// Saving fails once the directory is gone: a lock holds anyway (and says
// so), an unlock does not happen.
TEST(PersistentStateTest, ALockThatCannotBeSavedStillHoldsAnUnlockDoesNot) {
  auto dir = std::make_unique<TempDir>();
  auto s = PersistentState::Open(*dir / "state");
  ASSERT_TRUE(s.ok());
  ASSERT_FALSE(s->locked());
  dir.reset();
  Status lock = s->SetLocked(true);
  EXPECT_FALSE(lock.ok());
  EXPECT_NE(lock.message().find("not saved"), std::string::npos) << lock.ToString();
  EXPECT_TRUE(s->locked());
  EXPECT_FALSE(s->SetLocked(false).ok());
  EXPECT_TRUE(s->locked());
  EXPECT_FALSE(s->SetCriticalLocked(false).ok());
  EXPECT_TRUE(s->critical_locked());
  EXPECT_FALSE(s->SetSlot('b').ok());
  EXPECT_EQ(s->slot(), 'a');
}

// A directory everyone can write: without the sticky bit it is refused; with
// it (/tmp) only a regular file of our own user is used, never a symlink.
TEST(PersistentStateTest, SharedDirectories) {
  TempDir dir;
  ASSERT_EQ(::chmod(dir.path().c_str(), 0777), 0);
  auto open = PersistentState::Open(dir / "state");
  ASSERT_FALSE(open.ok());
  EXPECT_NE(open.status().message().find("no sticky bit"), std::string::npos) << open.status().ToString();

  ASSERT_EQ(::chmod(dir.path().c_str(), 01777), 0);
  Put(dir / "victim", "precious");
  ASSERT_EQ(::symlink("victim", (dir / "state").c_str()), 0);
  open = PersistentState::Open(dir / "state");
  ASSERT_FALSE(open.ok());
  EXPECT_NE(open.status().message().find("symbolic link"), std::string::npos) << open.status().ToString();
  EXPECT_EQ(Text(dir / "victim"), "precious");

  ASSERT_EQ(::unlink((dir / "state").c_str()), 0);
  auto s = PersistentState::Open(dir / "state");
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  ASSERT_EQ(::unlink((dir / "state").c_str()), 0);
  ASSERT_EQ(::symlink("victim", (dir / "state").c_str()), 0);  // planted while the daemon runs
  EXPECT_FALSE(s->SetLocked(true).ok());
  EXPECT_EQ(Text(dir / "victim"), "precious");

  if (::geteuid() == 0) {  // someone else's file there is not trusted either
    ASSERT_EQ(::unlink((dir / "state").c_str()), 0);
    Put(dir / "state", "locked=0\n");
    ASSERT_EQ(::chown((dir / "state").c_str(), 12345, 12345), 0);
    open = PersistentState::Open(dir / "state");
    ASSERT_FALSE(open.ok());
    EXPECT_NE(open.status().message().find("belongs to uid 12345"), std::string::npos) << open.status().ToString();
  }
}

}  // namespace
}  // namespace flashpipe::fastboot
