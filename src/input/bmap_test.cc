#include "input/bmap.h"

#include <gtest/gtest.h>

#include <fstream>
#include <random>

#include "input/sources.h"
#include "testing/image_recorder.h"
#include "testing/temp_dir.h"

namespace flashpipe::input {
namespace {

std::string Hash(const std::string& type, std::span<const uint8_t> data) {
  auto d = Digest::Create(type);
  EXPECT_TRUE(d.ok());
  d->Update(data);
  return d->HexFinal();
}

// An image of 10 blocks of 4096 bytes minus 100 (partial last block); blocks
// 1-3 and 9 are mapped.
struct Fixture {
  std::vector<uint8_t> image;
  Fixture() : image(10 * 4096 - 100) {
    std::mt19937 rng(42);
    for (auto& b : image) b = static_cast<uint8_t>(rng());
  }
  std::span<const uint8_t> Range(uint64_t first, uint64_t last) const {
    uint64_t end = std::min<uint64_t>(image.size(), (last + 1) * 4096);
    return std::span<const uint8_t>(image).subspan(first * 4096, end - first * 4096);
  }
  // Writes a bmap of `version` with correct checksums (file checksum last).
  std::string Bmap(const std::string& version, const std::string& type = "sha256") const {
    bool new_style = version == "2.0" || version == "1.4";
    bool v13 = version == "1.3";
    std::string cs_type = new_style ? type : "sha1";
    auto attr = [&](uint64_t f, uint64_t l) -> std::string {
      if (new_style) return " chksum=\"" + Hash(cs_type, Range(f, l)) + "\"";
      if (v13 || version == "1.2") return " sha1=\"" + Hash("sha1", Range(f, l)) + "\"";
      return "";
    };
    std::string file_cs;
    if (new_style || v13) file_cs = std::string(Hash(cs_type, {}).size(), '0');
    std::string x = "<?xml version=\"1.0\" ?>\n<bmap version=\"" + version + "\">\n";
    x += "  <ImageSize> " + std::to_string(image.size()) + " </ImageSize>\n";
    x += "  <BlockSize> 4096 </BlockSize>\n  <BlocksCount> 10 </BlocksCount>\n";
    if (new_style) x += "  <ChecksumType> " + cs_type + " </ChecksumType>\n";
    if (new_style) x += "  <BmapFileChecksum> " + file_cs + " </BmapFileChecksum>\n";
    if (v13) x += "  <BmapFileSHA1> " + file_cs + " </BmapFileSHA1>\n";
    x += "  <BlockMap>\n    <Range" + attr(1, 3) + "> 1-3 </Range>\n    <Range" + attr(9, 9) + "> 9 </Range>\n  </BlockMap>\n";
    x += "  <MappedBlocksCount> 4 </MappedBlocksCount>\n</bmap>\n";
    if (!file_cs.empty()) {
      std::string real = Hash(cs_type, {reinterpret_cast<const uint8_t*>(x.data()), x.size()});
      x.replace(x.find(file_cs), file_cs.size(), real);
    }
    return x;
  }
};

class BmapVersionTest : public ::testing::TestWithParam<const char*> {};

TEST_P(BmapVersionTest, ParsesAndWritesOnlyMappedRanges) {
  Fixture f;
  auto b = ParseBmap(f.Bmap(GetParam()), "t.bmap");
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  EXPECT_EQ(b->image_size, f.image.size());
  ASSERT_EQ(b->ranges.size(), 2u);
  EXPECT_EQ(b->ranges[0].first, 1u);
  EXPECT_EQ(b->ranges[0].last, 3u);
  EXPECT_EQ(b->ranges[1].first, 9u);
  EXPECT_EQ(b->RangeEnd(b->ranges[1]), f.image.size());
  std::string v = GetParam();
  EXPECT_EQ(b->checksum_type, v == "1.2" ? "" : v == "1.3" ? "sha1" : "sha256");
  EXPECT_EQ(b->ranges[0].checksum.empty(), v == "1.2");

  testing::ImageRecorder rec(/*mark_skips=*/true);
  auto src = MakeBmapSource(std::make_unique<testing::ByteVectorReader>(f.image, 5000), *b, ImageKind::kRaw);
  ASSERT_TRUE(src->Run(&rec).ok());
  ASSERT_EQ(rec.image.size(), f.image.size());
  for (uint64_t i = 0; i < f.image.size(); ++i) {
    uint64_t block = i / 4096;
    bool mapped = (block >= 1 && block <= 3) || block == 9;
    ASSERT_EQ(rec.image[i], mapped ? f.image[i] : 0xDC) << "byte " << i;
  }
}

INSTANTIATE_TEST_SUITE_P(Versions, BmapVersionTest, ::testing::Values("1.2", "1.3", "1.4", "2.0"));

TEST(BmapTest, OtherDigestNames) {
  Fixture f;
  auto b = ParseBmap(f.Bmap("2.0", "sha512"), "t.bmap");
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  EXPECT_EQ(b->ranges[0].checksum.size(), 128u);
}

Status ParseError(std::string text) { return ParseBmap(text, "t.bmap").status(); }

void Replace(std::string& s, const std::string& from, const std::string& to) {
  auto at = s.find(from);
  ASSERT_NE(at, std::string::npos) << from;
  s.replace(at, from.size(), to);
}

TEST(BmapTest, MalformedXml) {
  Fixture f;
  std::string x = f.Bmap("1.2");
  x.resize(x.size() - 10);
  Status s = ParseError(x);
  EXPECT_EQ(s.code(), Code::kCorrupt);
  EXPECT_NE(s.message().find("not valid XML"), std::string::npos) << s.ToString();
  EXPECT_FALSE(ParseBmap("", "t.bmap").ok());
  EXPECT_FALSE(ParseBmap("<foo/>", "t.bmap").ok());
}

TEST(BmapTest, BadFieldsAndVersions) {
  Fixture f;
  std::string x = f.Bmap("1.2");
  Replace(x, "<BlocksCount> 10", "<BlocksCount> 11");
  EXPECT_NE(ParseError(x).message().find("BlocksCount 11"), std::string::npos) << ParseError(x).ToString();
  x = f.Bmap("1.2");
  Replace(x, "<BlockSize> 4096", "<BlockSize> 4x96");
  EXPECT_NE(ParseError(x).message().find("not a number"), std::string::npos);
  x = f.Bmap("1.2");
  Replace(x, "<BlockSize> 4096 </BlockSize>", "");
  EXPECT_NE(ParseError(x).message().find("missing <BlockSize>"), std::string::npos);
  x = f.Bmap("1.2");
  Replace(x, "version=\"1.2\"", "version=\"3.0\"");
  EXPECT_EQ(ParseError(x).code(), Code::kUnsupported);
  x = f.Bmap("1.2");
  Replace(x, "version=\"1.2\"", "version=\"one\"");
  EXPECT_EQ(ParseError(x).code(), Code::kCorrupt);
}

TEST(BmapTest, BadRanges) {
  Fixture f;
  struct Case { const char* from; const char* to; const char* expect; };
  for (const Case& c : {Case{"> 1-3 <", "> 3-1 <", "ends before it starts"},
                        Case{"> 9 <", "> 10 <", "past the last block"},
                        Case{"> 9 <", "> 2 <", "overlaps"},
                        Case{"> 1-3 <", "> 1-x <", "bad range"},
                        Case{"> 1-3 <", "> 1-2 <", "MappedBlocksCount"}}) {
    std::string x = f.Bmap("1.2");
    Replace(x, c.from, c.to);
    Status s = ParseError(x);
    EXPECT_EQ(s.code(), Code::kCorrupt) << c.to;
    EXPECT_NE(s.message().find(c.expect), std::string::npos) << s.ToString();
  }
}

TEST(BmapTest, FileChecksumMismatchIsRefused) {
  Fixture f;
  for (const char* v : {"1.3", "2.0"}) {
    std::string x = f.Bmap(v);
    Replace(x, "> 1-3 <", "> 1-3  <");  // any byte changed after signing
    Status s = ParseError(x);
    EXPECT_NE(s.message().find("bmap file checksum mismatch"), std::string::npos) << v << ": " << s.ToString();
  }
}

// Recomputes the sha256 file checksum of a 2.0 bmap after an edit.
std::string Resign(std::string x) {
  size_t open = x.find("<BmapFileChecksum> ") + 19;
  size_t close = x.find(" </BmapFileChecksum>");
  x.replace(open, close - open, std::string(close - open, '0'));
  std::string real = Hash("sha256", {reinterpret_cast<const uint8_t*>(x.data()), x.size()});
  x.replace(open, close - open, real);
  return x;
}

TEST(BmapTest, BadChecksumTextAndType) {
  Fixture f;
  std::string x = f.Bmap("2.0");
  Replace(x, "chksum=\"", "chksum=\"zz");
  x = Resign(x);
  EXPECT_NE(ParseError(x).message().find("hex digits"), std::string::npos) << ParseError(x).ToString();
  x = f.Bmap("2.0");
  Replace(x, "<ChecksumType> sha256", "<ChecksumType> nosuchhash");
  EXPECT_EQ(ParseError(x).code(), Code::kUnsupported);
  x = f.Bmap("2.0");
  Replace(x, "<ChecksumType> sha256 </ChecksumType>", "");
  EXPECT_NE(ParseError(x).message().find("ChecksumType"), std::string::npos);
}

TEST(BmapSourceTest, RangeChecksumMismatchStopsAfterThatRange) {
  Fixture f;
  auto b = ParseBmap(f.Bmap("2.0"), "t.bmap");
  ASSERT_TRUE(b.ok());
  auto image = f.image;
  image[2 * 4096 + 5] ^= 1;  // inside range 0 (blocks 1-3)
  testing::ImageRecorder rec;
  auto src = MakeBmapSource(std::make_unique<testing::ByteVectorReader>(image, SIZE_MAX, "img"), *b, ImageKind::kRaw);
  Status s = src->Run(&rec);
  ASSERT_EQ(s.code(), Code::kCorrupt);
  EXPECT_NE(s.message().find("bmap range 0 (blocks 1-3"), std::string::npos) << s.ToString();
  EXPECT_NE(s.message().find("sha256 mismatch"), std::string::npos) << s.ToString();
  EXPECT_EQ(rec.image.size(), 4u * 4096) << "something after the bad range was delivered";
}

TEST(BmapSourceTest, ShortImageIsAnError) {
  Fixture f;
  auto b = ParseBmap(f.Bmap("1.2"), "t.bmap");
  ASSERT_TRUE(b.ok());
  auto image = f.image;
  image.resize(9 * 4096 + 10);
  testing::ImageRecorder rec;
  Status s = MakeBmapSource(std::make_unique<testing::ByteVectorReader>(image), *b, ImageKind::kRaw)->Run(&rec);
  EXPECT_EQ(s.code(), Code::kCorrupt);
  EXPECT_NE(s.message().find("image ends at byte"), std::string::npos) << s.ToString();
}

}  // namespace
}  // namespace flashpipe::input

namespace flashpipe::input {
namespace {

// A seekable raw file goes zero-copy with the hash on a helper thread for
// large ranges (here 1000 blocks) and inline for small ones.
class BmapFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    image_.resize(1200 * 4096 + 10);
    std::mt19937 rng(7);
    for (auto& b : image_) b = static_cast<uint8_t>(rng());
  }
  std::string Save(const std::string& name, const void* p, size_t n) {
    std::string path = dir_ / name;
    std::ofstream(path, std::ios::binary).write(static_cast<const char*>(p), static_cast<std::streamsize>(n));
    return path;
  }
  std::string BmapText() {
    auto range = [&](uint64_t f, uint64_t l) {
      uint64_t end = std::min<uint64_t>(image_.size(), (l + 1) * 4096);
      return Hash("sha256", std::span<const uint8_t>(image_).subspan(f * 4096, end - f * 4096));
    };
    std::string x = "<bmap version=\"1.4\"><ImageSize>" + std::to_string(image_.size()) +
                    "</ImageSize><BlockSize>4096</BlockSize><BlocksCount>1201</BlocksCount>"
                    "<MappedBlocksCount>1002</MappedBlocksCount><ChecksumType>sha256</ChecksumType>"
                    "<BmapFileChecksum>" + std::string(64, '0') + "</BmapFileChecksum><BlockMap>"
                    "<Range chksum=\"" + range(5, 1004) + "\">5-1004</Range>"
                    "<Range chksum=\"" + range(1199, 1200) + "\">1199-1200</Range></BlockMap></bmap>";
    std::string real = Hash("sha256", {reinterpret_cast<const uint8_t*>(x.data()), x.size()});
    x.replace(x.find(std::string(64, '0')), 64, real);
    return x;
  }
  testing::TempDir dir_;
  std::vector<uint8_t> image_;
};

TEST_F(BmapFileTest, WritesMappedRangesZeroCopy) {
  SourceOptions o;
  o.bmap_path = Save("i.bmap", BmapText().data(), BmapText().size());
  auto src = OpenImage(Save("i.img", image_.data(), image_.size()), o);
  ASSERT_TRUE(src.ok()) << src.status().ToString();
  EXPECT_EQ((*src)->kind(), "raw+bmap");
  testing::ImageRecorder rec(/*mark_skips=*/true);
  ASSERT_TRUE((*src)->Run(&rec).ok());
  EXPECT_EQ(rec.fd_raws, 2u);
  ASSERT_EQ(rec.image.size(), image_.size());
  for (uint64_t i = 0; i < image_.size(); i += 997) {
    uint64_t b = i / 4096;
    ASSERT_EQ(rec.image[i], (b >= 5 && b <= 1004) || b >= 1199 ? image_[i] : 0xDC) << i;
  }
}

TEST_F(BmapFileTest, MismatchInTheFirstRangeIsRefusedBeforeWriting) {
  SourceOptions o;
  o.bmap_path = Save("i.bmap", BmapText().data(), BmapText().size());
  image_[600 * 4096] ^= 1;
  auto src = OpenImage(Save("i.img", image_.data(), image_.size()), o);
  EXPECT_EQ(src.status().code(), Code::kCorrupt);
  EXPECT_NE(src.status().message().find("bmap range 0 (blocks 5-1004"), std::string::npos) << src.status().ToString();
  EXPECT_NE(src.status().message().find("nothing written"), std::string::npos) << src.status().ToString();
}

TEST_F(BmapFileTest, MismatchInTheLargeRangeStopsThere) {
  SourceOptions o;
  o.bmap_path = Save("i.bmap", BmapText().data(), BmapText().size());
  std::string path = Save("i.img", image_.data(), image_.size());
  auto src = OpenImage(path, o);
  ASSERT_TRUE(src.ok()) << src.status().ToString();
  image_[600 * 4096] ^= 1;  // changed after the checks: found while writing
  Save("i.img", image_.data(), image_.size());
  testing::ImageRecorder rec;
  Status s = (*src)->Run(&rec);
  EXPECT_EQ(s.code(), Code::kCorrupt);
  EXPECT_NE(s.message().find("bmap range 0 (blocks 5-1004"), std::string::npos) << s.ToString();
  EXPECT_EQ(rec.image.size(), 1005u * 4096) << "the range after the bad one was delivered";
}

TEST_F(BmapFileTest, ShortFileIsRefusedBeforeWriting) {
  SourceOptions o;
  o.bmap_path = Save("i.bmap", BmapText().data(), BmapText().size());
  auto src = OpenImage(Save("i.img", image_.data(), image_.size() - 1), o);
  EXPECT_EQ(src.status().code(), Code::kCorrupt);
  EXPECT_NE(src.status().message().find("fewer than bmap ImageSize"), std::string::npos) << src.status().ToString();
}

}  // namespace
}  // namespace flashpipe::input
