// The session as a userspace fastboot for dynamic partitions, through the
// scripted transport on an in-memory disk whose `super` holds liblp metadata
// (written and read through testing/vector_block_io.h, on the same bytes the
// engine writes): getvar for logical partitions, flash and erase into their
// extents and nowhere else (each write model, write-behind), the commands
// that change the metadata (read back from the disk with the lp reader),
// update-super, and the lock and critical-lock rules.
#include <gtest/gtest.h>

#include <algorithm>

#include "fastboot/dynamic_partitions.h"
#include "fastboot/session.h"
#include "lp/reader.h"
#include "lp/writer.h"
#include "testing/fastboot_fakes.h"
#include "testing/session_runner.h"
#include "testing/memory_block_io.h"
#include "testing/sparse_builder.h"
#include "testing/vector_block_io.h"

namespace flashpipe::fastboot {
namespace {

using testing::MemQueue;
using testing::ScriptedConnection;
using testing::SparseBuilder;

constexpr uint64_t kMiB = 1 << 20;
constexpr uint64_t kSuperOffset = 4 * kMiB;
constexpr uint64_t kSuperSize = 24 * kMiB;
constexpr uint8_t kGuard = 0xEE;

std::string Hex8(size_t n) { return fmt::format("{:08x}", n); }

// group main (12 MiB): system_a 3 MiB in two extents, vendor_a 1 MiB,
// system_b 2 MiB, vendor_b empty.
lp::Metadata Layout(std::array<uint64_t, 4> sizes = {3 * kMiB, kMiB, 2 * kMiB, 0}, uint32_t slots = 2) {
  lp::LayoutSpec spec;
  spec.devices.push_back({"super", kSuperSize, 1 << 20, 0});
  spec.metadata_max_size = 4096;
  spec.metadata_slot_count = slots;
  auto b = lp::Builder::New(spec);
  EXPECT_TRUE(b.ok());
  EXPECT_TRUE(b->AddGroup("main", 12 * kMiB).ok());
  const char* names[] = {"system_a", "vendor_a", "system_b", "vendor_b"};
  for (const char* n : names) EXPECT_TRUE(b->AddPartition(n, "main", 0).ok());
  EXPECT_TRUE(b->ResizePartition("system_a", std::min<uint64_t>(sizes[0], kMiB)).ok());
  for (int i = 1; i < 4; ++i) EXPECT_TRUE(b->ResizePartition(names[i], sizes[i]).ok());
  EXPECT_TRUE(b->ResizePartition("system_a", sizes[0]).ok());
  auto m = b->Export();
  EXPECT_TRUE(m.ok()) << m.status().ToString();
  return *m;
}

std::vector<uint8_t> EmptyImage(const lp::Metadata& m) {
  auto bytes = lp::SerializeEmptyImage(m);
  EXPECT_TRUE(bytes.ok());
  return *bytes;
}

class LogicalSessionTest : public ::testing::Test {
 protected:
  void SetUp() override { Make({}); }

  void Make(DeviceConfig config, io::WriteModel model = {}) {
    parts_ = {{"boot_a", 0, 1 * kMiB, kMiB}, {"boot_b", 0, 2 * kMiB, kMiB}, {"super", 0, kSuperOffset, kSuperSize}};
    for (const auto& p : parts_) mem_.Allow(p.offset, p.size);
    testing::VectorBlockIo io(&mem_.disk(), kSuperOffset, kSuperSize);
    ASSERT_TRUE(lp::FlashMetadata(io, Layout()).ok());
    io::Geometry g{.size = mem_.disk().size(), .logical_block = 512, .physical_block = 4096,
                   .mem_align = 512, .offset_align = 512, .max_request = kMiB, .direct = false};
    config.max_download_size = 4 * kMiB;
    auto storage = Storage::ForQueue(&mem_, g, parts_, {.model = model});
    ASSERT_TRUE(storage->AttachSuper("super", 'a', SuperIo()).ok());
    device_ = std::make_unique<FastbootDevice>(config, std::move(storage), PersistentState::InMemory());
  }
  std::unique_ptr<lp::BlockIo> SuperIo() {
    return std::make_unique<testing::VectorBlockIo>(&mem_.disk(), kSuperOffset, kSuperSize);
  }
  // The metadata of `slot` as the disk holds it, read by the lp reader.
  lp::Metadata OnDisk(uint32_t slot = 0) {
    testing::VectorBlockIo io(&mem_.disk(), kSuperOffset, kSuperSize);
    auto m = lp::ReadMetadata(io, slot);
    EXPECT_TRUE(m.ok()) << m.status().ToString();
    return m.ok() ? *m : lp::Metadata{};
  }
  // The partition's bytes, through the extents the disk's metadata gives it.
  std::vector<uint8_t> Through(const std::string& name, uint32_t slot = 0) {
    lp::Metadata m = OnDisk(slot);
    std::vector<uint8_t> out;
    for (const auto& e : lp::ExtentsOf(m, *lp::FindPartition(m, name))) {
      auto from = mem_.disk().begin() + static_cast<long>(kSuperOffset + e.target_data * 512);
      out.insert(out.end(), from, from + static_cast<long>(e.num_sectors * 512));
    }
    return out;
  }
  // Every byte outside `name`'s extents equals `before`.
  void ExpectOnlyInside(const std::string& name, const std::vector<uint8_t>& before) {
    std::vector<bool> inside(before.size());
    const Partition* p = device_->storage().Find(name);
    ASSERT_NE(p, nullptr);
    for (const auto& e : p->extents) std::fill_n(inside.begin() + static_cast<long>(e.device_offset), e.length, true);
    for (size_t i = 0; i < before.size(); ++i) {
      if (!inside[i] && mem_.disk()[i] != before[i]) {
        ADD_FAILURE() << "byte 0x" << std::hex << i << " outside " << name << "'s extents changed";
        return;
      }
    }
    EXPECT_TRUE(mem_.violations().empty());
  }
  std::vector<std::string> Run(ScriptedConnection& t) { return testing::RunSession(device_.get(), t); }
  std::string One(const std::string& command) { return testing::RunOne(device_.get(), command); }
  std::vector<std::string> Send(const std::vector<uint8_t>& bytes, const std::string& command) {
    ScriptedConnection t;
    t.Command("download:" + Hex8(bytes.size())).Data(bytes).Command(command);
    return Run(t);
  }

  MemQueue mem_{32 * kMiB, kGuard};
  std::vector<Partition> parts_;
  std::unique_ptr<FastbootDevice> device_;
};

const std::vector<std::string> kOkay2 = {"OKAY", "OKAY"};

TEST_F(LogicalSessionTest, GetvarAnswersForLogicalPartitions) {
  EXPECT_EQ(One("getvar:super-partition-name"), "OKAYsuper");
  EXPECT_EQ(One("getvar:is-userspace"), "OKAYyes");
  EXPECT_EQ(One("getvar:is-logical:system_a"), "OKAYyes");
  EXPECT_EQ(One("getvar:is-logical:system"), "OKAYyes");  // the current slot's
  EXPECT_EQ(One("getvar:is-logical:boot_a"), "OKAYno");
  EXPECT_EQ(One("getvar:is-logical:super"), "OKAYno");
  EXPECT_EQ(One("getvar:partition-size:system_a"), "OKAY0x0000000000300000");
  EXPECT_EQ(One("getvar:partition-size:vendor_b"), "OKAY0x0000000000000000");
  EXPECT_EQ(One("getvar:partition-type:system_a"), "OKAYraw");
  EXPECT_EQ(One("getvar:has-slot:system"), "OKAYyes");
  EXPECT_EQ(One("getvar:has-slot:super"), "OKAYno");
  EXPECT_EQ(One("getvar:has-slot:odm"), "OKAYno");  // as fastbootd, for `flashall --slot all`
  EXPECT_EQ(One("getvar:is-logical:nope"), "FAILpartition 'nope' not found");
  ScriptedConnection t;
  t.Command("getvar:all");
  Run(t);
  auto infos = t.Infos();
  for (const char* line : {"is-logical:system_a:yes", "is-logical:vendor_b:yes", "is-logical:super:no",
                           "partition-size:system_b:0x0000000000200000", "super-partition-name:super",
                           "has-slot:vendor:yes", "is-userspace:yes"}) {
    EXPECT_NE(std::find(infos.begin(), infos.end(), line), infos.end()) << line;
  }
}

TEST_F(LogicalSessionTest, FlashWritesTheExtentsAndNothingElseInEveryWriteModel) {
  struct Mode {
    const char* model;
    bool write_behind;
  };
  for (Mode mode : {Mode{"pipelined", false}, Mode{"pipelined", true}, Mode{"bounce:16", false}}) {
    SCOPED_TRACE(::testing::Message() << mode.model << (mode.write_behind ? " write-behind" : ""));
    DeviceConfig config;
    config.write_behind = mode.write_behind;
    Make(config, *io::ParseWriteModel(mode.model));
    ASSERT_EQ(device_->storage().Find("system_a")->extents.size(), 2u);  // the window crosses an extent end
    const std::vector<uint8_t> before = mem_.disk();
    const std::vector<std::string> okay = {"OKAY", mode.write_behind ? "OKAYqueued (write-behind)" : "OKAY"};
    auto raw = SparseBuilder::RandomBytes(3 * kMiB, 5);
    EXPECT_EQ(Send(raw, "flash:system_a"), okay);
    EXPECT_EQ(One("getvar:version"), "OKAY0.4");  // waits for a write-behind flash
    EXPECT_EQ(Through("system_a"), raw);
    ExpectOnlyInside("system_a", before);

    SparseBuilder b(4096);
    b.RawBlocks(200, 1).Fill(100, 0x11223344).DontCare(100).RawBlocks(300, 2).Fill(68, 0);
    EXPECT_EQ(Send(b.Build(), "flash:system"), okay);
    EXPECT_EQ(One("getvar:version"), "OKAY0.4");
    auto got = Through("system_a");
    const auto& want = b.expanded();
    EXPECT_TRUE(std::equal(want.begin(), want.begin() + 300 * 4096, got.begin()));
    EXPECT_TRUE(std::equal(raw.begin() + 300 * 4096, raw.begin() + 400 * 4096, got.begin() + 300 * 4096))
        << "DONT_CARE must not be written";
    EXPECT_TRUE(std::equal(want.begin() + 400 * 4096, want.end(), got.begin() + 400 * 4096));
    ExpectOnlyInside("system_a", before);
  }
}

TEST_F(LogicalSessionTest, AnImageLargerThanThePartitionFailsBeforeWriting) {
  const std::vector<uint8_t> before = mem_.disk();
  auto r = Send(SparseBuilder::RandomBytes(3 * kMiB + 4096, 5), "flash:system_a");
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[1], "FAILimage of 3149824 bytes > partition 'system_a' of 3145728...");
  SparseBuilder b(4096);
  b.RawBlocks(1, 1).DontCare(768);
  r = Send(b.Build(), "flash:system_a");
  EXPECT_EQ(r[1].substr(0, 20), "FAILimage of 3149824");
  // An empty logical partition takes nothing.
  r = Send(SparseBuilder::RandomBytes(4096, 5), "flash:vendor_b");
  EXPECT_EQ(r[1], "FAILimage of 4096 bytes > partition 'vendor_b' of 0 bytes");
  EXPECT_EQ(mem_.disk(), before);
}

TEST_F(LogicalSessionTest, EraseZeroesTheExtentsOnly) {
  const std::vector<uint8_t> before = mem_.disk();
  EXPECT_EQ(One("erase:system_a"), "OKAY");
  auto got = Through("system_a");
  EXPECT_TRUE(std::all_of(got.begin(), got.end(), [](uint8_t c) { return c == 0; }));
  ExpectOnlyInside("system_a", before);
  EXPECT_EQ(One("erase:vendor_b"), "OKAY");  // nothing to erase
}

// What `fastboot flashall` sends for each logical partition: resize to 0,
// then to the image's size, then flash.
TEST_F(LogicalSessionTest, ResizeCreateDeleteChangeTheMetadataOnDisk) {
  EXPECT_EQ(One("resize-logical-partition:system_a:0"), "OKAY");
  EXPECT_EQ(One("resize-logical-partition:vendor_a:0"), "OKAY");
  EXPECT_EQ(One("resize-logical-partition:system_a:4000000"), "OKAY");  // rounded up to 4 KiB
  EXPECT_EQ(One("getvar:partition-size:system_a"), "OKAY0x00000000003d1000");
  for (uint32_t slot : {0u, 1u}) {
    lp::Metadata m = OnDisk(slot);
    EXPECT_EQ(lp::PartitionSize(m, *lp::FindPartition(m, "system_a")), 0x3d1000u) << "slot " << slot;
  }
  auto image = SparseBuilder::RandomBytes(4000000, 9);
  EXPECT_EQ(Send(image, "flash:system_a"), kOkay2);
  auto got = Through("system_a");
  EXPECT_TRUE(std::equal(image.begin(), image.end(), got.begin()));

  EXPECT_EQ(One("create-logical-partition:odm_a:0x100000"), "OKAY");
  EXPECT_EQ(One("getvar:is-logical:odm_a"), "OKAYyes");
  // Every extent starts on the super's 1 MiB alignment and is whole 4 KiB blocks.
  for (const auto& e : OnDisk(0).extents) {
    EXPECT_EQ(e.target_data * 512 % kMiB, 0u) << "extent at sector " << e.target_data;
    EXPECT_EQ(e.num_sectors * 512 % 4096, 0u) << "extent at sector " << e.target_data;
  }
  EXPECT_NE(lp::FindPartition(OnDisk(1), "odm_a"), nullptr);
  EXPECT_EQ(One("create-logical-partition:odm_a:1"), "FAILpartition 'odm_a' already exists");
  EXPECT_EQ(One("create-logical-partition:boot_a:1"), "FAILpartition 'boot_a' already exists");
  EXPECT_EQ(One("delete-logical-partition:odm_a"), "OKAY");
  EXPECT_EQ(lp::FindPartition(OnDisk(0), "odm_a"), nullptr);
  EXPECT_EQ(One("getvar:is-logical:odm_a"), "FAILpartition 'odm_a' not found");
  EXPECT_EQ(One("delete-logical-partition:boot_a"), "FAILlogical partition 'boot_a' not found");
  EXPECT_EQ(One("resize-logical-partition:system_a:12x"),
            "FAILresize-logical-partition: size '12x' is not a number of...");  // the reason, not the label alone
  EXPECT_EQ(One("resize-logical-partition:system_a"), "FAILresize-logical-partition: expected PARTITION:SIZE");
  // 010 is 10 to some and 8 to others (base/units.h): refused, nothing resized.
  EXPECT_EQ(One("resize-logical-partition:system_a:010"),
            "FAILresize-logical-partition: size '010' is not a number of...");

  // No room: a clear FAIL, the reason in INFO lines first; nothing changes.
  const std::vector<uint8_t> before = mem_.disk();
  ScriptedConnection t;
  t.Command("create-logical-partition:huge:100000000");
  EXPECT_EQ(Run(t), std::vector<std::string>{"FAILnot enough free space for partition huge"});
  std::string info;
  for (const auto& i : t.Infos()) info += (info.empty() ? "" : " ") + i;  // broken between words
  EXPECT_EQ(info, "not enough free space for partition huge: 100003840 more bytes needed, 17825792 free");
  EXPECT_EQ(One("resize-logical-partition:vendor_a:20000000"), "FAILpartition vendor_a: group main has 6483968 of its...");
  EXPECT_EQ(mem_.disk(), before);
}

TEST_F(LogicalSessionTest, UpdateSuperKeepsTheOtherSlotAndWipeTakesAll) {
  const auto system_b = Through("system_b");
  EXPECT_EQ(Send(EmptyImage(Layout({0, 0, 0, 0})), "update-super:super"), kOkay2);
  EXPECT_EQ(One("getvar:partition-size:system_a"), "OKAY0x0000000000000000");
  EXPECT_EQ(One("getvar:partition-size:system_b"), "OKAY0x0000000000200000");
  EXPECT_EQ(Through("system_b"), system_b);  // the same extents, untouched
  for (uint32_t slot : {0u, 1u}) EXPECT_EQ(lp::PartitionSize(OnDisk(slot), *lp::FindPartition(OnDisk(slot), "system_b")), 2 * kMiB);
  EXPECT_EQ(Send(EmptyImage(Layout({0, 0, 0, 0})), "update-super:super:wipe"), kOkay2);
  EXPECT_EQ(One("getvar:partition-size:system_b"), "OKAY0x0000000000000000");
}

TEST_F(LogicalSessionTest, UpdateSuperRefusalsWriteNothing) {
  const std::vector<uint8_t> before = mem_.disk();
  EXPECT_EQ(One("update-super:super"), "FAILno image downloaded");
  auto r = Send(EmptyImage(Layout({0, 0, 0, 0}, 3)), "update-super:super:wipe");
  EXPECT_EQ(r[1], "FAILsuper_empty.img's geometry (3 slots of 4096 bytes...");
  std::vector<uint8_t> bad = EmptyImage(Layout({0, 0, 0, 0}));
  bad[4096 + 150] ^= 0x40;
  r = Send(bad, "update-super:super");
  EXPECT_EQ(r[1].substr(0, 20), "FAILsuper_empty.img:");
  r = Send(EmptyImage(Layout({0, 0, 0, 0})), "update-super:system");
  EXPECT_EQ(r[1], "FAILupdate-super: the super partition is 'super', not 'system'");
  r = Send(EmptyImage(Layout({0, 0, 0, 0})), "update-super:super:all");
  EXPECT_EQ(r[1], "FAILupdate-super: unknown option 'all'");
  // A super_empty.img for a larger super.
  lp::LayoutSpec spec;
  spec.devices.push_back({"super", 2 * kSuperSize, 1 << 20, 0});
  spec.metadata_max_size = 4096;
  r = Send(EmptyImage(*lp::Builder::New(spec)->Export()), "update-super:super");
  EXPECT_EQ(r[1], "FAILsuper_empty.img is for a super of 50331648 bytes, 'super'...");
  EXPECT_EQ(mem_.disk(), before);
}

TEST_F(LogicalSessionTest, LockedRefusesEveryChange) {
  ASSERT_EQ(One("flashing lock"), "OKAY");
  const std::vector<uint8_t> before = mem_.disk();
  for (const char* command : {"update-super:super", "create-logical-partition:odm_a:4096",
                              "delete-logical-partition:system_b", "resize-logical-partition:system_a:0",
                              "erase:system_a", "flash:system_a", "download:00001000"}) {
    std::string r = One(command);
    EXPECT_NE(r.find("locked (fastboot flashing unlock)"), std::string::npos) << command << ": " << r;
  }
  EXPECT_EQ(mem_.disk(), before);
  EXPECT_EQ(One("getvar:is-logical:system_a"), "OKAYyes");
}

TEST_F(LogicalSessionTest, ACriticalSuperCoversItsLogicalPartitions) {
  DeviceConfig config;
  config.critical = {"super"};
  Make(config);
  const std::vector<uint8_t> before = mem_.disk();
  const std::string refused = "FAILcritical partition 'super': flashing unlock_critical";
  EXPECT_EQ(One("resize-logical-partition:system_a:0"), refused);
  EXPECT_EQ(One("create-logical-partition:odm_a:4096"), refused);
  EXPECT_EQ(One("erase:system_a"), refused);
  EXPECT_EQ(Send(SparseBuilder::RandomBytes(4096, 1), "flash:system_a")[1], refused);
  EXPECT_EQ(Send(EmptyImage(Layout({0, 0, 0, 0})), "update-super:super")[1], refused);
  EXPECT_EQ(mem_.disk(), before);
  ASSERT_EQ(One("flashing unlock_critical"), "OKAY");
  EXPECT_EQ(One("resize-logical-partition:system_a:0"), "OKAY");
  // A logical partition named critical by itself.
  config.critical = {"vendor"};
  Make(config);
  EXPECT_EQ(One("erase:vendor_a"), "FAILcritical partition 'vendor_a': flashing unlock_critical");
  EXPECT_EQ(One("delete-logical-partition:vendor_a"), "FAILcritical partition 'vendor_a': flashing unlock_critical");
  EXPECT_EQ(One("erase:system_a"), "OKAY");
}

// Flashing the super itself (a whole super image) replaces the metadata; the
// logical partitions are read again before the flash is answered, or, with
// write-behind (the super image's parts follow each other without waiting),
// before the next command looks one up: a flash right after it sees the new
// layout.
TEST_F(LogicalSessionTest, FlashingTheSuperReadsItsMetadataAgain) {
  for (bool write_behind : {false, true}) {
    DeviceConfig config;
    config.write_behind = write_behind;
    Make(config);
    testing::MemoryBlockIo image(kSuperSize, "image");
    ASSERT_TRUE(lp::FlashMetadata(image, Layout({kMiB, 4 * kMiB, 0, 0})).ok());
    const uint64_t area = lp::TotalMetadataSize(Layout().geometry);
    SparseBuilder b(4096);
    std::vector<uint8_t> bytes = image.bytes();
    b.Raw({bytes.data(), area}).DontCare(static_cast<uint32_t>((kSuperSize - area) / 4096));
    const std::string answer = write_behind ? "OKAYqueued (write-behind)" : "OKAY";
    EXPECT_EQ(Send(b.Build(), "flash:super"), (std::vector<std::string>{"OKAY", answer}));
    // vendor_a is 1 MiB in the old metadata, 4 MiB in the new.
    auto vendor = SparseBuilder::RandomBytes(2 * kMiB, 11);
    EXPECT_EQ(Send(vendor, "flash:vendor_a"), (std::vector<std::string>{"OKAY", answer})) << write_behind;
    EXPECT_EQ(One("getvar:partition-size:vendor_a"), "OKAY0x0000000000400000");
    std::vector<uint8_t> landed = Through("vendor_a");
    ASSERT_GE(landed.size(), vendor.size());
    EXPECT_TRUE(std::equal(vendor.begin(), vendor.end(), landed.begin())) << write_behind;
    EXPECT_EQ(device_->storage().Find("vendor_a")->size, 4 * kMiB);
    // Erasing the super leaves no metadata, and no logical partitions.
    EXPECT_EQ(One("erase:super"), "OKAY");
    EXPECT_EQ(One("getvar:is-logical:vendor_a"), "FAILpartition 'vendor_a' not found");
    EXPECT_EQ(One("resize-logical-partition:vendor_a:0"), "FAILlogical partition 'vendor_a' not found");
    EXPECT_EQ(Send(EmptyImage(Layout({0, 0, 0, 0})), "update-super:super"), kOkay2);
    EXPECT_EQ(One("getvar:is-logical:vendor_a"), "OKAYyes");
  }
}

// fetch reads one window: a logical partition in one extent is read from
// it; one in several extents is refused, never read as [offset, +size).
TEST_F(LogicalSessionTest, FetchReadsALogicalPartitionOnlyInsideItsExtent) {
  auto vendor = SparseBuilder::RandomBytes(kMiB, 3);
  ASSERT_EQ(Send(vendor, "flash:vendor_a"), kOkay2);
  ScriptedConnection t;
  t.Command("fetch:vendor_a:0x1000:0x2000");
  EXPECT_EQ(Run(t), std::vector<std::string>{"OKAY"});
  EXPECT_EQ(t.sent().front(), "DATA00002000");
  EXPECT_TRUE(t.data() == std::string(vendor.begin() + 0x1000, vendor.begin() + 0x3000));
  ASSERT_EQ(device_->storage().Find("system_a")->extents.size(), 2u);
  EXPECT_EQ(One("fetch:system_a"), "FAILlogical partition 'system_a' in 2 extents cannot be read...");
}

TEST_F(LogicalSessionTest, SetActiveReadsThatSlotsMetadata) {
  testing::VectorBlockIo io(&mem_.disk(), kSuperOffset, kSuperSize);
  ASSERT_TRUE(lp::UpdateMetadata(io, Layout({3 * kMiB, 2 * kMiB, 2 * kMiB, 0}), 1).ok());
  EXPECT_EQ(One("getvar:partition-size:vendor_a"), "OKAY0x0000000000100000");
  EXPECT_EQ(One("set_active:b"), "OKAY");
  EXPECT_EQ(One("getvar:partition-size:vendor_a"), "OKAY0x0000000000200000");
  EXPECT_EQ(One("getvar:current-slot"), "OKAYb");
}

TEST_F(LogicalSessionTest, WithoutASuperTheCommandsSaySo) {
  DeviceConfig config;
  io::Geometry g{.size = mem_.disk().size(), .logical_block = 512, .physical_block = 4096,
                 .mem_align = 512, .offset_align = 512, .max_request = kMiB, .direct = false};
  device_ = std::make_unique<FastbootDevice>(config, Storage::ForQueue(&mem_, g, parts_), PersistentState::InMemory());
  EXPECT_EQ(One("getvar:super-partition-name"), "FAILthis device has no super partition");
  EXPECT_EQ(One("getvar:is-userspace"), "OKAYno");
  EXPECT_EQ(One("getvar:has-slot:odm"), "FAILpartition 'odm' not found");
  EXPECT_EQ(One("getvar:is-logical:super"), "OKAYno");
  EXPECT_EQ(One("create-logical-partition:a:1"), "FAILcreate-logical-partition: this device has no super partition");
}

}  // namespace
}  // namespace flashpipe::fastboot
