#include "powercut/ext4_checkers.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>

#include "powercut/tool_run.h"
#include "testing/temp_dir.h"

namespace flashpipe::powercut {
namespace {

void Put(const std::string& path, const std::string& text) { std::ofstream(path, std::ios::binary) << text; }

std::vector<uint8_t> Slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<uint8_t>((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

class Ext4CheckersTest : public ::testing::Test {
 protected:
  // An 8 MiB ext4 image of `root`, as mkfs.ext4 -d makes it.
  std::vector<uint8_t> Image(const std::string& root) {
    const std::string img = dir_.path() + "/fs.img";
    ::unlink(img.c_str());
    auto r = RunTool({"mkfs.ext4", "-q", "-F", "-b", "1024", "-d", root, img, "8M"});
    if (!r.ok() && r.status().code() == Code::kNotFound) return {};
    EXPECT_TRUE(r.ok() && r->exit_code == 0) << (r.ok() ? r->output : r.status().ToString());
    return Slurp(img);
  }
  std::string Root() {
    const std::string root = dir_.path() + "/root";
    ::mkdir(root.c_str(), 0755);
    return root;
  }
  flashpipe::testing::TempDir dir_;
};

TEST_F(Ext4CheckersTest, StateFileReadsAsTheDaemonReadsIt) {
  const std::string root = Root();
  Put(root + "/state", "slot=b\nlocked=1\ncritical_locked=0\n");
  auto img = Image(root);
  if (img.empty()) GTEST_SKIP() << "mkfs.ext4 not installed";
  auto c = StateFileChecker::Create("/state");
  ASSERT_TRUE(c.ok());
  auto r = (*c)->Read(img);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->text, "slot b, locked, critical partitions unlocked");
  EXPECT_FALSE(r->fail_closed);
  auto torn = (*c)->ReadContent(std::vector<uint8_t>{'s', 'l', 'o'});
  ASSERT_TRUE(torn.ok());
  EXPECT_EQ(torn->text, "slot a, locked, critical partitions locked");
  EXPECT_TRUE(torn->fail_closed);
  auto missing = (*c)->ReadContent(std::nullopt);
  ASSERT_TRUE(missing.ok());
  EXPECT_EQ(missing->text, "slot a, unlocked, critical partitions locked (no state file: a first start)");
  EXPECT_FALSE(missing->fail_closed);
}

TEST_F(Ext4CheckersTest, FileAndPartSetReadings) {
  const std::string root = Root();
  ::mkdir((root + "/out").c_str(), 0755);
  Put(root + "/out/a.img", "hello");
  Put(root + "/out/s.simg.1", "part one");
  auto img = Image(root);
  if (img.empty()) GTEST_SKIP() << "mkfs.ext4 not installed";
  auto f = FileChecker::Create("/out/a.img");
  ASSERT_TRUE(f.ok());
  auto r = (*f)->Read(img);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->text, "sha256 2cf24dba5fb0a30e, 5 bytes");
  auto g = FileChecker::Create("/out/b.img");
  ASSERT_TRUE(g.ok());
  EXPECT_EQ((*g)->Read(img)->text, "absent");
  auto p = PartSetChecker::Create("/out/s.simg");
  ASSERT_TRUE(p.ok());
  auto set = (*p)->Read(img);
  ASSERT_TRUE(set.ok()) << set.status().ToString();
  EXPECT_TRUE(set->fail_closed);
  EXPECT_EQ(set->text.rfind("no s.simg.0, an incomplete set (1: sha256 ", 0), 0u) << set->text;
}

TEST_F(Ext4CheckersTest, AFileSystemFsckCannotRepairReadsAsSuch) {
  const std::string root = Root();
  Put(root + "/state", "locked=0\n");
  auto img = Image(root);
  if (img.empty()) GTEST_SKIP() << "mkfs.ext4 not installed";
  std::fill(img.begin(), img.begin() + (64 << 10), 0xFF);  // both superblock and the group descriptors
  auto c = FileChecker::Create("/state");
  ASSERT_TRUE(c.ok());
  auto r = (*c)->Read(img);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->text.rfind("e2fsck could not repair the file system", 0), 0u) << r->text;
}

TEST(Ext4PathTest, PathsMustBeAbsoluteAndPlain) {
  EXPECT_TRUE(CheckImagePath("/a/b.img").ok());
  EXPECT_FALSE(CheckImagePath("a").ok());
  EXPECT_FALSE(CheckImagePath("/a b").ok());
  EXPECT_FALSE(CheckImagePath("/a\"b").ok());
}

}  // namespace
}  // namespace flashpipe::powercut
