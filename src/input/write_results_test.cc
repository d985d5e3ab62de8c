// The report per target of RunWriteJob: what each target holds when a check,
// a write, a read-back or a signal stopped the run (a failing target does
// not hide the others), the image's digest and size, and the block map
// found beside the image.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <csignal>
#include <filesystem>

#include "input/bmap.h"
#include "input/find_bmap.h"
#include "input/write_job.h"
#include "testing/fault_queue.h"
#include "testing/compress.h"
#include "testing/sparse_builder.h"
#include "testing/temp_dir.h"

namespace flashpipe::input {
namespace {

using testing::ReadFile;
using testing::WriteFile;

const std::vector<uint8_t> kOld = {'o', 'l', 'd', '\n'};

std::string Sha256(std::span<const uint8_t> bytes) {
  auto d = Digest::Create("sha256");
  d->Update(bytes);
  return d->HexFinal();
}

class WriteResultsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    testing::SparseBuilder b(4096);
    b.RawBlocks(300, 1).Fill(200, 0).DontCare(100).RawBlocks(300, 2).Fill(50, 0x01020304);
    sparse_ = b.Build();
    expanded_ = b.expanded();
    image_ = dir_ / "a.simg";
    WriteFile(image_, sparse_);
  }
  std::string Old(const std::string& name) {
    WriteFile(dir_ / name, kOld);
    return dir_ / name;
  }
  WriteRequest Request(std::vector<std::string> targets) {
    WriteRequest r;
    r.image = image_;
    r.targets = std::move(targets);
    r.writer.request_size = 64 << 10;
    return r;
  }
  // Every target's queue goes through a FaultQueue (faults_[i]).
  void Faulty(WriteRequest& r) {
    r.queue_hook = [this](size_t i, io::IoQueue* q) {
      if (faults_.size() <= i) faults_.resize(i + 1);
      faults_[i] = std::make_unique<testing::FaultQueue>(q);
      if (setup_) setup_(i, *faults_[i]);
      return faults_[i].get();
    };
  }
  WriteReport Run(const WriteRequest& r) {
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
  std::vector<std::unique_ptr<testing::FaultQueue>> faults_;
  std::function<void(size_t, testing::FaultQueue&)> setup_;
};

TEST_F(WriteResultsTest, EveryTargetCheckedAndReportedWithTheImageSize) {
  std::string a = Old("a"), c = Old("c");
  std::filesystem::create_directory(dir_ / "adir");
  WriteReport r = Run(Request({a, dir_ / "adir", c, dir_ / "no/such/dir/x"}));
  ASSERT_EQ(r.status.code(), Code::kInvalidArgument) << r.status.ToString();
  ASSERT_EQ(r.results.size(), 4u);
  EXPECT_EQ(r.results[1].status.code(), Code::kInvalidArgument);
  EXPECT_FALSE(r.results[1].stopped_by_other);
  EXPECT_EQ(r.results[3].status.code(), Code::kIoError) << "the fourth target was checked too";
  for (size_t i : {0, 2}) {
    EXPECT_EQ(r.results[i].state, TargetState::kNotStarted);
    EXPECT_TRUE(r.results[i].stopped_by_other);
    EXPECT_EQ(r.results[i].kind, TargetKind::kFile);
    EXPECT_FALSE(r.results[i].ok);
  }
  ASSERT_TRUE(r.image_size.has_value()) << "the image was opened although a target failed";
  EXPECT_EQ(*r.image_size, expanded_.size());
  EXPECT_EQ(r.kind, "sparse");
  std::string j = ReportJson(r);
  EXPECT_NE(j.find("\"error_class\": \"other_target_failed\""), std::string::npos) << j;
  EXPECT_EQ(ReadFile(a), kOld);
  EXPECT_EQ(ReadFile(c), kOld);
}

TEST_F(WriteResultsTest, AWriteFailureNamesItsTargetAndTheStateOfTheOthers) {
  std::string a = Old("a"), b = Old("b");
  WriteRequest req = Request({a, b, dir_ / "new"});
  req.in_place = true;  // a and b in place: changed as they are written
  setup_ = [](size_t i, testing::FaultQueue& q) {
    if (i == 1) q.FailWrites(512 << 10, EIO);
  };
  Faulty(req);
  WriteReport r = Run(req);
  ASSERT_EQ(r.status.code(), Code::kIoError) << r.status.ToString();
  ASSERT_EQ(r.results.size(), 3u);
  EXPECT_FALSE(r.results[1].stopped_by_other);
  EXPECT_EQ(r.results[1].status.code(), Code::kIoError);
  EXPECT_EQ(r.results[1].state, TargetState::kPartial);
  EXPECT_TRUE(r.results[0].stopped_by_other);
  EXPECT_EQ(r.results[0].state, TargetState::kPartial);
  ASSERT_TRUE(r.results[0].partly_written_to.has_value());
  EXPECT_TRUE(r.results[2].stopped_by_other);
  EXPECT_EQ(r.results[2].state, TargetState::kUnchanged);
  EXPECT_EQ(r.results[2].kind, TargetKind::kNewFile);
  EXPECT_FALSE(std::filesystem::exists(dir_ / "new"));
  EXPECT_FALSE(TempFilesLeft());
  EXPECT_NE(TargetLine(r.results[0], r).find("partially written, do not use"), std::string::npos);
  EXPECT_EQ(TargetLine(r.results[2], r), dir_ / "new" + std::string(": not created"));
}

TEST_F(WriteResultsTest, AReadBackFailureKeepsTheTargetsVerifiedBeforeIt) {
  std::string a = Old("a"), b = Old("b"), c = Old("c");
  WriteRequest req = Request({a, b, c});
  req.writer.verify = true;
  setup_ = [](size_t i, testing::FaultQueue& q) {
    if (i == 1) q.FailReads(0, EIO);
  };
  Faulty(req);
  WriteReport r = Run(req);
  ASSERT_EQ(r.status.code(), Code::kIoError) << r.status.ToString();
  EXPECT_EQ(r.results[0].state, TargetState::kWritten);
  EXPECT_EQ(r.results[0].verify, VerifyOutcome::kPassed);
  EXPECT_TRUE(r.results[0].ok);
  EXPECT_TRUE(r.results[0].status.ok());
  EXPECT_EQ(ReadFile(a), expanded_) << "verified before the failure: renamed into place";
  EXPECT_EQ(r.results[1].state, TargetState::kUnchanged);
  EXPECT_FALSE(r.results[1].stopped_by_other);
  EXPECT_EQ(r.results[2].state, TargetState::kUnchanged) << "never verified: not renamed";
  EXPECT_EQ(r.results[2].verify, VerifyOutcome::kNotRun);
  EXPECT_TRUE(r.results[2].stopped_by_other);
  EXPECT_EQ(ReadFile(b), kOld);
  EXPECT_EQ(ReadFile(c), kOld);
  EXPECT_FALSE(TempFilesLeft());
}

TEST_F(WriteResultsTest, ASignalBeforeTheWriteChangesNothing) {
  std::string a = Old("a");
  CancelFlag cancel;
  cancel.Cancel(SIGINT);
  WriteRequest req = Request({a});
  req.cancel = &cancel;
  WriteReport r = Run(req);
  EXPECT_EQ(r.status.code(), Code::kCancelled);
  EXPECT_TRUE(r.interrupted());
  EXPECT_EQ(r.error_class(), "interrupted");
  EXPECT_EQ(r.results[0].state, TargetState::kNotStarted);
  EXPECT_EQ(ReadFile(a), kOld);
}

TEST_F(WriteResultsTest, ASignalDuringTheWriteLeavesFilesAndSaysWhereDevicesStand) {
  std::string a = Old("a"), b = Old("b");
  CancelFlag first, second;
  CancelFlag* cancel = &first;
  WriteRequest req = Request({a, dir_ / "new"});
  req.cancel = cancel;
  int writes = 0;
  setup_ = [&](size_t i, testing::FaultQueue& q) {
    if (i == 0) q.OnSubmit([&](const io::IoOp& op) {
      if (op.kind == io::OpKind::kWrite && ++writes == 4) cancel->Cancel(SIGTERM);
    });
  };
  Faulty(req);
  WriteReport r = Run(req);
  ASSERT_EQ(r.status.code(), Code::kCancelled) << r.status.ToString();
  EXPECT_EQ(r.signal, SIGTERM);
  EXPECT_EQ(r.results[0].state, TargetState::kUnchanged);
  EXPECT_EQ(r.results[1].state, TargetState::kUnchanged);
  EXPECT_EQ(ReadFile(a), kOld);
  EXPECT_FALSE(TempFilesLeft());
  EXPECT_TRUE(r.phases.write.has_value());
  EXPECT_FALSE(r.phases.sync.has_value());
  std::string j = ReportJson(r);
  EXPECT_NE(j.find("\"interrupted\": true, \"signal\": \"SIGTERM\""), std::string::npos) << j;

  // In place: partially written, and up to where.
  writes = 0;
  cancel = &second;
  WriteRequest in_place = req;
  in_place.cancel = cancel;
  in_place.targets = {b};
  in_place.in_place = true;
  r = Run(in_place);
  ASSERT_EQ(r.status.code(), Code::kCancelled) << r.status.ToString();
  EXPECT_EQ(r.results[0].state, TargetState::kPartial);
  ASSERT_TRUE(r.results[0].partly_written_to.has_value());
  EXPECT_LT(*r.results[0].partly_written_to, expanded_.size());
  EXPECT_NE(r.status.message().find(b + " partly written"), std::string::npos) << r.status.ToString();
  // A file is cut to the image's size before it is written in place: what
  // it held after partly_written_to is gone too, and the report says so.
  EXPECT_TRUE(r.results[0].old_contents_discarded);
  EXPECT_NE(r.status.message().find("the old contents are gone"), std::string::npos) << r.status.ToString();
  EXPECT_EQ(r.status.message().find("none after them"), std::string::npos) << r.status.ToString();
  EXPECT_NE(TargetLine(r.results[0], r).find("its old contents are gone"), std::string::npos);
  EXPECT_NE(TargetJsonMembers(r.results[0], r).find("\"old_contents_discarded\": true"), std::string::npos);
}

// bmaptool create's output for `image`, checksums from OpenSSL.
std::string BmapOf(std::span<const uint8_t> image) {
  uint64_t blocks = (image.size() + 4095) / 4096;
  std::string range = Sha256(image);
  std::string x = "<bmap version=\"2.0\"><ImageSize>" + std::to_string(image.size()) +
                  "</ImageSize><BlockSize>4096</BlockSize><BlocksCount>" + std::to_string(blocks) +
                  "</BlocksCount><MappedBlocksCount>" + std::to_string(blocks) +
                  "</MappedBlocksCount><ChecksumType>sha256</ChecksumType><BmapFileChecksum>" + std::string(64, '0') +
                  "</BmapFileChecksum><BlockMap><Range chksum=\"" + range + "\">0-" + std::to_string(blocks - 1) +
                  "</Range></BlockMap></bmap>";
  std::string real = Sha256({reinterpret_cast<const uint8_t*>(x.data()), x.size()});
  x.replace(x.find(std::string(64, '0')), 64, real);
  return x;
}

// The digest computed on its thread while writing equals the SHA-256 of the
// expanded image for every kind of image a write takes: sparse with RAW,
// FILL (zero and not), DONT_CARE and CRC chunks, raw, raw with a bmap
// (unmapped blocks zeros), and compressed; and the report says how long the
// run waited for it.
TEST_F(WriteResultsTest, TheDigestOfEveryImageKindIsThatOfTheExpandedImage) {
  testing::SparseBuilder b(4096);
  b.RawBlocks(40, 3).Crc().Fill(30, 0).DontCare(20).RawBlocks(1, 4).Fill(9, 0xA5A55A5A).Crc().DontCare(3);
  std::vector<uint8_t> sparse = b.Build(), expanded = b.expanded();
  std::string want = Sha256(expanded);
  WriteFile(dir_ / "k.simg", sparse);
  WriteFile(dir_ / "k.raw", expanded);
  std::string bmap = BmapOf(expanded);
  WriteFile(dir_ / "k.bmap", {bmap.begin(), bmap.end()});
  WriteFile(dir_ / "k.raw.gz", testing::Gzip(expanded));
  WriteFile(dir_ / "k.raw.zst", testing::Zstd(expanded));
  struct Kind {
    std::string image, bmap, kind;
  };
  for (const Kind& k : {Kind{"k.simg", "", "sparse"}, Kind{"k.raw", "", "raw"}, Kind{"k.raw", "k.bmap", "raw+bmap"},
                        Kind{"k.raw.gz", "", "gzip+raw"}, Kind{"k.raw.zst", "", "zstd+raw"},
                        Kind{"k.raw.zst", "k.bmap", "zstd+raw+bmap"}}) {
    SCOPED_TRACE(k.image + " " + k.bmap);
    WriteRequest req = Request({dir_ / ("out-" + k.kind)});
    req.image = dir_ / k.image;
    if (!k.bmap.empty()) req.source.bmap_path = dir_ / k.bmap;
    req.find_bmap = false;  // k.bmap is beside k.raw*: used only where named
    WriteReport r = Run(req);
    ASSERT_TRUE(r.status.ok()) << r.status.ToString();
    EXPECT_EQ(r.kind, k.kind);
    EXPECT_EQ(r.image_sha256.value_or(""), want);
    ASSERT_TRUE(r.phases.digest.has_value());
    EXPECT_GE(*r.phases.digest, 0);
    EXPECT_NE(ReportJson(r).find("\"digest\": "), std::string::npos);
  }
}

TEST_F(WriteResultsTest, TheDigestIsThatOfTheExpandedImage) {
  WriteReport r = Run(Request({dir_ / "x"}));
  ASSERT_TRUE(r.status.ok()) << r.status.ToString();
  ASSERT_TRUE(r.image_sha256.has_value());
  EXPECT_EQ(*r.image_sha256, Sha256(expanded_));
  EXPECT_EQ(ReadFile(dir_ / "x"), expanded_);
  ASSERT_TRUE(r.phases.write && r.phases.sync);
  EXPECT_FALSE(r.phases.verify.has_value());
  EXPECT_TRUE(r.results[0].ok);
  EXPECT_EQ(r.results[0].state, TargetState::kWritten);

  // The raw file gives the same digest; overlaid parts give none.
  WriteFile(dir_ / "a.raw", expanded_);
  WriteRequest raw = Request({dir_ / "y"});
  raw.image = dir_ / "a.raw";
  r = Run(raw);
  ASSERT_TRUE(r.status.ok()) << r.status.ToString();
  EXPECT_EQ(r.image_sha256.value_or(""), Sha256(expanded_));
  WriteRequest parts = Request({dir_ / "z"});
  parts.image = image_ + "," + image_;
  r = Run(parts);
  ASSERT_TRUE(r.status.ok()) << r.status.ToString();
  EXPECT_FALSE(r.image_sha256.has_value());
  WriteRequest none = Request({dir_ / "w"});
  none.digest = false;
  EXPECT_FALSE(Run(none).image_sha256.has_value());
}


TEST(FindBmapTest, CandidatesAsBmaptoolTriesThem) {
  EXPECT_EQ(BmapCandidates("d/foo.img.xz"),
            (std::vector<std::string>{"d/foo.img.xz.bmap", "d/foo.img.bmap", "d/foo.bmap"}));
  EXPECT_EQ(BmapCandidates("foo.img"), (std::vector<std::string>{"foo.img.bmap", "foo.bmap"}));
  EXPECT_EQ(BmapCandidates("a.b/img"), (std::vector<std::string>{"a.b/img.bmap"}));
  EXPECT_EQ(BmapCandidates("d/.img"), (std::vector<std::string>{"d/.img.bmap"}));
}

TEST_F(WriteResultsTest, ABmapBesideTheImageIsFoundUsedAndChecked) {
  std::vector<uint8_t> raw = expanded_;
  std::string img = dir_ / "sd.img.gz";  // not gzip inside: detection goes by content
  WriteFile(img, raw);
  std::string text = BmapOf(raw);
  WriteFile(dir_ / "sd.img.bmap", {text.begin(), text.end()});
  EXPECT_EQ(FindBmap(img), dir_ / "sd.img.bmap");

  WriteRequest req = Request({dir_ / "out"});
  req.image = img;
  WriteReport r = Run(req);
  ASSERT_TRUE(r.status.ok()) << r.status.ToString();
  EXPECT_TRUE(r.bmap_found);
  EXPECT_EQ(r.bmap, dir_ / "sd.img.bmap");
  EXPECT_EQ(r.kind, "raw+bmap");
  EXPECT_EQ(ReadFile(dir_ / "out"), raw);

  req.find_bmap = false;  // --no-bmap
  r = Run(req);
  ASSERT_TRUE(r.status.ok()) << r.status.ToString();
  EXPECT_EQ(r.kind, "raw");
  EXPECT_TRUE(r.bmap.empty());

  // A bmap of an image of another size: refused, naming it and --no-bmap.
  raw.resize(raw.size() + 4096, 7);
  WriteFile(img, raw);
  req.find_bmap = true;
  r = Run(req);
  EXPECT_EQ(r.status.code(), Code::kCorrupt);
  EXPECT_NE(r.status.message().find("sd.img.bmap (found beside the image"), std::string::npos) << r.status.ToString();
  EXPECT_NE(r.status.message().find("--no-bmap"), std::string::npos) << r.status.ToString();
  EXPECT_EQ(r.error_class(), "corrupt_image");

  // Same size, other content: its first range's checksum, before any write.
  raw.resize(expanded_.size());
  raw[100] ^= 1;
  WriteFile(img, raw);
  std::string old = Old("old");
  req.targets = {old};
  req.in_place = true;
  r = Run(req);
  EXPECT_EQ(r.status.code(), Code::kCorrupt);
  EXPECT_NE(r.status.message().find("sha256 mismatch"), std::string::npos) << r.status.ToString();
  EXPECT_EQ(r.results[0].state, TargetState::kNotStarted);
  EXPECT_EQ(ReadFile(old), kOld);
}

TEST_F(WriteResultsTest, AFoundBmapIsIgnoredForASparseImage) {
  std::string text = BmapOf(expanded_);
  WriteFile(dir_ / "a.bmap", {text.begin(), text.end()});
  WriteReport r = Run(Request({dir_ / "out"}));
  ASSERT_TRUE(r.status.ok()) << r.status.ToString();
  EXPECT_EQ(r.kind, "sparse");
  EXPECT_TRUE(r.bmap.empty());
  EXPECT_EQ(ReadFile(dir_ / "out"), expanded_);
}

TEST(WriteReportTextTest, SummaryAndTargetLines) {
  WriteReport r;
  r.targets = {"/dev/sdb"};
  r.image_size = uint64_t{4} << 20;
  r.stats.bytes_written = 1 << 20;
  r.stats.bytes_zeroed = 2 << 20;
  r.stats.bytes_skipped = 1 << 20;
  r.seconds = 4.0;
  r.phases = {1.5, 0.5, 2.0};
  r.verify = VerifyOutcome::kPassed;
  EXPECT_EQ(SummaryLine(r), "done: 4.0 MiB image to /dev/sdb in 4.0 s: 1.0 MiB written (0.5 MiB/s), 2.0 MiB zeroed, "
                            "1.0 MiB skipped; verified");
  TargetResult t{.path = "/dev/sdb", .kind = TargetKind::kBlockDevice, .in_place = true,
                 .state = TargetState::kPartial, .partly_written_to = 0x4400000};
  EXPECT_EQ(TargetLine(t, r), "/dev/sdb: partially written, do not use (image bytes before 0x4400000 may have changed)");
  t = {.path = "x.img", .kind = TargetKind::kFile, .state = TargetState::kUnchanged};
  EXPECT_EQ(TargetLine(t, r), "x.img: unchanged (the image was going to a temporary file, now removed)");
  t.state = TargetState::kNotStarted;
  EXPECT_EQ(TargetLine(t, r), "x.img: not started");
}

}  // namespace
}  // namespace flashpipe::input
