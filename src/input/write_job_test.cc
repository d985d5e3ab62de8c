// RunWriteJob on files in a temp dir: nothing changes before every target and
// the image passed their checks, a failed write leaves file targets as they
// were, inputs are never outputs, and the report's typed fields.
#include "input/write_job.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>

#include "testing/sparse_builder.h"
#include "testing/temp_dir.h"

namespace flashpipe::input {
namespace {

using testing::ReadFile;
using testing::WriteFile;

const std::vector<uint8_t> kOld = {'o', 'l', 'd', '\n'};

class WriteJobTest : public ::testing::Test {
 protected:
  void SetUp() override {
    testing::SparseBuilder b(4096);
    b.RawBlocks(40, 1).Fill(20, 0).RawBlocks(10, 2);
    sparse_ = b.Build();
    expanded_ = b.expanded();
    image_ = dir_ / "a.simg";
    WriteFile(image_, sparse_);
  }
  std::string Old(const std::string& name) {
    WriteFile(dir_ / name, kOld);
    return dir_ / name;
  }
  WriteReport Write(const std::string& image, std::vector<std::string> targets, bool in_place = false) {
    WriteRequest r;
    r.image = image;
    r.targets = std::move(targets);
    r.in_place = in_place;
    Progress p(nullptr, ProgressMode::kOff);
    return RunWriteJob(r, &p);
  }
  bool TempFilesLeft() const {
    for (const auto& e : std::filesystem::directory_iterator(dir_.path()))
      if (e.path().filename().string().find(".flashpipe-") != std::string::npos) return true;
    return false;
  }
  testing::TempDir dir_;
  std::vector<uint8_t> sparse_, expanded_;
  std::string image_;
};

TEST_F(WriteJobTest, WritesAFileBesideAndRenamesIt) {
  std::string t = Old("t");
  ASSERT_EQ(chmod(t.c_str(), 0640), 0);
  WriteReport r = Write(image_, {t});
  ASSERT_TRUE(r.status.ok()) << r.status.ToString();
  EXPECT_EQ(ReadFile(t), expanded_);
  struct stat st;
  ASSERT_EQ(stat(t.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0640u);
  EXPECT_FALSE(TempFilesLeft());
  EXPECT_FALSE(r.partly_written_to.has_value());
}

TEST_F(WriteJobTest, InPlaceWritesIntoTheSameFile) {
  std::string t = Old("t");
  struct stat before, after;
  ASSERT_EQ(stat(t.c_str(), &before), 0);
  WriteReport r = Write(image_, {t}, /*in_place=*/true);
  ASSERT_TRUE(r.status.ok()) << r.status.ToString();
  ASSERT_EQ(stat(t.c_str(), &after), 0);
  EXPECT_EQ(before.st_ino, after.st_ino);
  EXPECT_EQ(ReadFile(t), expanded_);
}

TEST_F(WriteJobTest, ALaterBadTargetLeavesEarlierTargetsUntouched) {
  std::string t = Old("t");
  std::filesystem::create_directory(dir_ / "adir");
  for (const std::string& bad : {dir_ / "adir", dir_ / "no/such/dir", std::string("/dev/flashpipe-no-such")}) {
    WriteReport r = Write(image_, {t, bad});
    EXPECT_FALSE(r.status.ok()) << bad;
    EXPECT_EQ(ReadFile(t), kOld) << bad << ": " << r.status.ToString();
    EXPECT_FALSE(r.partly_written_to.has_value());
  }
  EXPECT_FALSE(TempFilesLeft());
}

TEST_F(WriteJobTest, AFailedWriteLeavesTheOldContent) {
  std::string t = Old("t");
  auto cut = sparse_;
  cut.resize(cut.size() - 5000);
  std::string bad = dir_ / "cut.simg";
  WriteFile(bad, cut);
  WriteReport r = Write(bad, {t, dir_ / "new"});
  ASSERT_EQ(r.status.code(), Code::kCorrupt) << r.status.ToString();
  EXPECT_EQ(ReadFile(t), kOld);
  EXPECT_FALSE(std::filesystem::exists(dir_ / "new"));
  EXPECT_FALSE(TempFilesLeft());
  EXPECT_FALSE(r.partly_written_to.has_value()) << "no target was written in place";
}

TEST_F(WriteJobTest, AFailedInPlaceWriteSaysHowFarItGot) {
  std::string t = Old("t");
  auto cut = sparse_;
  cut.resize(cut.size() - 5000);
  std::string bad = dir_ / "cut.simg";
  WriteFile(bad, cut);
  WriteReport r = Write(bad, {t}, /*in_place=*/true);
  ASSERT_EQ(r.status.code(), Code::kCorrupt) << r.status.ToString();
  ASSERT_TRUE(r.partly_written_to.has_value());
  EXPECT_LE(*r.partly_written_to, expanded_.size());
  EXPECT_NE(r.status.message().find(t + " partly written"), std::string::npos) << r.status.ToString();
}

TEST_F(WriteJobTest, TheSameTargetTwiceIsRefused) {
  std::string t = Old("t");
  ASSERT_EQ(link(t.c_str(), (dir_ / "hard").c_str()), 0);
  ASSERT_EQ(symlink((dir_ / "new").c_str(), (dir_ / "sym").c_str()), 0);
  std::vector<std::vector<std::string>> pairs = {
      {t, t}, {t, dir_ / "hard"}, {dir_ / "new", dir_ / "new"}, {dir_ / "new", dir_ / "sym"}};
  for (const auto& targets : pairs) {
    WriteReport r = Write(image_, targets);
    EXPECT_EQ(r.status.code(), Code::kInvalidArgument) << targets[1];
    EXPECT_NE(r.status.message().find("given twice"), std::string::npos) << r.status.ToString();
  }
  EXPECT_EQ(ReadFile(t), kOld);
  EXPECT_FALSE(std::filesystem::exists(dir_ / "new"));
}

TEST_F(WriteJobTest, AnInputIsNeverAnOutput) {
  ASSERT_EQ(symlink(image_.c_str(), (dir_ / "img.link").c_str()), 0);
  WriteReport r = Write(image_, {dir_ / "img.link"});
  EXPECT_EQ(r.status.code(), Code::kInvalidArgument);
  EXPECT_NE(r.status.message().find("is the image itself"), std::string::npos) << r.status.ToString();
  std::string part2 = dir_ / "b.simg";
  WriteFile(part2, sparse_);
  r = Write(image_ + "," + part2, {part2});
  EXPECT_NE(r.status.message().find("is part 2 of the image"), std::string::npos) << r.status.ToString();
  EXPECT_EQ(ReadFile(image_), sparse_);
  EXPECT_EQ(ReadFile(part2), sparse_);
}

TEST_F(WriteJobTest, OtherOutputsAreNeitherTargetsNorInputs) {
  std::string t = Old("t");
  for (const std::string& out : {image_, t}) {
    WriteRequest req;
    req.image = image_;
    req.targets = {t};
    req.other_outputs = {{out, "the --json report"}};
    Progress p(nullptr, ProgressMode::kOff);
    WriteReport r = RunWriteJob(req, &p);
    EXPECT_EQ(r.status.code(), Code::kInvalidArgument) << out;
    EXPECT_NE(r.status.message().find("the --json report"), std::string::npos) << r.status.ToString();
    r = VerifyOnly(req, &p);
    EXPECT_EQ(r.status.code(), Code::kInvalidArgument) << out << ": " << r.status.ToString();
  }
  EXPECT_EQ(ReadFile(t), kOld);
  EXPECT_EQ(ReadFile(image_), sparse_);
}

TEST_F(WriteJobTest, EmptyAndImpossibleImagesChangeNothing) {
  std::string t = Old("t");
  std::string empty = dir_ / "empty.img";
  WriteFile(empty, {});
  WriteReport r = Write(empty, {t});
  EXPECT_EQ(r.status.code(), Code::kInvalidArgument) << r.status.ToString();
  // blk_sz 0xFFFFFFFC x total_blks 0xFFFFFFFF: larger than any file.
  auto huge = sparse_;
  for (int i = 12; i < 20; ++i) huge[i] = 0xFF;
  huge[12] = 0xFC;
  std::string h = dir_ / "huge.simg";
  WriteFile(h, huge);
  r = Write(h, {t});
  EXPECT_EQ(r.status.code(), Code::kNoSpace) << r.status.ToString();
  EXPECT_EQ(ReadFile(t), kOld);
  EXPECT_FALSE(TempFilesLeft());
}

TEST_F(WriteJobTest, VerifyOnlyMismatchIsTypedNotWorded) {
  std::string t = Old("t");
  ASSERT_TRUE(Write(image_, {t}).status.ok());
  auto bytes = ReadFile(t);
  bytes[5000] ^= 1;
  WriteFile(t, bytes);
  WriteRequest req;
  req.image = image_;
  req.targets = {t};
  Progress p(nullptr, ProgressMode::kOff);
  WriteReport r = VerifyOnly(req, &p);
  EXPECT_EQ(r.status.code(), Code::kMismatch) << r.status.ToString();
  EXPECT_EQ(r.verify, VerifyOutcome::kFailed);
  EXPECT_NE(ReportJson(r).find("\"error_class\": \"verify_mismatch\""), std::string::npos) << ReportJson(r);
}

TEST(WriteReportTest, ErrorClassesComeFromTheCode) {
  EXPECT_EQ(ErrorClass(Code::kNoSpace), "too_small");
  EXPECT_EQ(ErrorClass(Code::kCorrupt), "corrupt_image");
  EXPECT_EQ(ErrorClass(Code::kBusy), "busy");
  EXPECT_EQ(ErrorClass(Code::kIoError), "io_error");
  EXPECT_EQ(ErrorClass(Code::kMismatch), "verify_mismatch");
  EXPECT_EQ(ErrorClass(Code::kInvalidArgument), "invalid_argument");
  for (int c = 1; c <= static_cast<int>(Code::kMismatch); ++c) EXPECT_FALSE(ErrorClass(static_cast<Code>(c)).empty());
  EXPECT_EQ(VerifyName(VerifyOutcome::kNotRun), "not run");
  EXPECT_EQ(VerifyName(VerifyOutcome::kFailed), "failed");
}

TEST(WriteReportTest, JsonAddsErrorClassAndPartlyWrittenTo) {
  WriteReport r;
  r.image = "-";
  r.status = NoSpace("beyond the end");
  r.partly_written_to = 16 << 20;
  std::string j = ReportJson(r);
  EXPECT_NE(j.find("\"error_class\": \"too_small\""), std::string::npos) << j;
  EXPECT_NE(j.find("\"partly_written_to\": 16777216"), std::string::npos) << j;
  EXPECT_NE(j.find("\"verify\": \"not run\""), std::string::npos) << j;
  r.status = Status::Ok();
  r.partly_written_to.reset();
  j = ReportJson(r);
  EXPECT_NE(j.find("\"error_class\": null, \"partly_written_to\": null"), std::string::npos) << j;
}

}  // namespace
}  // namespace flashpipe::input
