#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <random>

#include "base/unique_fd.h"
#include "lp/builder.h"
#include "lp/reader.h"
#include "sparse/encoder.h"
#include "superimg/extent_sink.h"
#include "superimg/open_super.h"
#include "superimg/sparse_block_io.h"
#include "superimg/super_image.h"
#include "superimg/unpack.h"
#include "testing/temp_dir.h"

namespace flashpipe::superimg {
namespace {

using testing::ReadFile;
using testing::TempDir;
using testing::WriteFile;

constexpr uint64_t kMiB = 1 << 20;

// Random blocks with runs of zero blocks and of one repeated word.
std::vector<uint8_t> ImageBytes(size_t size, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> v(size);
  for (size_t b = 0; b < size; b += 4096) {
    const uint32_t kind = rng() % 4;
    for (size_t i = b; i < std::min(size, b + 4096); ++i) {
      v[i] = kind == 0 ? 0 : kind == 1 ? static_cast<uint8_t>(0x30 + i % 4) : static_cast<uint8_t>(rng());
    }
  }
  return v;
}

Status Sparsify(const std::string& raw, const std::string& out) {
  UniqueFd in(::open(raw.c_str(), O_RDONLY | O_CLOEXEC));
  UniqueFd o(::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
  sparse::FdOutput output(o.get(), out);
  return sparse::EncodeImage(in.get(), raw, output, {}).status();
}

lp::Metadata Layout(std::vector<std::pair<std::string, uint64_t>> parts, uint64_t super = 32 * kMiB) {
  lp::LayoutSpec spec;
  spec.devices.push_back({"super", super, 1 << 20, 0});
  spec.metadata_max_size = 8192;
  auto b = lp::Builder::New(spec);
  EXPECT_TRUE(b.ok()) << b.status().ToString();
  for (const auto& [name, size] : parts) {
    EXPECT_TRUE(b->AddPartition(name, "default", 0).ok());
    EXPECT_TRUE(b->ResizePartition(name, size).ok());
  }
  auto m = b->Export();
  EXPECT_TRUE(m.ok()) << m.status().ToString();
  return *m;
}

// The bytes of partition `name` as the super file holds them.
std::vector<uint8_t> PartitionBytes(const std::string& super, const std::string& name) {
  auto f = OpenSuper(super);
  EXPECT_TRUE(f.ok()) << f.status().ToString();
  auto m = ReadSuperMetadata(*f, 0);
  EXPECT_TRUE(m.ok()) << m.status().ToString();
  const lp::PartitionEntry* p = lp::FindPartition(*m, name);
  std::vector<uint8_t> out;
  for (const auto& e : lp::ExtentsOf(*m, *p)) {
    std::vector<uint8_t> piece(e.num_sectors * 512);
    EXPECT_TRUE(f->io->Read(e.target_data * 512, piece).ok());
    out.insert(out.end(), piece.begin(), piece.end());
  }
  return out;
}

struct Fixture {
  TempDir dir;
  std::vector<uint8_t> system = ImageBytes(5 * kMiB + 8192, 1);
  std::vector<uint8_t> vendor = ImageBytes(3 * kMiB, 2);
  lp::Metadata m = Layout({{"system", 6 * kMiB}, {"vendor", 3 * kMiB}, {"odm", kMiB}});
  Fixture() {
    WriteFile(dir / "system.img", system);
    WriteFile(dir / "vendor.raw", vendor);
    EXPECT_TRUE(Sparsify(dir / "vendor.raw", dir / "vendor.simg").ok());
  }
  std::vector<PartitionImage> Images() const { return {{"system", dir / "system.img"}, {"vendor", dir / "vendor.simg"}}; }
};

std::vector<uint8_t> Padded(std::vector<uint8_t> v, size_t size) {
  v.resize(size, 0);
  return v;
}

TEST(SuperImageTest, RawAndSparseSuperHoldTheImagesAtTheirExtents) {
  Fixture fx;
  for (bool sparse : {false, true}) {
    const std::string out = fx.dir / (sparse ? "super.simg" : "super.img");
    Status s = WriteSuperImage(fx.m, fx.Images(), out, {.sparse = sparse});
    ASSERT_TRUE(s.ok()) << s.ToString();
    EXPECT_EQ(PartitionBytes(out, "system"), Padded(fx.system, 6 * kMiB)) << out;
    EXPECT_EQ(PartitionBytes(out, "vendor"), fx.vendor) << out;
    auto f = OpenSuper(out);
    ASSERT_TRUE(f.ok());
    EXPECT_EQ(f->kind, sparse ? SuperFile::Kind::kSparse : SuperFile::Kind::kRaw);
    auto st = lp::InspectSuper(*f->io);
    ASSERT_TRUE(st.ok());
    for (const auto& slot : st->slots) EXPECT_TRUE(slot[0].status.ok() && slot[1].status.ok());
  }
  // The sparse image expands to the raw one, and leaves unallocated space
  // and the partitions' tails DONT_CARE.
  auto raw = ReadFile(fx.dir / "super.img");
  auto sp = OpenSuper(fx.dir / "super.simg");
  ASSERT_TRUE(sp.ok());
  std::vector<uint8_t> expanded(raw.size());
  ASSERT_TRUE(sp->io->Read(0, expanded).ok());
  EXPECT_EQ(expanded, raw);
  const auto& runs = static_cast<SparseBlockIo&>(*sp->io).runs();
  EXPECT_EQ(runs.back().type, sparse::kChunkDontCare);
  EXPECT_EQ(runs.back().offset, (1 + 6 + 3) * kMiB);  // odm has no image: from its start on
  EXPECT_LT(std::filesystem::file_size(fx.dir / "super.simg"), 7 * kMiB);
}

TEST(SuperImageTest, RefusalsWriteNothing) {
  Fixture fx;
  const std::string out = fx.dir / "super.img";
  struct Case {
    std::vector<PartitionImage> images;
    std::string error;
  } cases[] = {
      {{{"nope", fx.dir / "system.img"}}, "an image is given for nope, which is not a partition"},
      {{{"odm", fx.dir / "system.img"}},
       fmt::format("image {} (5251072 bytes) does not fit partition odm (1048576 bytes)", fx.dir / "system.img")},
      {{{"system", fx.dir / "system.img"}, {"system", fx.dir / "vendor.simg"}},
       fmt::format("two images for partition system: {} and {}", fx.dir / "system.img", fx.dir / "vendor.simg")},
      {{{"system", out}}, ""},  // filled in below: the output is an input
  };
  for (auto& c : cases) {
    if (c.error.empty()) {
      WriteFile(out, {1, 2, 3});
      c.error = fmt::format("the output {} is the image of partition system", out);
    }
    Status s = WriteSuperImage(fx.m, c.images, out, {.sparse = true});
    EXPECT_EQ(s.message(), c.error);
    if (std::filesystem::exists(out)) {
      EXPECT_EQ(ReadFile(out), (std::vector<uint8_t>{1, 2, 3}));
    }
  }
  std::filesystem::remove(out);
  // A compressed image too big for its partition is only found while
  // streaming: the output is then never created.
  ASSERT_EQ(std::system(fmt::format("gzip -c {} > {}", fx.dir / "system.img", fx.dir / "system.img.gz").c_str()), 0);
  Status s = WriteSuperImage(fx.m, {{"odm", fx.dir / "system.img.gz"}}, out, {.sparse = true});
  EXPECT_EQ(s.code(), Code::kNoSpace) << s.ToString();
  EXPECT_FALSE(std::filesystem::exists(out));
}

TEST(SuperImageTest, LayoutsThatCannotBeStreamedAreRefused) {
  Fixture fx;
  // a: half a MiB at 1 MiB, the other half at 3 MiB, after b (2 MiB).
  lp::Metadata two = Layout({{"a", kMiB}, {"b", kMiB}});
  two.extents = {{1024, lp::kTargetLinear, 2048, 0}, {1024, lp::kTargetLinear, 6144, 0},
                 {2048, lp::kTargetLinear, 4096, 0}};
  two.partitions[0].num_extents = 2;
  two.partitions[1].first_extent_index = 2;
  WriteFile(fx.dir / "a.img", std::vector<uint8_t>(kMiB, 7));
  WriteFile(fx.dir / "b.img", std::vector<uint8_t>(kMiB, 8));
  Status s = WriteSuperImage(two, {{"a", fx.dir / "a.img"}, {"b", fx.dir / "b.img"}}, fx.dir / "out.img", {});
  EXPECT_EQ(s.message(), "partition b has an extent at byte 0x200000, before the end of partition a; flashpipe "
                         "writes a super image in one pass, in device order");
  EXPECT_FALSE(std::filesystem::exists(fx.dir / "out.img"));
  // Imaging only a is fine: its own extents rise.
  ASSERT_TRUE(WriteSuperImage(two, {{"a", fx.dir / "a.img"}}, fx.dir / "out.img", {}).ok());
  EXPECT_EQ(PartitionBytes(fx.dir / "out.img", "a"), std::vector<uint8_t>(kMiB, 7));
}

TEST(UnpackTest, ReturnsEveryImageByteForByte) {
  Fixture fx;
  for (const char* name : {"super.img", "super.simg"}) {
    const std::string super = fx.dir / name;
    ASSERT_TRUE(WriteSuperImage(fx.m, fx.Images(), super, {.sparse = std::string(name).ends_with("simg")}).ok());
    auto f = OpenSuper(super);
    ASSERT_TRUE(f.ok());
    auto m = ReadSuperMetadata(*f, 1);
    ASSERT_TRUE(m.ok());
    std::filesystem::create_directory(fx.dir / "out");
    auto written = Unpack(*f->io, *m, fx.dir / "out", {.super_id = f->id});
    ASSERT_TRUE(written.ok()) << written.status().ToString();
    EXPECT_EQ(written->size(), 3u);
    EXPECT_EQ(ReadFile(fx.dir / "out/system.img"), Padded(fx.system, 6 * kMiB));
    EXPECT_EQ(ReadFile(fx.dir / "out/vendor.img"), fx.vendor);
    EXPECT_EQ(ReadFile(fx.dir / "out/odm.img"), std::vector<uint8_t>(kMiB, 0));
    // Zero blocks are holes, not written.
    EXPECT_LT(std::filesystem::file_size(fx.dir / "out/odm.img"), 4096 * 2 + kMiB);
    std::filesystem::remove_all(fx.dir / "out");
  }
}

TEST(UnpackTest, RefusesUnknownOrUnsafeNamesBeforeWriting) {
  Fixture fx;
  const std::string super = fx.dir / "super.img";
  ASSERT_TRUE(WriteSuperImage(fx.m, fx.Images(), super, {}).ok());
  auto f = OpenSuper(super);
  auto m = ReadSuperMetadata(*f, 0);
  ASSERT_TRUE(m.ok());
  const std::string out = fx.dir / "out";
  std::filesystem::create_directory(out);
  auto r = Unpack(*f->io, *m, out, {.partitions = {"system", "nope"}});
  EXPECT_EQ(r.status().message(), "no partition nope in the metadata");
  lp::Metadata evil = *m;
  evil.partitions[0].name = "../evil";
  r = Unpack(*f->io, evil, out, {});
  EXPECT_EQ(r.status().message(), "partition name \"../evil\" is not 1 to 36 characters of A-Z a-z 0-9 _ -");
  // A ZERO extent larger than the super (it needs no space, so the reader
  // takes it): refused before any file is made, not a huge sparse file.
  lp::Metadata huge = *m;
  huge.extents[huge.partitions[0].first_extent_index].target_type = lp::kTargetZero;
  huge.extents[huge.partitions[0].first_extent_index].num_sectors = uint64_t{1} << 40;
  r = Unpack(*f->io, huge, out, {});
  ASSERT_EQ(r.status().code(), Code::kInvalidArgument) << r.status().ToString();
  EXPECT_NE(r.status().message().find("more than the"), std::string::npos) << r.status().ToString();
  EXPECT_TRUE(std::filesystem::is_empty(out));
  // A super named like a partition image in the output directory.
  std::filesystem::rename(super, out + "/vendor.img");
  auto g = OpenSuper(out + "/vendor.img");
  r = Unpack(*g->io, *m, out, {.super_id = g->id});
  EXPECT_EQ(r.status().message(), fmt::format("{}/vendor.img is the super image being unpacked", out));
  EXPECT_EQ(std::filesystem::directory_iterator(out)->path().filename(), "vendor.img");  // nothing else written
}

// Records events with their offsets.
class Recorder : public sparse::Sink {
 public:
  std::vector<std::string> events;
  Status OnRaw(uint64_t off, std::span<const uint8_t> d) override { return Add("raw", off, d.size()); }
  Status OnFill(uint64_t off, uint64_t len, uint32_t) override { return Add("fill", off, len); }
  Status OnSkip(uint64_t off, uint64_t len) override { return Add("skip", off, len); }

 private:
  Status Add(const char* what, uint64_t off, uint64_t len) {
    events.push_back(fmt::format("{} {} {}", what, off, len));
    return Status::Ok();
  }
};

TEST(ExtentSinkTest, SplitsAtExtentsAndNeverWritesPastThem) {
  Recorder rec;
  ExtentSink sink("img for p", {{0, 10000, 1024}, {1024, 50000, 512}}, &rec);
  std::vector<uint8_t> data(1200, 1);
  ASSERT_TRUE(sink.OnRaw(100, data).ok());
  EXPECT_EQ(rec.events, (std::vector<std::string>{"raw 10100 924", "raw 50000 276"}));
  rec.events.clear();
  ASSERT_TRUE(sink.OnFill(1024, 512, 0).ok());
  EXPECT_EQ(rec.events, std::vector<std::string>{"fill 50000 512"});
  rec.events.clear();
  Status s = sink.OnSkip(1000, 600);
  EXPECT_EQ(s.message(), "img for p: 600 bytes at image byte 0x3e8 run past the partition's 1536 bytes");
  EXPECT_TRUE(rec.events.empty());
}

TEST(SparseBlockIoTest, ReadsAnyRangeOfTheExpandedImage) {
  TempDir dir;
  std::vector<uint8_t> raw = ImageBytes(2 * kMiB + 4096 * 3, 9);
  WriteFile(dir / "a.raw", raw);
  ASSERT_TRUE(Sparsify(dir / "a.raw", dir / "a.simg").ok());
  UniqueFd fd(::open((dir / "a.simg").c_str(), O_RDONLY | O_CLOEXEC));
  auto io = SparseBlockIo::Open(fd.get(), "a.simg");
  ASSERT_TRUE(io.ok()) << io.status().ToString();
  EXPECT_EQ((*io)->size(), raw.size());
  std::mt19937 rng(5);
  for (int i = 0; i < 300; ++i) {
    const uint64_t off = rng() % raw.size();
    const size_t len = std::min<size_t>(raw.size() - off, rng() % 20000);
    std::vector<uint8_t> got(len);
    ASSERT_TRUE((*io)->Read(off, got).ok());
    ASSERT_TRUE(std::equal(got.begin(), got.end(), raw.begin() + off)) << off << " " << len;
  }
  std::vector<uint8_t> past(10);
  EXPECT_EQ((*io)->Read(raw.size() - 5, past).message(),
            fmt::format("a.simg: 10 bytes at byte 0x{:x} are outside its {} bytes", raw.size() - 5, raw.size()));
  EXPECT_EQ((*io)->Write(0, past).code(), Code::kUnsupported);
}

}  // namespace
}  // namespace flashpipe::superimg
