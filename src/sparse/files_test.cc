// Tests of InputFile / OutputFile: which files are refused as outputs, and
// that Check() creates nothing.
#include "sparse/files.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>

#include "testing/temp_dir.h"

namespace flashpipe::sparse {
namespace {

using testing::ReadFile;
using testing::TempDir;
using testing::WriteFile;

size_t Entries(const std::string& dir) {
  return static_cast<size_t>(std::distance(std::filesystem::directory_iterator(dir), {}));
}

std::vector<InputFile> Inputs(std::initializer_list<std::string> paths) {
  std::vector<InputFile> v;
  for (const std::string& p : paths) {
    auto in = OpenInput(p);
    EXPECT_TRUE(in.ok()) << in.status().ToString();
    v.push_back(std::move(in).value());
  }
  return v;
}

// Points fd `target` (0 or 1) at `path` for the life of the object.
class Redirect {
 public:
  Redirect(int target, const std::string& path, int flags) : target_(target), saved_(::dup(target)) {
    int fd = ::open(path.c_str(), flags, 0644);
    ::dup2(fd, target);
    ::close(fd);
  }
  ~Redirect() {
    ::dup2(saved_, target_);
    ::close(saved_);
  }

 private:
  int target_, saved_;
};

TEST(InputFileTest, KnowsItsFileAndSize) {
  TempDir dir;
  WriteFile(dir / "in", std::vector<uint8_t>(5000, 1));
  auto in = OpenInput(dir / "in");
  ASSERT_TRUE(in.ok());
  EXPECT_TRUE(in->holds_data);
  EXPECT_TRUE(in->seekable);
  EXPECT_EQ(in->size, 5000u);
  EXPECT_EQ(in->name, dir / "in");
  Redirect stdin_from(STDIN_FILENO, dir / "in", O_RDONLY);
  auto std_in = OpenInput("-");
  ASSERT_TRUE(std_in.ok());
  EXPECT_EQ(std_in->name, "stdin");
  EXPECT_EQ(std_in->id, in->id);
}

TEST(InputFileTest, DirectoryAndMissingFileAreErrors) {
  TempDir dir;
  EXPECT_EQ(OpenInput(dir.path()).status().ToString(), dir.path() + " is a directory: Is a directory");
  EXPECT_EQ(OpenInput(dir / "nope").status().ToString(), "open " + (dir / "nope") + ": No such file or directory");
}

TEST(OutputFileTest, TheInputIsRefusedByPathSymlinkAndHardLink) {
  TempDir dir;
  WriteFile(dir / "in", {1, 2, 3});
  ASSERT_EQ(::symlink("in", (dir / "sym").c_str()), 0);
  ASSERT_EQ(::link((dir / "in").c_str(), (dir / "hard").c_str()), 0);
  auto inputs = Inputs({dir / "in"});
  for (const char* name : {"in", "sym", "hard"}) {
    auto out = OutputFile::Check(dir / name, inputs);
    ASSERT_FALSE(out.ok()) << name;
    EXPECT_EQ(out.status().message(),
              "output " + (dir / name) + " is the same file as input " + (dir / "in") + ": refusing to overwrite an input");
  }
  EXPECT_EQ(ReadFile(dir / "in"), (std::vector<uint8_t>{1, 2, 3}));
}

TEST(OutputFileTest, StdoutThatIsAnInputIsRefusedAndSaysItWasEmptied) {
  TempDir dir;
  WriteFile(dir / "in", {1, 2, 3});
  auto inputs = Inputs({dir / "in"});
  {
    Redirect stdout_to(STDOUT_FILENO, dir / "in", O_WRONLY | O_APPEND);  // >> in
    auto out = OutputFile::Check("-", inputs);
    ASSERT_FALSE(out.ok());
    EXPECT_EQ(out.status().message(),
              "output stdout is the same file as input " + (dir / "in") + ": refusing to overwrite an input");
  }
  {
    Redirect stdout_to(STDOUT_FILENO, dir / "in", O_WRONLY | O_TRUNC);  // > in
    auto out = OutputFile::Check("-", inputs);
    ASSERT_FALSE(out.ok());
    EXPECT_EQ(out.status().message(), "output stdout is the same file as input " + (dir / "in") +
                                          ": refusing to overwrite an input (the shell's redirection has already "
                                          "emptied it)");
  }
}

TEST(OutputFileTest, StdinThatIsTheOutputIsRefused) {
  TempDir dir;
  WriteFile(dir / "out", {1, 2, 3});
  Redirect stdin_from(STDIN_FILENO, dir / "out", O_RDONLY);
  auto inputs = Inputs({"-"});
  auto out = OutputFile::Check(dir / "out", inputs);
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().message(),
            "output " + (dir / "out") + " is the same file as input stdin: refusing to overwrite an input");
}

// A pipe that is both stdin and stdout (inetd, socat) carries two streams.
TEST(OutputFileTest, StreamsAreNotComparedAsFiles) {
  int p[2];
  ASSERT_EQ(::pipe(p), 0);
  int saved_in = ::dup(STDIN_FILENO), saved_out = ::dup(STDOUT_FILENO);
  ::dup2(p[0], STDIN_FILENO);
  ::dup2(p[0], STDOUT_FILENO);  // the same pipe inode on both
  auto inputs = Inputs({"-"});
  auto out = OutputFile::Check("-", inputs);
  ::dup2(saved_in, STDIN_FILENO);
  ::dup2(saved_out, STDOUT_FILENO);
  for (int fd : {saved_in, saved_out, p[0], p[1]}) ::close(fd);
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(out->kind(), OutputFile::Kind::kStream);
  EXPECT_FALSE(out->seekable());
}

TEST(OutputFileTest, CheckCreatesNothingAndCommitMakesTheFile) {
  TempDir dir;
  WriteFile(dir / "in", {1});
  auto inputs = Inputs({dir / "in"});
  auto out = OutputFile::Check(dir / "out", inputs);
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(out->kind(), OutputFile::Kind::kFile);
  EXPECT_TRUE(out->seekable());
  EXPECT_EQ(Entries(dir.path()), 1u);
  ASSERT_TRUE(out->Open().ok());
  ASSERT_EQ(::write(out->fd(), "new", 3), 3);
  EXPECT_FALSE(std::filesystem::exists(dir / "out"));
  ASSERT_TRUE(out->Commit().ok());
  EXPECT_EQ(ReadFile(dir / "out"), (std::vector<uint8_t>{'n', 'e', 'w'}));
  EXPECT_EQ(Entries(dir.path()), 2u);
}

TEST(OutputFileTest, KindsOfOutput) {
  TempDir dir;
  auto null = OutputFile::Check("/dev/null", {});
  ASSERT_TRUE(null.ok());
  EXPECT_EQ(null->kind(), OutputFile::Kind::kStream);
  EXPECT_FALSE(null->seekable());
  EXPECT_EQ(OutputFile::Check(dir.path(), {}).status().ToString(), dir.path() + " is a directory: Is a directory");
  Redirect stdout_to(STDOUT_FILENO, dir / "log", O_WRONLY | O_CREAT | O_APPEND);
  auto appending = OutputFile::Check("-", {});
  ASSERT_TRUE(appending.ok());
  EXPECT_EQ(appending->kind(), OutputFile::Kind::kStream);
  EXPECT_FALSE(appending->seekable());  // pwrite would append
}

}  // namespace
}  // namespace flashpipe::sparse
