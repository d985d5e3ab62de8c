#include "base/atomic_file.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "base/fd_io.h"
#include "testing/temp_dir.h"

namespace flashpipe {
namespace {

std::span<const uint8_t> Bytes(std::string_view s) { return {reinterpret_cast<const uint8_t*>(s.data()), s.size()}; }

std::string Read(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void Write(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

std::vector<std::string> List(const std::string& dir) {
  std::vector<std::string> names;
  DIR* d = ::opendir(dir.c_str());
  while (const dirent* e = ::readdir(d)) {
    std::string n = e->d_name;
    if (n != "." && n != "..") names.push_back(n);
  }
  ::closedir(d);
  std::sort(names.begin(), names.end());
  return names;
}

TEST(AtomicFile, OutputAppearsOnlyAtCommit) {
  testing::TempDir dir;
  std::string out = dir.path() + "/out.img";
  auto f = AtomicFile::Create(out);
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  ASSERT_TRUE(WriteAll(f->fd(), Bytes("new"), f->temp_path()).ok());
  struct stat st;
  EXPECT_NE(::stat(out.c_str(), &st), 0);
  ASSERT_TRUE(f->Commit().ok());
  EXPECT_EQ(Read(out), "new");
  EXPECT_EQ(List(dir.path()), std::vector<std::string>{"out.img"});
}

TEST(AtomicFile, WithoutCommitTheOldContentStaysAndNoTempRemains) {
  testing::TempDir dir;
  std::string out = dir.path() + "/out.img";
  Write(out, "old");
  {
    auto f = AtomicFile::Create(out);
    ASSERT_TRUE(f.ok());
    ASSERT_TRUE(WriteAll(f->fd(), Bytes("partial"), f->temp_path()).ok());
  }
  EXPECT_EQ(Read(out), "old");
  EXPECT_EQ(List(dir.path()), std::vector<std::string>{"out.img"});
}

TEST(AtomicFile, KeepsTheModeOfAnExistingOutput) {
  testing::TempDir dir;
  std::string out = dir.path() + "/out.img";
  Write(out, "old");
  ASSERT_EQ(::chmod(out.c_str(), 0640), 0);
  auto f = AtomicFile::Create(out);
  ASSERT_TRUE(f.ok());
  ASSERT_TRUE(f->Commit().ok());
  struct stat st;
  ASSERT_EQ(::stat(out.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0640u);
}

TEST(AtomicFile, NewOutputGetsModeMaskedByUmask) {
  testing::TempDir dir;
  std::string out = dir.path() + "/out.img";
  mode_t old = ::umask(027);
  auto f = AtomicFile::Create(out);
  ::umask(old);
  ASSERT_TRUE(f.ok());
  ASSERT_TRUE(f->Commit().ok());
  struct stat st;
  ASSERT_EQ(::stat(out.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0640u);
}

TEST(AtomicFile, WritesThroughASymlinkAndKeepsTheLink) {
  testing::TempDir dir;
  std::string real = dir.path() + "/real.img", link = dir.path() + "/link.img";
  Write(real, "old");
  ASSERT_EQ(::symlink("real.img", link.c_str()), 0);
  auto f = AtomicFile::Create(link);
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(f->final_path(), dir.path() + "/real.img");
  ASSERT_TRUE(WriteAll(f->fd(), Bytes("new"), f->temp_path()).ok());
  ASSERT_TRUE(f->Commit().ok());
  struct stat st;
  ASSERT_EQ(::lstat(link.c_str(), &st), 0);
  EXPECT_TRUE(S_ISLNK(st.st_mode));
  EXPECT_EQ(Read(real), "new");
}


// For outputs in directories others can write: a link planted at the path is
// refused, and a link planted after Create is replaced, never written through.
TEST(AtomicFile, WithoutFollowingASymlinkIsRefusedOrReplaced) {
  testing::TempDir dir;
  std::string victim = dir.path() + "/victim", link = dir.path() + "/state";
  Write(victim, "precious");
  ASSERT_EQ(::symlink("victim", link.c_str()), 0);
  AtomicFile::Options no_follow;
  no_follow.symlink = AtomicFile::Options::Symlink::kRefuse;
  auto refused = AtomicFile::Create(link, no_follow);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("symbolic link"), std::string::npos) << refused.status().ToString();
  ASSERT_EQ(::unlink(link.c_str()), 0);
  auto f = AtomicFile::Create(link, no_follow);
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  ASSERT_EQ(::symlink("victim", link.c_str()), 0);  // planted between Create and Commit
  ASSERT_TRUE(WriteAll(f->fd(), Bytes("state"), f->temp_path()).ok());
  ASSERT_TRUE(f->Commit().ok());
  struct stat st;
  ASSERT_EQ(::lstat(link.c_str(), &st), 0);
  EXPECT_TRUE(S_ISREG(st.st_mode));
  EXPECT_EQ(Read(link), "state");
  EXPECT_EQ(Read(victim), "precious");
}
// For names a tool makes in a folder it was given: a symlink or a hard link
// planted at the name is replaced by the new file; what it pointed to keeps
// its bytes and its mode.
TEST(AtomicFile, ReplaceTakesThePlaceOfPlantedLinksNeverWritesThroughThem) {
  testing::TempDir dir;
  std::string victim = dir.path() + "/victim", soft = dir.path() + "/soft.img", hard = dir.path() + "/hard.img";
  Write(victim, "precious");
  ASSERT_EQ(::chmod(victim.c_str(), 0600), 0);
  ASSERT_EQ(::symlink("victim", soft.c_str()), 0);
  ASSERT_EQ(::link(victim.c_str(), hard.c_str()), 0);
  AtomicFile::Options replace;
  replace.symlink = AtomicFile::Options::Symlink::kReplace;
  for (const std::string& name : {soft, hard}) {
    auto f = AtomicFile::Create(name, replace);
    ASSERT_TRUE(f.ok()) << f.status().ToString();
    EXPECT_EQ(f->final_path(), name);
    ASSERT_TRUE(WriteAll(f->fd(), Bytes("partition"), f->temp_path()).ok());
    ASSERT_TRUE(f->Commit().ok());
    struct stat st;
    ASSERT_EQ(::lstat(name.c_str(), &st), 0);
    EXPECT_TRUE(S_ISREG(st.st_mode)) << name;
    EXPECT_EQ(Read(name), "partition");
  }
  EXPECT_EQ(Read(victim), "precious");
  struct stat st;
  ASSERT_EQ(::stat(victim.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_EQ(st.st_nlink, 1u);  // the hard link is gone, not the file
}

TEST(AtomicFile, RefusesADirectory) {
  testing::TempDir dir;
  auto f = AtomicFile::Create(dir.path());
  ASSERT_FALSE(f.ok());
  EXPECT_EQ(f.status().sys_errno(), EISDIR);
}

TEST(AtomicFile, TempNameIsRecognisableAndExclusive) {
  testing::TempDir dir;
  std::string out = dir.path() + "/out.img";
  auto f = AtomicFile::Create(out);
  ASSERT_TRUE(f.ok());
  std::string name = f->temp_path().substr(dir.path().size() + 1);
  EXPECT_TRUE(name.starts_with(fmt::format(".out.img.flashpipe-{}-", ::getpid()))) << name;
  struct stat st;
  ASSERT_EQ(::stat(f->temp_path().c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0077, 0u);  // private until committed
}

// A run killed before Commit leaves its temp; the next run for the same
// output removes it (its process is gone), and leaves other files alone.
TEST(AtomicFile, NextRunRemovesTempsOfDeadRuns) {
  testing::TempDir dir;
  std::string out = dir.path() + "/out.img";
  pid_t child = ::fork();
  if (child == 0) {
    auto f = AtomicFile::Create(out);
    ::_exit(f.ok() ? 0 : 1);  // no destructor: as if killed
  }
  int st = 0;
  ASSERT_EQ(::waitpid(child, &st, 0), child);
  ASSERT_EQ(WEXITSTATUS(st), 0);
  Write(dir.path() + "/.other.flashpipe-1-00000000", "x");
  ASSERT_EQ(List(dir.path()).size(), 2u);
  auto f = AtomicFile::Create(out);
  ASSERT_TRUE(f.ok());
  f->Abort();
  EXPECT_EQ(List(dir.path()), std::vector<std::string>{".other.flashpipe-1-00000000"});
}

TEST(AtomicFile, SyncClosesTheDescriptorAndCommitStillRenames) {
  testing::TempDir dir;
  std::string out = dir.path() + "/out.img";
  auto f = AtomicFile::Create(out);
  ASSERT_TRUE(f.ok());
  ASSERT_TRUE(WriteAll(f->fd(), Bytes("new"), f->temp_path()).ok());
  ASSERT_TRUE(f->Sync().ok());
  EXPECT_EQ(f->fd(), -1);
  EXPECT_EQ(List(dir.path()).size(), 1u);  // only the temp
  ASSERT_TRUE(f->Commit().ok());
  EXPECT_EQ(Read(out), "new");
  EXPECT_EQ(List(dir.path()), std::vector<std::string>{"out.img"});
}

std::vector<AtomicFile> Set(const std::string& dir, std::initializer_list<std::pair<const char*, const char*>> files) {
  std::vector<AtomicFile> set;
  for (auto [name, text] : files) {
    auto f = AtomicFile::Create(dir + "/" + name);
    EXPECT_TRUE(f.ok());
    EXPECT_TRUE(WriteAll(f->fd(), Bytes(text), f->temp_path()).ok());
    set.push_back(std::move(f).value());
  }
  return set;
}

TEST(AtomicFile, CommitTogetherReplacesTheSetAndRemovesStaleFiles) {
  testing::TempDir dir;
  const std::string d = dir.path();
  for (const char* n : {"p.0", "p.1", "p.2"}) Write(d + "/" + n, "old");
  Write(d + "/target", "kept");
  ASSERT_EQ(::symlink("target", (d + "/p.3").c_str()), 0);
  auto set = Set(d, {{"p.0", "new0"}, {"p.1", "new1"}});
  std::vector<std::string> stale = {d + "/p.2", d + "/p.3", d + "/p.9"};  // p.9 does not exist: fine
  ASSERT_TRUE(AtomicFile::CommitTogether(set, stale).ok());
  EXPECT_EQ(Read(d + "/p.0"), "new0");
  EXPECT_EQ(Read(d + "/p.1"), "new1");
  EXPECT_EQ(Read(d + "/target"), "kept");  // a stale symlink goes, not its target
  EXPECT_EQ(List(d), (std::vector<std::string>{"p.0", "p.1", "target"}));
}

TEST(AtomicFile, CommitTogetherChangesNothingWhenOneOutputCannotBeSynced) {
  testing::TempDir dir;
  const std::string d = dir.path();
  Write(d + "/p.0", "old0");
  Write(d + "/p.1", "old1");
  auto set = Set(d, {{"p.0", "new0"}, {"p.1", "new1"}});
  set[1].Abort();  // as if its sync had failed
  EXPECT_FALSE(AtomicFile::CommitTogether(set, std::vector<std::string>{d + "/p.1"}).ok());
  EXPECT_EQ(Read(d + "/p.0"), "old0");
  EXPECT_EQ(Read(d + "/p.1"), "old1");
  EXPECT_EQ(List(d), (std::vector<std::string>{"p.0", "p.1"}));
}

// The old files are moved aside under names of this process's temps, so a
// run killed between moving them and unlinking them leaves temps the next
// run removes, not files that look like outputs.
TEST(AtomicFile, CommitTogetherLeavesNoOldFileBehind) {
  testing::TempDir dir;
  const std::string d = dir.path();
  Write(d + "/p.0", "old");
  ASSERT_EQ(::chmod((d + "/p.0").c_str(), 0640), 0);
  auto set = Set(d, {{"p.0", "new"}});
  ASSERT_TRUE(AtomicFile::CommitTogether(set, {}).ok());
  EXPECT_EQ(List(d), std::vector<std::string>{"p.0"});
  struct stat st;
  ASSERT_EQ(::stat((d + "/p.0").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0640u);
}

TEST(AtomicFile, RemoveDeadTempsRemovesOnlyThatOutputsTempsOfDeadRuns) {
  testing::TempDir dir;
  const std::string d = dir.path();
  pid_t child = ::fork();
  if (child == 0) ::_exit(0);
  ASSERT_EQ(::waitpid(child, nullptr, 0), child);
  Write(d + fmt::format("/.p.7.flashpipe-{}-0badcafe", child), "dead");
  Write(d + fmt::format("/.p.7.flashpipe-{}-old", child), "dead");
  Write(d + fmt::format("/.p.7.flashpipe-{}-0badcafe", ::getpid()), "alive");
  Write(d + fmt::format("/.p.8.flashpipe-{}-0badcafe", child), "other output");
  RemoveDeadTemps(d + "/p.7");
  EXPECT_EQ(List(d), (std::vector<std::string>{fmt::format(".p.7.flashpipe-{}-0badcafe", ::getpid()),
                                               fmt::format(".p.8.flashpipe-{}-0badcafe", child)}));
}

TEST(AtomicFile, IsRegularOrAbsentTellsWhereToWriteInPlace) {
  testing::TempDir dir;
  EXPECT_TRUE(*IsRegularOrAbsent(dir.path() + "/missing"));
  Write(dir.path() + "/f", "x");
  EXPECT_TRUE(*IsRegularOrAbsent(dir.path() + "/f"));
  EXPECT_FALSE(*IsRegularOrAbsent("/dev/null"));
  EXPECT_FALSE(IsRegularOrAbsent(dir.path()).ok());
}

}  // namespace
}  // namespace flashpipe
