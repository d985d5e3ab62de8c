#include "lp/writer.h"

#include <gtest/gtest.h>

#include "lp/lp_test_util.h"
#include "lp/reader.h"
#include "testing/memory_block_io.h"

namespace flashpipe::lp {
namespace {

using testing::MemoryBlockIo;

constexpr uint64_t kSuper = 16 << 20;

std::vector<uint8_t> Blob(const Metadata& m) {
  auto b = SerializeMetadata(m);
  EXPECT_TRUE(b.ok()) << b.status().ToString();
  return b.ok() ? *b : std::vector<uint8_t>();
}

// The sample on a 16 MiB super with 4 KiB alignment, and an edited version
// of it (vendor grown, odm added) to update to.
Metadata OldMetadata() {
  auto m = test::SampleBuilder(kSuper, 4096).Export();
  EXPECT_TRUE(m.ok()) << m.status().ToString();
  return *m;
}

Metadata NewMetadata() {
  auto b = Builder::FromMetadata(OldMetadata());
  EXPECT_TRUE(b.ok());
  EXPECT_TRUE(b->ResizePartition("vendor", 6 << 20).ok());
  EXPECT_TRUE(b->AddPartition("odm", "default", 0).ok());
  EXPECT_TRUE(b->ResizePartition("odm", 1 << 20).ok());
  auto m = b->Export();
  EXPECT_TRUE(m.ok()) << m.status().ToString();
  return *m;
}

MemoryBlockIo Flashed(const Metadata& m) {
  MemoryBlockIo dev(kSuper, "super");
  Status s = FlashMetadata(dev, m);
  EXPECT_TRUE(s.ok()) << s.ToString();
  return dev.AfterCrash(true);
}

void ExpectAllCopiesValid(MemoryBlockIo& dev) {
  auto st = InspectSuper(dev);
  ASSERT_TRUE(st.ok());
  EXPECT_TRUE(st->geometry[0].status.ok()) << st->geometry[0].status.ToString();
  EXPECT_TRUE(st->geometry[1].status.ok()) << st->geometry[1].status.ToString();
  for (const auto& slot : st->slots) {
    EXPECT_TRUE(slot[0].status.ok()) << slot[0].status.ToString();
    EXPECT_TRUE(slot[1].status.ok()) << slot[1].status.ToString();
  }
}

TEST(LpWriterTest, SerializedMetadataParsesBackEqual) {
  Metadata m = NewMetadata();
  std::vector<uint8_t> blob = Blob(m);
  auto back = ParseMetadataCopy(m.geometry, blob, "copy", 0);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->partitions, m.partitions);
  EXPECT_EQ(back->extents, m.extents);
  EXPECT_EQ(back->groups, m.groups);
  EXPECT_EQ(back->block_devices, m.block_devices);
  EXPECT_EQ(Blob(*back), blob);
}

TEST(LpWriterTest, FlashWritesEveryCopyAndClearsTheReservedBlock) {
  MemoryBlockIo dev(std::vector<uint8_t>(kSuper, 0x5a), "super");
  ASSERT_TRUE(FlashMetadata(dev, OldMetadata()).ok());
  ExpectAllCopiesValid(dev);
  std::vector<uint8_t> bytes = dev.bytes();
  EXPECT_TRUE(std::all_of(bytes.begin(), bytes.begin() + 4096, [](uint8_t b) { return b == 0; }));
  // Two geometry copies and four metadata copies, each followed by a sync.
  EXPECT_EQ(dev.writes(), 7u);
  EXPECT_EQ(dev.syncs(), 6u);
}

TEST(LpWriterTest, FlashRefusesANewGeometryUnlessAsked) {
  MemoryBlockIo dev = Flashed(OldMetadata());
  LayoutSpec spec;
  spec.devices.push_back({"super", kSuper, 4096, 0});
  spec.metadata_max_size = 8192;
  auto b = Builder::New(spec);
  ASSERT_TRUE(b.ok());
  auto m = b->Export();
  ASSERT_TRUE(m.ok());
  const uint64_t writes = dev.writes();
  Status s = FlashMetadata(dev, *m);
  EXPECT_EQ(s.message(), "the new geometry (2 slots of 8192 bytes, logical blocks of 4096) differs from the one on "
                         "super (2 slots of 4096 bytes, logical blocks of 4096)");
  EXPECT_EQ(dev.writes(), writes);
  ASSERT_TRUE(FlashMetadata(dev, *m, {.allow_new_geometry = true}).ok());
  ExpectAllCopiesValid(dev);
}

TEST(LpWriterTest, InvalidMetadataIsRefusedBeforeAnyWrite) {
  Metadata m = OldMetadata();
  m.extents[1].target_data = kSuper / 512 - 100;  // runs past the end
  MemoryBlockIo dev(kSuper, "super");
  Status s = FlashMetadata(dev, m);
  EXPECT_EQ(s.code(), Code::kInvalidArgument);
  EXPECT_EQ(s.message(), "refusing to write metadata that would not read back: new metadata at byte 0x0: extent 1 "
                         "(byte 0x134): 8192 sectors at sector 32668 lie outside block device \"super\" (sectors 56 "
                         "to 32768)");
  EXPECT_EQ(dev.writes(), 0u);
}

TEST(LpWriterTest, ANameLongerThan36BytesIsRefused) {
  Metadata m = OldMetadata();
  m.groups[1].name = std::string(37, 'g');
  EXPECT_EQ(SerializeMetadata(m).status().message(),
            "group name \"" + std::string(37, 'g') + "\" is not 1 to 36 characters of A-Z a-z 0-9 _ -");
}

// One name rule for everything written: a name that would become a path or
// reach a terminal raw (from a hostile super_empty.img) is refused, shown
// escaped; the largest legal name (36 bytes, no NUL on disk) is written.
TEST(LpWriterTest, NamesOutsideTheRuleAreRefusedAndShownEscaped) {
  for (std::string bad : {std::string("../../x\n\x1b[2J"), std::string("sys/tem"), std::string(), std::string("a b")}) {
    Metadata m = OldMetadata();
    m.partitions[0].name = bad;
    auto s = SerializeMetadata(m);
    ASSERT_EQ(s.status().code(), Code::kInvalidArgument) << bad;
    EXPECT_EQ(s.status().message().find('\x1b'), std::string::npos);
  }
  Metadata m = OldMetadata();
  m.partitions[0].name = "../../x\n\x1b[2J";
  EXPECT_EQ(SerializeMetadata(m).status().message(),
            "partition name \"../../x\\x0a\\x1b[2J\" is not 1 to 36 characters of A-Z a-z 0-9 _ -");
  m.partitions[0].name = std::string(36, 'p');
  auto blob = SerializeMetadata(m);
  ASSERT_TRUE(blob.ok()) << blob.status().ToString();
  auto back = ParseMetadataCopy(m.geometry, *blob, "back", 0);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->partitions[0].name, std::string(36, 'p'));
}

TEST(LpWriterTest, MetadataLargerThanASlotIsRefused) {
  Builder b = test::SampleBuilder(kSuper, 4096);
  for (int i = 0; i < 80; ++i) ASSERT_TRUE(b.AddPartition(fmt::format("p{}", i), "default", 0).ok());
  auto m = b.Export();
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().message(), "refusing to write metadata that would not read back: new metadata at byte 0x0: "
                                  "header_size 128 + tables_size 4524 exceed metadata_max_size 4096");
}

TEST(LpWriterTest, UpdateChangesOneSlotOnly) {
  MemoryBlockIo dev = Flashed(OldMetadata());
  ASSERT_TRUE(UpdateMetadata(dev, NewMetadata(), 1).ok());
  ExpectAllCopiesValid(dev);
  EXPECT_EQ(Blob(*ReadMetadata(dev, 0)), Blob(OldMetadata()));
  EXPECT_EQ(Blob(*ReadMetadata(dev, 1)), Blob(NewMetadata()));
}

TEST(LpWriterTest, UpdateRefusesAnotherGeometry) {
  MemoryBlockIo dev = Flashed(OldMetadata());
  Metadata m = NewMetadata();
  m.geometry.logical_block_size = 8192;
  Status s = UpdateMetadata(dev, m, 0);
  EXPECT_EQ(s.message(), "the new geometry (2 slots of 4096 bytes, logical blocks of 8192) differs from the one on "
                         "super (2 slots of 4096 bytes, logical blocks of 4096)");
}

TEST(LpWriterTest, RepairRewritesBadCopiesFromGoodOnes) {
  MemoryBlockIo dev = Flashed(OldMetadata());
  dev.Poke(0x2000 + 50, 1);          // geometry backup
  dev.Poke(0x3000 + 4096 + 30, 1);   // slot 1 primary
  ASSERT_TRUE(UpdateMetadata(dev, NewMetadata(), 0).ok());
  auto repaired = RepairMetadata(dev);
  ASSERT_TRUE(repaired.ok()) << repaired.status().ToString();
  EXPECT_EQ(*repaired, (std::vector<std::string>{"geometry backup", "slot 1 primary metadata"}));
  ExpectAllCopiesValid(dev);
  EXPECT_EQ(Blob(*ReadMetadata(dev, 1)), Blob(OldMetadata()));
  auto again = RepairMetadata(dev);
  ASSERT_TRUE(again.ok());
  EXPECT_TRUE(again->empty());
}

TEST(LpWriterTest, RepairMakesAStaleBackupEqualToThePrimary) {
  MemoryBlockIo dev = Flashed(OldMetadata());
  // A valid but different backup: what a crash between the two writes leaves.
  auto blob = Blob(NewMetadata());
  ASSERT_TRUE(dev.Write(BackupMetadataOffset(OldMetadata().geometry, 0), blob).ok());
  auto repaired = RepairMetadata(dev);
  ASSERT_TRUE(repaired.ok());
  EXPECT_EQ(*repaired, std::vector<std::string>{"slot 0 backup metadata"});
  std::vector<uint8_t> backup;
  ASSERT_TRUE(ReadMetadataCopy(dev, OldMetadata().geometry, 0, Copy::kBackup, &backup).ok());
  EXPECT_EQ(backup, Blob(OldMetadata()));
}

TEST(LpWriterTest, RepairReportsASlotWithNoValidCopy) {
  MemoryBlockIo dev = Flashed(OldMetadata());
  dev.Poke(0x3000 + 4096, 0);
  dev.Poke(0x3000 + 3 * 4096, 0);
  auto repaired = RepairMetadata(dev);
  ASSERT_FALSE(repaired.ok());
  EXPECT_EQ(repaired.status().message(), "super: no valid copy of slot 1 metadata (repaired: nothing)");
}

// A hostile geometry (valid checksum, 2^32 - 1 slots) must not make repair
// read four billion slots: it is refused before any slot is touched.
TEST(LpWriterTest, RepairRefusesAGeometryWithMoreSlotsThanRealSupersHave) {
  MemoryBlockIo dev = Flashed(OldMetadata());
  Geometry g = OldMetadata().geometry;
  g.metadata_slot_count = 0xffffffff;
  auto block = SerializeGeometry(g);
  ASSERT_TRUE(block.ok()) << block.status().ToString();
  ASSERT_TRUE(dev.Write(0x1000, *block).ok());
  ASSERT_TRUE(dev.Write(0x2000, *block).ok());
  auto repaired = RepairMetadata(dev);
  ASSERT_FALSE(repaired.ok());
  EXPECT_EQ(repaired.status().message(),
            "the geometry has 4294967295 metadata slots: more than the 64 flashpipe writes");
  Metadata m = OldMetadata();
  m.geometry = g;
  EXPECT_EQ(FlashMetadata(dev, m, {.allow_new_geometry = true}).code(), Code::kInvalidArgument);
}

// Every fate a crash can give the unsynced writes (lost, torn, landed each).
std::vector<std::vector<MemoryBlockIo::Fate>> AllFates(size_t n) {
  std::vector<std::vector<MemoryBlockIo::Fate>> out(1);
  for (size_t i = 0; i < n; ++i) {
    std::vector<std::vector<MemoryBlockIo::Fate>> next;
    for (const auto& f : out) {
      for (auto fate : {MemoryBlockIo::Fate::kLost, MemoryBlockIo::Fate::kTorn, MemoryBlockIo::Fate::kLanded}) {
        next.push_back(f);
        next.back().push_back(fate);
      }
    }
    out = std::move(next);
  }
  return out;
}

// The crash-safety proof by exhaustion: the N-th write of an operation fails
// and the power goes, for every N; whatever became of the writes not yet
// synced, every slot still reads, as its old or its new content, and repair
// then makes every copy valid.
void CheckEveryCrash(const std::function<MemoryBlockIo()>& before, const std::function<Status(MemoryBlockIo&)>& op,
                     const std::vector<std::vector<std::vector<uint8_t>>>& allowed) {
  for (uint64_t n = 1;; ++n) {
    MemoryBlockIo dev = before();
    dev.TearWrite(n);
    if (op(dev).ok()) {
      EXPECT_GT(n, 2u);
      return;
    }
    ASSERT_LE(dev.unsynced_writes(), 4u) << "write " << n;
    for (const auto& fates : AllFates(dev.unsynced_writes())) {
      MemoryBlockIo after = dev.AfterCrash(fates);
      for (uint32_t slot = 0; slot < allowed.size(); ++slot) {
        auto m = ReadMetadata(after, slot);
        ASSERT_TRUE(m.ok()) << "write " << n << ": " << m.status().ToString();
        const auto& ok = allowed[slot];
        EXPECT_NE(std::find(ok.begin(), ok.end(), Blob(*m)), ok.end()) << "write " << n << " slot " << slot;
      }
      auto repaired = RepairMetadata(after);
      ASSERT_TRUE(repaired.ok()) << repaired.status().ToString();
      ExpectAllCopiesValid(after);
    }
  }
}

TEST(LpWriterTest, UpdateSurvivesACrashAtEveryWrite) {
  const auto old_blob = Blob(OldMetadata()), new_blob = Blob(NewMetadata());
  CheckEveryCrash([] { return Flashed(OldMetadata()); },
                  [](MemoryBlockIo& d) { return UpdateMetadata(d, NewMetadata(), 0); },
                  {{old_blob, new_blob}, {old_blob}});
}

TEST(LpWriterTest, UpdateWithABadBackupSurvivesACrashAtEveryWrite) {
  // Without repairing the backup first, tearing the primary would leave no copy.
  const auto old_blob = Blob(OldMetadata()), new_blob = Blob(NewMetadata());
  CheckEveryCrash(
      [] {
        MemoryBlockIo d = Flashed(OldMetadata());
        d.Poke(BackupMetadataOffset(OldMetadata().geometry, 0) + 1, 0);
        return d;
      },
      [](MemoryBlockIo& d) { return UpdateMetadata(d, NewMetadata(), 0); }, {{old_blob, new_blob}, {old_blob}});
}

TEST(LpWriterTest, FlashOverTheSameGeometrySurvivesACrashAtEveryWrite) {
  const auto old_blob = Blob(OldMetadata()), new_blob = Blob(NewMetadata());
  CheckEveryCrash([] { return Flashed(OldMetadata()); },
                  [](MemoryBlockIo& d) { return FlashMetadata(d, NewMetadata()); },
                  {{old_blob, new_blob}, {old_blob, new_blob}});
}

TEST(LpWriterTest, RepairSurvivesACrashAtEveryWrite) {
  const auto old_blob = Blob(OldMetadata());
  CheckEveryCrash(
      [] {
        MemoryBlockIo d = Flashed(OldMetadata());
        d.Poke(0x1000 + 3, 0);                                            // geometry primary
        d.Poke(BackupMetadataOffset(OldMetadata().geometry, 0) + 9, 7);   // slot 0 backup
        d.Poke(PrimaryMetadataOffset(OldMetadata().geometry, 1) + 9, 7);  // slot 1 primary
        return d;
      },
      [](MemoryBlockIo& d) { return RepairMetadata(d).status(); }, {{old_blob}, {old_blob}});
}

}  // namespace
}  // namespace flashpipe::lp
