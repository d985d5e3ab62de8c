#include "fastboot/session.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <thread>

#include "testing/fastboot_fakes.h"
#include "testing/session_runner.h"
#include "testing/fault_queue.h"
#include "testing/process.h"
#include "testing/sparse_builder.h"
#include "testing/temp_dir.h"
#include "wire/protocol.h"

namespace flashpipe::fastboot {
namespace {

using testing::MemQueue;
using testing::ScriptedConnection;
using testing::SparseBuilder;

constexpr uint64_t kMiB = 1 << 20;
constexpr uint8_t kGuard = 0xEE;

std::string Hex8(size_t n) { return fmt::format("{:08x}", n); }

class SessionTest : public ::testing::Test {
 protected:
  void SetUp() override { Make({}); }

  void Make(DeviceConfig config, io::IoQueue* queue = nullptr) {
    parts_ = {{"boot_a", 0, 1 * kMiB, kMiB},
              {"boot_b", 0, 2 * kMiB, kMiB},
              {"system", 0, 3 * kMiB, 2 * kMiB},
              {"misc", 0, 5 * kMiB + 4096, 64 * 1024}};
    for (const auto& p : parts_) mem_.Allow(p.offset, p.size);
    io::Geometry g{.size = mem_.disk().size(), .logical_block = 512, .physical_block = 4096,
                   .mem_align = 512, .offset_align = 512, .max_request = kMiB, .direct = false};
    if (config.max_download_size == 256u << 20) config.max_download_size = 2 * kMiB;
    device_ = std::make_unique<FastbootDevice>(config, Storage::ForQueue(queue ? queue : &mem_, g, parts_),
                                               PersistentState::InMemory());
  }

  std::vector<std::string> Run(ScriptedConnection& t) { return testing::RunSession(device_.get(), t); }
  std::string One(const std::string& command) { return testing::RunOne(device_.get(), command); }
  std::vector<uint8_t> Bytes(const Partition& p) {
    return {mem_.disk().begin() + p.offset, mem_.disk().begin() + p.offset + p.size};
  }
  // Every byte outside every partition still holds the guard.
  void ExpectGuardsIntact() {
    std::vector<bool> inside(mem_.disk().size());
    for (const auto& p : parts_) std::fill(inside.begin() + p.offset, inside.begin() + p.offset + p.size, true);
    for (size_t i = 0; i < inside.size(); ++i) {
      if (!inside[i] && mem_.disk()[i] != kGuard) {
        ADD_FAILURE() << "guard byte " << i << " changed";
        return;
      }
    }
    EXPECT_TRUE(mem_.violations().empty()) << mem_.violations()[0];
  }
  std::vector<std::string> Flash(const std::string& part, const std::vector<uint8_t>& image, size_t slice = SIZE_MAX) {
    ScriptedConnection t;
    t.SetMaxSlice(slice);
    t.Command("download:" + Hex8(image.size())).Data(image).Command("flash:" + part);
    return Run(t);
  }

  MemQueue mem_{8 * kMiB, kGuard};
  std::vector<Partition> parts_;
  std::unique_ptr<FastbootDevice> device_;
};

TEST_F(SessionTest, GetvarEachVariable) {
  EXPECT_EQ(One("getvar:version"), "OKAY0.4");
  EXPECT_EQ(One("getvar:version-bootloader"), "OKAYflashpipe-" FLASHPIPE_VERSION);
  EXPECT_EQ(One("getvar:version-baseband"), "OKAYN/A");
  EXPECT_EQ(One("getvar:product"), "OKAYflashpipe");
  EXPECT_EQ(One("getvar:serialno"), "OKAYflashpipe");
  EXPECT_EQ(One("getvar:max-download-size"), "OKAY0x00200000");
  EXPECT_EQ(One("getvar:partition-size:system"), "OKAY0x0000000000200000");
  EXPECT_EQ(One("getvar:partition-size:boot"), "OKAY0x0000000000100000");  // current slot
  EXPECT_EQ(One("getvar:partition-type:system"), "OKAYraw");
  EXPECT_EQ(One("getvar:has-slot:boot"), "OKAYyes");
  EXPECT_EQ(One("getvar:has-slot:system"), "OKAYno");
  EXPECT_EQ(One("getvar:current-slot"), "OKAYa");
  EXPECT_EQ(One("getvar:slot-count"), "OKAY2");
  EXPECT_EQ(One("getvar:is-logical:system"), "OKAYno");
  EXPECT_EQ(One("getvar:is-userspace"), "OKAYno");
  EXPECT_EQ(One("getvar:secure"), "OKAYno");
  EXPECT_EQ(One("getvar:unlocked"), "OKAYyes");
  EXPECT_EQ(One("getvar:logical-block-size"), "OKAY0x200");
  EXPECT_EQ(One("getvar:erase-block-size"), "OKAY0x1000");
}

// The client formats (fastboot -w, format) only what partition-type calls
// ext4 or f2fs: configuration and the GPT type decide, not the content.
TEST_F(SessionTest, PartitionTypeFromConfigurationAndGptType) {
  // Android data: DC76DDA9-5AC1-491C-AF42-A82591580C0D, as stored on disk.
  parts_.push_back({"userdata", 0, 6 * kMiB, kMiB,
                    {0xA9, 0xDD, 0x76, 0xDC, 0xC1, 0x5A, 0x1C, 0x49, 0xAF, 0x42, 0xA8, 0x25, 0x91, 0x58, 0x0C, 0x0D}});
  io::Geometry g{.size = mem_.disk().size(), .logical_block = 512, .physical_block = 4096,
                 .mem_align = 512, .offset_align = 512, .max_request = kMiB, .direct = false};
  DeviceConfig config{.max_download_size = 2 * kMiB};
  config.partition_types = {{"boot", "f2fs"}, {"system", "ext4"}};
  device_ = std::make_unique<FastbootDevice>(config, Storage::ForQueue(&mem_, g, parts_), PersistentState::InMemory());
  EXPECT_EQ(One("getvar:partition-type:userdata"), "OKAYext4");  // holds nothing: its GPT type says
  EXPECT_EQ(One("getvar:partition-type:system"), "OKAYext4");    // configured
  EXPECT_EQ(One("getvar:partition-type:boot_b"), "OKAYf2fs");    // configured by base name
  EXPECT_EQ(One("getvar:partition-type:misc"), "OKAYraw");       // neither: the content (nothing)
}

TEST_F(SessionTest, GetvarFailures) {
  EXPECT_EQ(One("getvar:nonsense"), "FAILunknown variable 'nonsense'");
  EXPECT_EQ(One("getvar:partition-size:nope"), "FAILpartition 'nope' not found");
  EXPECT_EQ(One("getvar:has-slot:nope"), "FAILpartition 'nope' not found");
  EXPECT_EQ(One("getvar:partition-size:"), "FAILmissing partition name");
  EXPECT_EQ(One("getvar:"), "FAILunknown variable ''");
}

TEST_F(SessionTest, GetvarAllListsEveryVariableAsInfo) {
  ScriptedConnection t;
  t.Command("getvar:all");
  EXPECT_EQ(Run(t), std::vector<std::string>{"OKAY"});
  auto infos = t.Infos();
  auto has = [&](const std::string& line) { return std::find(infos.begin(), infos.end(), line) != infos.end(); };
  EXPECT_TRUE(has("version:0.4"));
  EXPECT_TRUE(has("max-download-size:0x00200000"));
  EXPECT_TRUE(has("partition-size:system:0x0000000000200000"));
  EXPECT_TRUE(has("partition-type:boot_b:raw"));
  EXPECT_TRUE(has("is-logical:misc:no"));
  EXPECT_TRUE(has("current-slot:a"));
  EXPECT_TRUE(has("has-slot:boot:yes"));
  EXPECT_TRUE(has("has-slot:system:no"));
  EXPECT_TRUE(has("max-fetch-size:0x00200000"));
  EXPECT_TRUE(has("stream-flash:yes"));
  EXPECT_EQ(infos.size(), 15u + 3 * 4 + 3);  // globals, 3 per partition, has-slot per base name
  for (const auto& s : t.sent()) EXPECT_LE(s.size(), wire::kMaxResponse);
}

TEST_F(SessionTest, GetvarAllKeepsTheWholeSizeOfA36CharacterPartitionName) {
  const std::string name = "abcdefghijklmnopqrstuvwxyz0123456789";  // longest GPT name
  parts_ = {{name, 0, 1 * kMiB, 4 * kMiB}};
  io::Geometry g{.size = mem_.disk().size(), .logical_block = 512, .physical_block = 4096,
                 .mem_align = 512, .offset_align = 512, .max_request = kMiB, .direct = false};
  device_ = std::make_unique<FastbootDevice>(DeviceConfig{}, Storage::ForQueue(&mem_, g, parts_),
                                             PersistentState::InMemory());
  ScriptedConnection t;
  t.Command("getvar:all");
  EXPECT_EQ(Run(t), std::vector<std::string>{"OKAY"});
  auto infos = t.Infos();
  EXPECT_NE(std::find(infos.begin(), infos.end(), "partition-size:" + name + ":0x400000"), infos.end());
  for (const auto& s : t.sent()) EXPECT_LE(s.size(), wire::kMaxResponse);
}

TEST_F(SessionTest, FlashRawWritesExactlyThePartition) {
  auto image = SparseBuilder::RandomBytes(kMiB, 7);
  EXPECT_EQ(Flash("system", image), (std::vector<std::string>{"OKAY", "OKAY"}));
  auto got = Bytes(parts_[2]);
  EXPECT_TRUE(std::equal(image.begin(), image.end(), got.begin()));
  EXPECT_TRUE(std::all_of(got.begin() + kMiB, got.end(), [](uint8_t b) { return b == kGuard; }));
  ExpectGuardsIntact();
}

TEST_F(SessionTest, FlashRawOddSizeAndByteSlices) {
  auto image = SparseBuilder::RandomBytes(5000, 3);
  EXPECT_EQ(Flash("misc", image, 1), (std::vector<std::string>{"OKAY", "OKAY"}));
  auto got = Bytes(parts_[3]);
  EXPECT_TRUE(std::equal(image.begin(), image.end(), got.begin()));
  EXPECT_EQ(got[5000], kGuard);
  ExpectGuardsIntact();
}

TEST_F(SessionTest, FlashSparseDecodedWhileArrivingInSmallSlices) {
  SparseBuilder b(4096);
  b.RawBlocks(3, 1).Fill(4, 0x11223344).DontCare(2).RawBlocks(1, 2).Fill(20, 0).Crc();
  auto simg = b.Build();
  EXPECT_EQ(Flash("system", simg, 777), (std::vector<std::string>{"OKAY", "OKAY"}));
  auto got = Bytes(parts_[2]);
  const auto& want = b.expanded();
  EXPECT_TRUE(std::equal(want.begin(), want.begin() + 7 * 4096, got.begin()));
  EXPECT_TRUE(std::all_of(got.begin() + 7 * 4096, got.begin() + 9 * 4096, [](uint8_t x) { return x == kGuard; }))
      << "DONT_CARE must not be written";
  EXPECT_TRUE(std::equal(want.begin() + 9 * 4096, want.end(), got.begin() + 9 * 4096));
  ExpectGuardsIntact();
}

// CRC32 chunks are not computed while the bytes arrive, but an image that
// has one is checked whole before flash writes anything.
TEST_F(SessionTest, WrongCrc32ChunkFailsAndNothingIsWritten) {
  SparseBuilder b(4096);
  b.RawBlocks(3, 1).Fill(4, 0x11223344).CrcValue(0x12345678).RawBlocks(1, 2);
  auto simg = b.Build();
  ScriptedConnection t;
  t.SetMaxSlice(777);
  t.Command("download:" + Hex8(simg.size())).Data(simg).Command("flash:system");
  auto r = Run(t);
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[0], "OKAY");
  EXPECT_EQ(r[1], "FAILinvalid sparse image: chunk 2 at input byte 0x3038");
  std::string infos;
  for (const auto& line : t.Infos()) infos += line + " ";
  EXPECT_NE(infos.find("CRC32 0x12345678 != 0x8dafdacc"), std::string::npos) << infos;
  auto got = Bytes(parts_[2]);
  EXPECT_TRUE(std::all_of(got.begin(), got.end(), [](uint8_t x) { return x == kGuard; }));
}

TEST_F(SessionTest, FlashSplitPartsIncludingTruncatedPadding) {
  // What 29.0.6 sends for a raw image of 5 blocks + 1234 bytes with -S: every
  // part has the whole image's total_blks; parts 2.. start with DONT_CARE;
  // parts 1..N-1 lack their final DONT_CARE (one chunk fewer than counted).
  auto whole = SparseBuilder::RandomBytes(6 * 4096, 9);
  SparseBuilder p1(4096), p2(4096);
  p1.Raw(std::span(whole).first(3 * 4096)).SetTotalBlocks(6).SetTotalChunks(2);
  p2.DontCare(3).Raw(std::span(whole).subspan(3 * 4096)).SetTotalBlocks(6);
  EXPECT_EQ(Flash("system", p1.Build()), (std::vector<std::string>{"OKAY", "OKAY"}));
  EXPECT_EQ(Flash("system", p2.Build()), (std::vector<std::string>{"OKAY", "OKAY"}));
  auto got = Bytes(parts_[2]);
  EXPECT_TRUE(std::equal(whole.begin(), whole.end(), got.begin()));
  ExpectGuardsIntact();
}

TEST_F(SessionTest, CorruptSparseFailsWithReasonAndWritesNothing) {
  SparseBuilder b(4096);
  b.RawBlocks(2, 1).Chunk(sparse::kChunkRaw, 1, std::vector<uint8_t>(100, 1)).RawBlocks(1, 3);
  auto before = mem_.disk();
  auto r = Flash("system", b.Build());
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[0], "OKAY");
  EXPECT_TRUE(r[1].rfind("FAILinvalid sparse image: chunk 1", 0) == 0) << r[1];
  EXPECT_EQ(mem_.disk(), before);
  EXPECT_EQ(mem_.bytes_written(), 0u);
}

TEST_F(SessionTest, ImageBiggerThanPartitionFailsBeforeWriting) {
  auto before = mem_.disk();
  auto r = Flash("boot_a", SparseBuilder::RandomBytes(kMiB + 4096, 1));
  EXPECT_EQ(r.back(), "FAILimage of 1052672 bytes > partition 'boot_a' of 1048576 bytes");
  SparseBuilder b(4096);
  b.RawBlocks(1, 1).DontCare(1000);  // expands past the 64 KiB partition
  r = Flash("misc", b.Build());
  EXPECT_TRUE(r.back().rfind("FAILimage of 4100096 bytes > partition 'misc'", 0) == 0) << r.back();
  EXPECT_EQ(mem_.disk(), before);
}

TEST_F(SessionTest, DownloadLimitsAndMalformedSizes) {
  EXPECT_EQ(One("download:00200001"), "FAILdownload of 2097153 bytes > max-download-size 2097152");
  EXPECT_EQ(One("download:00000000"), "FAILdownload size 0");
  EXPECT_EQ(One("download:1234"), "FAILdownload size '1234' is not 8 hex digits");
  EXPECT_EQ(One("download:0000zz00"), "FAILdownload size '0000zz00' is not hex");
  EXPECT_EQ(One("flash:system"), "FAILno image downloaded");
  EXPECT_EQ(One("flash:nope"), "FAILpartition 'nope' not found");
}

TEST_F(SessionTest, ClientGoneMidDownloadWritesNothing) {
  ScriptedConnection t;
  t.Command("download:00001000").Data(std::string(100, 'x')).Close();
  auto r = Run(t);
  EXPECT_EQ(t.sent(), std::vector<std::string>{"DATA00001000"});
  EXPECT_EQ(One("flash:system"), "FAILno image downloaded");
  EXPECT_EQ(mem_.bytes_written(), 0u);
}

TEST_F(SessionTest, EraseZeroesOnlyThePartition) {
  Flash("boot_b", SparseBuilder::RandomBytes(kMiB, 5));
  EXPECT_EQ(One("erase:boot_b"), "OKAY");
  auto got = Bytes(parts_[1]);
  EXPECT_TRUE(std::all_of(got.begin(), got.end(), [](uint8_t b) { return b == 0; }));
  EXPECT_EQ(One("erase:nope"), "FAILpartition 'nope' not found");
  ExpectGuardsIntact();
}

TEST_F(SessionTest, SetActiveSelectsTheSlotForUnsuffixedNames) {
  EXPECT_EQ(One("set_active:b"), "OKAY");
  EXPECT_EQ(One("getvar:current-slot"), "OKAYb");
  EXPECT_EQ(One("set_active:_a"), "OKAY");
  EXPECT_EQ(One("set_active:c"), "FAILslot 'c' is not a or b");
  EXPECT_EQ(One("set_active:b"), "OKAY");
  auto image = SparseBuilder::RandomBytes(4096, 11);
  Flash("boot", image);
  auto b = Bytes(parts_[1]);
  EXPECT_TRUE(std::equal(image.begin(), image.end(), b.begin()));
  EXPECT_EQ(Bytes(parts_[0])[0], kGuard);
}

TEST_F(SessionTest, LockedDeviceRefusesDownloadFlashErase) {
  EXPECT_EQ(One("flashing lock"), "OKAY");
  EXPECT_EQ(One("getvar:unlocked"), "OKAYno");
  EXPECT_EQ(One("download:00001000"), "FAILdownload: locked (fastboot flashing unlock)");
  EXPECT_EQ(One("flash:system"), "FAILflash: locked (fastboot flashing unlock)");
  EXPECT_EQ(One("erase:system"), "FAILerase: locked (fastboot flashing unlock)");
  ScriptedConnection t;
  t.Command("flashing get_unlock_ability");
  EXPECT_EQ(Run(t), std::vector<std::string>{"OKAY"});
  EXPECT_EQ(t.Infos(), std::vector<std::string>{"get_unlock_ability: 1"});
  EXPECT_EQ(One("flashing unlock"), "OKAY");
  EXPECT_EQ(One("flashing frobnicate"), "FAILflashing frobnicate: not supported");
  EXPECT_EQ(mem_.bytes_written(), 0u);
}

// boot (boot_a, boot_b) is critical: locked by default, then unlocked.
TEST_F(SessionTest, CriticalPartitionsNeedUnlockCritical) {
  Make({.critical = {"boot"}});
  auto a = SparseBuilder::RandomBytes(4096, 3);
  ScriptedConnection t;
  t.Command("download:" + Hex8(a.size())).Data(a).Command("flash:boot_a").Command("erase:boot_b")
      .Command("flash:system").Command("flashing unlock_critical").Command("flash:boot_a")
      .Command("flashing lock_critical").Command("erase:boot");
  auto r = Run(t);
  ASSERT_EQ(r.size(), 8u);
  EXPECT_EQ(r[1], "FAILcritical partition 'boot_a': flashing unlock_critical");
  EXPECT_EQ(r[2], "FAILcritical partition 'boot_b': flashing unlock_critical");
  EXPECT_EQ(r[3], "OKAY");
  EXPECT_EQ(r[4], "OKAY");
  EXPECT_EQ(r[5], "OKAY");
  EXPECT_EQ(r[6], "OKAY");
  EXPECT_EQ(r[7], "FAILcritical partition 'boot_a': flashing unlock_critical");
  auto boot = Bytes(parts_[0]);
  EXPECT_TRUE(std::equal(a.begin(), a.end(), boot.begin()));
  auto boot_b = Bytes(parts_[1]);
  EXPECT_TRUE(std::all_of(boot_b.begin(), boot_b.end(), [](uint8_t x) { return x == kGuard; }));
  ExpectGuardsIntact();
}

TEST_F(SessionTest, UnlockRefusedWhenNotAllowed) {
  Make({.unlock_allowed = false});
  EXPECT_EQ(One("flashing unlock_critical"), "FAILunlocking is not allowed on this device");
  EXPECT_TRUE(device_->state().critical_locked());
  EXPECT_EQ(One("flashing lock"), "OKAY");
  EXPECT_EQ(One("flashing unlock"), "FAILunlocking is not allowed on this device");
  EXPECT_EQ(One("getvar:unlocked"), "OKAYno");
}

// What `fastboot reboot fastboot` checks when it reconnects.
TEST_F(SessionTest, RebootFastbootThenIsUserspaceUntilTheNextReboot) {
  EXPECT_EQ(One("getvar:is-userspace"), "OKAYno");
  EXPECT_EQ(One("reboot-fastboot"), "OKAY");
  EXPECT_EQ(One("getvar:is-userspace"), "OKAYyes");
  EXPECT_EQ(One("reboot:fastboot"), "OKAY");
  EXPECT_EQ(One("getvar:is-userspace"), "OKAYyes");
  EXPECT_EQ(One("reboot-bootloader"), "OKAY");
  EXPECT_EQ(One("getvar:is-userspace"), "OKAYno");
}

TEST_F(SessionTest, RebootAnswersThenEndsTheSession) {
  for (const char* cmd : {"reboot", "reboot-bootloader", "reboot-fastboot", "reboot-recovery", "continue", "shutdown"}) {
    ScriptedConnection t;
    t.Command(cmd).Command("getvar:version");
    EXPECT_EQ(Run(t), std::vector<std::string>{"OKAY"}) << cmd;
  }
}

TEST_F(SessionTest, ShutdownRunsTheHookAndCanEndTheDaemon) {
  testing::TempDir dir;
  std::string marker = dir / "down";
  Make({.on_shutdown = "touch " + marker, .exit_on_shutdown = true});
  EXPECT_EQ(One("shutdown"), "OKAY");
  EXPECT_EQ(access(marker.c_str(), F_OK), 0);
  EXPECT_TRUE(device_->exit_requested());
}

TEST_F(SessionTest, OemRunsOnlyConfiguredCommands) {
  EXPECT_EQ(One("oem unlock-everything"), "FAILoem unlock-everything: not configured");
  Make({.oem = {{"hello", "echo hello $1; echo second"}, {"bad", "exit 3"}}});
  ScriptedConnection t;
  t.Command("oem hello world");
  EXPECT_EQ(Run(t), std::vector<std::string>{"OKAY"});
  EXPECT_EQ(t.Infos(), (std::vector<std::string>{"hello world", "second"}));
  EXPECT_EQ(One("oem bad"), "FAILoem bad: exit status 3");
  EXPECT_EQ(One("oem"), "FAILoem: missing command");
}

TEST_F(SessionTest, MalformedCommandsFailAndTheSessionGoesOn) {
  ScriptedConnection t;
  t.Command("").Command(std::string("get\x01var", 7)).Command(std::string(65, 'g')).Command("frobnicate")
      .Command("getvar:version");
  auto r = Run(t);
  ASSERT_EQ(r.size(), 5u);
  EXPECT_EQ(r[0], "FAILempty command");
  EXPECT_EQ(r[1], "FAILcommand byte 3 is 0x01, not printable ASCII");
  EXPECT_TRUE(r[2].rfind("FAILcommand of 65 bytes", 0) == 0) << r[2];
  EXPECT_EQ(r[3], "FAILunknown command 'frobnicate'");
  EXPECT_EQ(r[4], "OKAY0.4");
}

TEST_F(SessionTest, LongFailureReasonGoesOutAsInfoThenShortFail) {
  SparseBuilder b(4096);
  b.RawBlocks(1, 1).Chunk(0xBEEF, 1, {});
  ScriptedConnection t;
  auto simg = b.Build();
  t.Command("download:" + Hex8(simg.size())).Data(simg).Command("flash:system");
  Run(t);
  for (const auto& s : t.sent()) EXPECT_LE(s.size(), wire::kMaxResponse);
  // INFO lines broken between words: joined with spaces they are the reason.
  std::string joined;
  for (const auto& i : t.Infos()) joined += (joined.empty() ? "" : " ") + i;
  EXPECT_EQ(joined, "invalid sparse image: chunk 1 at input byte 0x1028: unknown chunk type 0xbeef");
  // The FAIL: the whole leading parts that fit, not 60 bytes cut anywhere.
  EXPECT_EQ(t.Finals().back(), "FAILinvalid sparse image: chunk 1 at input byte 0x1028");
}

TEST_F(SessionTest, WriteBehindQueuesAndGetvarWaits) {
  Make({.write_behind = true});
  auto a = SparseBuilder::RandomBytes(kMiB, 21), b = SparseBuilder::RandomBytes(kMiB, 22);
  ScriptedConnection t;
  t.Command("download:" + Hex8(a.size())).Data(a).Command("flash:system")
      .Command("download:" + Hex8(b.size())).Data(b).Command("flash:boot_a").Command("getvar:version");
  EXPECT_EQ(Run(t), (std::vector<std::string>{"OKAY", "OKAYqueued (write-behind)", "OKAY",
                                              "OKAYqueued (write-behind)", "OKAY0.4"}));
  auto s = Bytes(parts_[2]);
  auto boot = Bytes(parts_[0]);
  EXPECT_TRUE(std::equal(a.begin(), a.end(), s.begin()));
  EXPECT_TRUE(std::equal(b.begin(), b.end(), boot.begin()));
  ExpectGuardsIntact();
}

TEST_F(SessionTest, EveryFlashIsSyncedBeforeItsOkay) {
  auto a = SparseBuilder::RandomBytes(kMiB, 21);
  ScriptedConnection t;
  t.Command("download:" + Hex8(a.size())).Data(a).Command("flash:system").Command("flash:boot_a");
  EXPECT_EQ(Run(t), (std::vector<std::string>{"OKAY", "OKAY", "OKAY"}));
  EXPECT_EQ(mem_.syncs(), 2);
  EXPECT_EQ(mem_.unsynced_bytes(), 0u);
}

// The parts of a split image are written back to back and synced once: the
// worker does not sync while the next part is waiting, and getvar waits for
// the sync.
TEST_F(SessionTest, WriteBehindSyncsOnceAfterBackToBackParts) {
  Make({.write_behind = true});
  SparseBuilder p1(4096), p2(4096);
  p1.RawBlocks(64, 31).DontCare(448);
  p2.DontCare(64).RawBlocks(64, 32).DontCare(384);
  auto a = p1.Build(), b = p2.Build();
  ScriptedConnection t;
  t.Command("download:" + Hex8(a.size())).Data(a).Command("flash:system")
      .Command("download:" + Hex8(b.size())).Data(b).Command("flash:system").Command("getvar:version");
  mem_.Hold();  // the first part's writes block until the second flash waits
  std::thread opener([this] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    mem_.Release();
  });
  auto r = Run(t);
  opener.join();
  EXPECT_EQ(r, (std::vector<std::string>{"OKAY", "OKAYqueued (write-behind)", "OKAY",
                                          "OKAYqueued (write-behind)", "OKAY0.4"}));
  EXPECT_EQ(mem_.syncs(), 1);
  EXPECT_EQ(mem_.unsynced_bytes(), 0u);
  auto s = Bytes(parts_[2]);
  auto r1 = SparseBuilder::RandomBytes(64 * 4096, 31), r2 = SparseBuilder::RandomBytes(64 * 4096, 32);
  EXPECT_TRUE(std::equal(r1.begin(), r1.end(), s.begin()));
  EXPECT_TRUE(std::equal(r2.begin(), r2.end(), s.begin() + r1.size()));
  ExpectGuardsIntact();
}

TEST_F(SessionTest, WriteBehindErrorIsReportedByTheNextCommand) {
  testing::FaultQueue faulty(&mem_);
  faulty.FailWrites(3 * kMiB + 4096, EIO);
  Make({.write_behind = true}, &faulty);
  auto a = SparseBuilder::RandomBytes(kMiB, 21);
  ScriptedConnection t;
  t.Command("download:" + Hex8(a.size())).Data(a).Command("flash:system").Command("getvar:version")
      .Command("getvar:version");
  auto r = Run(t);
  ASSERT_EQ(r.size(), 4u);
  EXPECT_EQ(r[1], "OKAYqueued (write-behind)");
  // The FAIL itself (60 bytes) names the partition and the error.
  EXPECT_TRUE(r[2].rfind("FAILwrite-behind to 'system' failed (Input/output error)", 0) == 0) << r[2];
  EXPECT_EQ(r[3], "OKAY0.4");
}

// Locked means locked for everything that changes the device (AOSP):
// set_active, unlock_critical and unmarked oem commands too, not only
// download, flash and erase. Reading and rebooting still work.
TEST_F(SessionTest, LockedRefusesEveryCommandThatChangesTheDevice) {
  testing::TempDir dir;
  std::string marker = dir / "ran";
  Make({.oem = {{"touch", "touch " + marker}, {"info", "echo info", /*allowed_locked=*/true}},
        .on_set_active = "touch " + marker, .on_boot = "touch " + marker, .misc = "misc"});
  EXPECT_EQ(One("flashing lock"), "OKAY");
  EXPECT_EQ(One("boot"), "FAILboot: locked (fastboot flashing unlock)");
  EXPECT_EQ(Bytes(parts_[3])[2048], kGuard) << "a refused set_active wrote misc";
  EXPECT_EQ(One("set_active:b"), "FAILset_active: locked (fastboot flashing unlock)");
  EXPECT_EQ(One("getvar:current-slot"), "OKAYa");
  EXPECT_EQ(Bytes(parts_[3])[2048], kGuard) << "a refused set_active wrote misc";
  EXPECT_EQ(One("flashing unlock_critical"), "FAILflashing unlock_critical: locked (fastboot flashing unlock)");
  EXPECT_TRUE(device_->state().critical_locked());
  EXPECT_EQ(One("oem touch"), "FAILoem touch: locked (fastboot flashing unlock)");
  EXPECT_NE(access(marker.c_str(), F_OK), 0) << "a refused oem command ran";
  EXPECT_EQ(One("download:00001000"), "FAILdownload: locked (fastboot flashing unlock)");
  EXPECT_EQ(One("flash:system"), "FAILflash: locked (fastboot flashing unlock)");
  EXPECT_EQ(One("erase:system"), "FAILerase: locked (fastboot flashing unlock)");
  EXPECT_EQ(One("oem info"), "OKAY");  // marked safe (--oem-safe)
  EXPECT_EQ(One("getvar:unlocked"), "OKAYno");
  EXPECT_EQ(One("flashing lock_critical"), "OKAY");
  EXPECT_EQ(One("reboot-bootloader"), "OKAY");
  EXPECT_EQ(One("flashing unlock"), "OKAY");
  EXPECT_EQ(access(marker.c_str(), F_OK), -1) << "a refused hook ran";
  EXPECT_EQ(mem_.bytes_written(), 0u);
  EXPECT_EQ(One("set_active:b"), "OKAY");  // unlocked: misc's block written, 512 bytes
  EXPECT_EQ(mem_.bytes_written(), 512u);
  EXPECT_EQ(One("oem touch"), "OKAY");
  EXPECT_EQ(access(marker.c_str(), F_OK), 0);
}

// A download belongs to the session that made it: the next session (another
// client) cannot flash it.
TEST_F(SessionTest, ANewSessionStartsWithoutTheLastSessionsDownload) {
  auto image = SparseBuilder::RandomBytes(4096, 5);
  ScriptedConnection first;
  first.Command("download:" + Hex8(image.size())).Data(image);
  EXPECT_EQ(Run(first), std::vector<std::string>{"OKAY"});
  EXPECT_EQ(One("flash:system"), "FAILno image downloaded");
  EXPECT_EQ(mem_.bytes_written(), 0u);
  // Within one session a download may be flashed more than once.
  ScriptedConnection same;
  same.Command("download:" + Hex8(image.size())).Data(image).Command("flash:system").Command("flash:boot_a");
  EXPECT_EQ(Run(same), (std::vector<std::string>{"OKAY", "OKAY", "OKAY"}));
}

// A failed download, even one refused before any data (size 0, too large,
// malformed), drops the download before it: flash must not write the old
// image again (issue 19).
TEST_F(SessionTest, AFailedDownloadDropsThePreviousOne) {
  auto image = SparseBuilder::RandomBytes(4096, 5);
  for (const char* bad : {"download:00000000", "download:00200001", "download:zz"}) {
    ScriptedConnection t;
    t.Command("download:" + Hex8(image.size())).Data(image).Command(bad).Command("flash:system");
    auto r = Run(t);
    ASSERT_EQ(r.size(), 3u) << bad;
    EXPECT_EQ(r[0], "OKAY");
    EXPECT_EQ(r[1].rfind("FAIL", 0), 0u) << bad << ": " << r[1];
    EXPECT_EQ(r[2], "FAILno image downloaded") << bad;
  }
  EXPECT_EQ(mem_.bytes_written(), 0u);
}

TEST_F(SessionTest, RebootAcceptsOnlyTheProtocolsTargets) {
  EXPECT_EQ(One("reboot:bootloader"), "OKAY");
  EXPECT_EQ(One("reboot:recovery"), "OKAY");
  EXPECT_EQ(One("reboot:fastboot"), "OKAY");
  EXPECT_EQ(One("reboot:"), "OKAY");
  EXPECT_EQ(One("reboot:evil"), "FAILreboot: unknown target 'evil'");
  EXPECT_EQ(One("reboot:bootloader;rm -rf /"), "FAILreboot: unknown target 'bootloader;rm -rf /'");
  EXPECT_EQ(One("reboot-bootloader:x"), "FAILreboot-bootloader takes no argument");
  EXPECT_EQ(One("continue:x"), "FAILcontinue takes no argument");
  // A refused reboot leaves the session going.
  ScriptedConnection t;
  t.Command("reboot:edl").Command("getvar:version");
  EXPECT_EQ(Run(t), (std::vector<std::string>{"FAILreboot: unknown target 'edl'", "OKAY0.4"}));
}

TEST_F(SessionTest, OemOutputIsCappedAndTheRestCounted) {
  // 200 lines of 100 bytes: 40 whole lines fit in 4096 bytes.
  Make({.oem = {{"chatty", "i=0; while [ $i -lt 200 ]; do printf '%099d\\n' $i; i=$((i+1)); done"}}});
  ScriptedConnection t;
  t.Command("oem chatty");
  EXPECT_EQ(Run(t), std::vector<std::string>{"OKAY"});
  auto infos = t.Infos();
  ASSERT_FALSE(infos.empty());
  EXPECT_EQ(infos.back(), "oem chatty: 16000 more bytes of output dropped");
  size_t bytes = 0;
  for (size_t i = 0; i + 1 < infos.size(); ++i) bytes += infos[i].size();
  EXPECT_EQ(bytes, 40u * 99);
}

TEST_F(SessionTest, OemKilledAfterTheTimeoutWithEverythingItStarted) {
  testing::TempDir dir;
  std::string pidfile = dir / "pid";
  Make({.oem = {{"hang", "sleep 100 & echo $! > " + pidfile + "; wait"}},
        .hook_timeout = std::chrono::milliseconds(300)});
  auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(One("oem hang"), "FAILoem hang: killed after 0 s");
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  pid_t child = testing::PidFromFile(pidfile);
  ASSERT_GT(child, 0);
  EXPECT_TRUE(testing::ProcessGone(child)) << "the hook's background child survived";
}

TEST_F(SessionTest, OemKilledWhenTheClientGoesAway) {
  Make({.oem = {{"hang", "sleep 100"}}});
  ScriptedConnection t;
  t.Command("oem hang");
  std::thread leaver([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    t.SetGone(true);
  });
  auto start = std::chrono::steady_clock::now();
  Status st = Session(device_.get(), &t).Run();
  leaver.join();
  EXPECT_TRUE(st.ok()) << st.ToString();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  EXPECT_TRUE(t.Finals().empty());  // nobody to answer
}

TEST_F(SessionTest, OemArgumentsAreArgumentsNeverCommandText) {
  Make({.oem = {{"echo", "printf '%s|' \"$@\""}}});
  ScriptedConnection t;
  t.Command("oem echo a;touch${IFS}/tmp/x $(id) `id`");
  EXPECT_EQ(Run(t), std::vector<std::string>{"OKAY"});
  EXPECT_EQ(t.Infos(), std::vector<std::string>{"a;touch${IFS}/tmp/x|$(id)|`id`|"});
}

// A download that trickles in below the floor FAILs and ends the session.
TEST_F(SessionTest, SlowDownloadFailsAndEndsTheSession) {
  DeviceConfig config;
  config.limits = {.min_download_rate = 64 << 10, .rate_window = std::chrono::milliseconds(100)};
  Make(config);
  ScriptedConnection t;
  t.Command("download:00100000").Data(std::string(1000, 'x')).Stall().Command("getvar:version");
  auto start = std::chrono::steady_clock::now();
  Status st = Session(device_.get(), &t).Run();
  EXPECT_EQ(st.code(), Code::kTimedOut) << st.ToString();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(2));
  ASSERT_EQ(t.Finals().size(), 1u);
  EXPECT_TRUE(t.Finals()[0].rfind("FAILdownload at byte 1000 of 1048576: download too slow", 0) == 0)
      << t.Finals()[0];
  EXPECT_EQ(One("flash:system"), "FAILno image downloaded");
}

// Bytes that keep coming, but too slowly, are judged too.
TEST_F(SessionTest, TrickleBelowTheFloorFails) {
  DeviceConfig config;
  config.limits = {.min_download_rate = 64 << 10, .rate_window = std::chrono::milliseconds(100)};
  Make(config);
  ScriptedConnection t;
  t.SetMaxSlice(16);
  t.SetDelay(std::chrono::milliseconds(5));
  t.Command("download:00100000").Data(std::string(1 << 20, 'x'));
  Status st = Session(device_.get(), &t).Run();
  EXPECT_EQ(st.code(), Code::kTimedOut) << st.ToString();
  ASSERT_EQ(t.Finals().size(), 1u);
  EXPECT_NE(t.Finals()[0].find("download too slow"), std::string::npos) << t.Finals()[0];
}

TEST_F(SessionTest, SessionTimeoutEndsAnIdleSession) {
  DeviceConfig config;
  config.limits.session_timeout = std::chrono::seconds(1);
  Make(config);
  ScriptedConnection t;
  t.Command("getvar:version").Stall();
  auto start = std::chrono::steady_clock::now();
  Status st = Session(device_.get(), &t).Run();
  auto took = std::chrono::steady_clock::now() - start;
  EXPECT_EQ(st.code(), Code::kTimedOut) << st.ToString();
  EXPECT_NE(st.message().find("session time limit of 1 s"), std::string::npos) << st.ToString();
  EXPECT_GE(took, std::chrono::milliseconds(900));
  EXPECT_LT(took, std::chrono::seconds(3));
  EXPECT_EQ(t.Finals(), std::vector<std::string>{"OKAY0.4"});
}

TEST_F(SessionTest, ALockThatCannotBeSavedIsReportedAndStillHolds) {
  auto dir = std::make_unique<testing::TempDir>();
  auto state = PersistentState::Open(*dir / "state");
  ASSERT_TRUE(state.ok());
  io::Geometry g{.size = mem_.disk().size(), .logical_block = 512, .physical_block = 4096,
                 .mem_align = 512, .offset_align = 512, .max_request = kMiB, .direct = false};
  device_ = std::make_unique<FastbootDevice>(DeviceConfig{}, Storage::ForQueue(&mem_, g, parts_), *state);
  dir.reset();  // every save fails from now on
  ScriptedConnection t;
  t.Command("flashing lock");
  auto r = Run(t);
  ASSERT_EQ(r.size(), 1u);
  EXPECT_TRUE(r[0].rfind("FAILflashing lock: not saved", 0) == 0) << r[0];
  EXPECT_EQ(One("getvar:unlocked"), "OKAYno");
  EXPECT_EQ(One("erase:system"), "FAILerase: locked (fastboot flashing unlock)");
  EXPECT_TRUE(One("flashing unlock").rfind("FAILflashing unlock: not changed", 0) == 0);
  EXPECT_EQ(One("getvar:unlocked"), "OKAYno");
}

// --- misc, set_active hook, boot ---------------------------------------------

class MiscSessionTest : public SessionTest {
 protected:
  static constexpr uint64_t kAt = 2048;  // bootloader_control in misc
  BootControlBytes Block() {
    const Partition& misc = parts_[3];
    BootControlBytes b;
    std::copy_n(mem_.disk().begin() + misc.offset + kAt, b.size(), b.begin());
    return b;
  }
  void PutBlock(BootControlBytes b) {
    uint32_t crc = BootControlCrc(b);
    for (int i = 0; i < 4; ++i) b[28 + i] = static_cast<uint8_t>(crc >> (8 * i));
    std::copy(b.begin(), b.end(), mem_.disk().begin() + parts_[3].offset + kAt);
  }
};

TEST_F(MiscSessionTest, SetActiveWritesMiscAndTheSlotVariablesReadIt) {
  Make({.misc = "misc"});
  EXPECT_EQ(One("set_active:b"), "OKAY");
  BootControlBytes b = Block();
  ASSERT_TRUE(HasValidBootControl(b));
  EXPECT_EQ(b[1], 'b');
  EXPECT_EQ(GetSlot(b, 1).priority, 15u);
  EXPECT_EQ(GetSlot(b, 1).tries_remaining, 6u);
  EXPECT_EQ(One("getvar:current-slot"), "OKAYb");
  EXPECT_EQ(One("getvar:slot-retry-count:b"), "OKAY6");
  EXPECT_EQ(One("getvar:slot-successful:a"), "OKAYyes");  // the slot it ran from
  EXPECT_EQ(One("getvar:slot-successful:b"), "OKAYno");
  EXPECT_EQ(One("getvar:slot-unbootable:b"), "OKAYno");
  EXPECT_EQ(One("getvar:slot-retry-count:c"), "FAILslot 'c' is not a or b");
  // Only the block changed in misc; nothing outside the partitions.
  auto misc = Bytes(parts_[3]);
  for (size_t i = 0; i < misc.size(); ++i) {
    if (i < kAt || i >= kAt + 32) ASSERT_EQ(misc[i], kGuard) << "misc byte " << i;
  }
  ExpectGuardsIntact();
}

// What the bootloader left in misc wins over the state file.
TEST_F(MiscSessionTest, CurrentSlotIsReadBackFromMisc) {
  testing::TempDir dir;
  std::string out = dir / "slot";
  Make({.on_reboot = "echo $FLASHPIPE_SLOT > " + out, .misc = "misc"});
  EXPECT_EQ(One("set_active:b"), "OKAY");
  BootControlBytes b = Block();
  b[14] = 0x0f;  // b: no tries left, never booted: the bootloader falls back to a
  PutBlock(b);
  EXPECT_EQ(One("getvar:current-slot"), "OKAYa");
  EXPECT_EQ(One("getvar:slot-unbootable:b"), "OKAYyes");
  EXPECT_EQ(One("getvar:slot-retry-count:b"), "OKAY0");
  EXPECT_EQ(One("reboot"), "OKAY");
  auto text = testing::ReadFile(out);
  EXPECT_EQ(std::string(text.begin(), text.end()), "a\n") << "the reboot hook's slot is the one that boots";
}

TEST_F(MiscSessionTest, WithoutMiscTheSlotVariablesAreUnsupported) {
  EXPECT_EQ(One("getvar:slot-successful:a"), "FAILno misc partition (serve --misc PART)");
  EXPECT_EQ(One("set_active:b"), "OKAY");
  EXPECT_EQ(Bytes(parts_[3])[kAt], kGuard);
  ScriptedConnection t;
  t.Command("getvar:all");
  Run(t);
  for (const auto& line : t.Infos()) EXPECT_FALSE(line.starts_with("slot-successful")) << line;
}

TEST_F(MiscSessionTest, GetvarAllListsTheSlotVariablesPerSlot) {
  Make({.misc = "misc"});
  ScriptedConnection t;
  t.Command("getvar:all");
  Run(t);
  auto infos = t.Infos();
  for (const char* line : {"slot-successful:a:yes", "slot-successful:b:no", "slot-unbootable:a:no",
                           "slot-retry-count:b:7"}) {
    EXPECT_NE(std::find(infos.begin(), infos.end(), line), infos.end()) << line;
  }
}

TEST_F(MiscSessionTest, SetActiveHookSeesTheNewSlotAndMisc) {
  Make({.serialno = "SER1",
        .on_set_active = "echo \"$1 $FLASHPIPE_HOOK $FLASHPIPE_SLOT$FLASHPIPE_SLOT_SUFFIX "
                         "$FLASHPIPE_PREVIOUS_SLOT $FLASHPIPE_PARTITION $FLASHPIPE_PARTITION_OFFSET "
                         "$FLASHPIPE_PARTITION_SIZE $FLASHPIPE_SERIALNO $FLASHPIPE_LOCKED\"",
        .misc = "misc"});
  ScriptedConnection t;
  t.Command("set_active:b");
  EXPECT_EQ(Run(t), std::vector<std::string>{"OKAY"});
  EXPECT_EQ(t.Infos(), std::vector<std::string>{fmt::format("b set-active b_b a misc {} {} SER1 0", parts_[3].offset,
                                                            parts_[3].size)});
  Make({.on_set_active = "exit 4"});
  EXPECT_EQ(One("set_active:b"), "FAILset_active hook: exit status 4");
}

TEST_F(MiscSessionTest, CorruptMiscIsRebuiltFromTheHalsDefaults) {
  Make({.misc = "misc"});
  BootControlBytes b = DefaultBootControl(2, 0);
  b[20] = 1;  // CRC no longer matches
  std::copy(b.begin(), b.end(), mem_.disk().begin() + parts_[3].offset + kAt);
  EXPECT_EQ(One("getvar:slot-retry-count:a"), "OKAY7");
  EXPECT_EQ(One("set_active:b"), "OKAY");
  b = Block();
  ASSERT_TRUE(HasValidBootControl(b));
  EXPECT_EQ(b[20], 0);
  EXPECT_EQ(NextBootSlot(b, 0), 1);
}

TEST_F(SessionTest, BootWithoutAHookIsRefusedWithWhatToDo) {
  auto image = SparseBuilder::RandomBytes(4096, 3);
  ScriptedConnection t;
  t.Command("download:" + Hex8(image.size())).Data(image).Command("boot");
  auto r = Run(t);
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[1], "FAILboot: not supported: flash boot, then reboot");
  auto infos = t.Infos();
  std::string all;
  for (const auto& i : infos) all += i + " ";
  EXPECT_NE(all.find("fastboot flash boot IMAGE"), std::string::npos) << all;
  EXPECT_NE(all.find("--on-boot"), std::string::npos) << all;
}

TEST_F(SessionTest, BootHandsTheImageToTheHookThenRemovesIt) {
  testing::TempDir dir;
  std::string copy = dir.path() + "/booted";
  Make({.on_boot = "cp \"$1\" " + copy + " && echo \"$1\" > " + copy + ".path && test \"$1\" = \"$FLASHPIPE_IMAGE\""});
  auto image = SparseBuilder::RandomBytes(10000, 9);
  ScriptedConnection t;
  t.Command("download:" + Hex8(image.size())).Data(image).Command("boot").Command("getvar:version");
  EXPECT_EQ(Run(t), (std::vector<std::string>{"OKAY", "OKAY"}));  // boot ends the session
  EXPECT_EQ(testing::ReadFile(copy), image);
  auto text = testing::ReadFile(copy + ".path");
  std::string path(text.begin(), text.end() - 1);
  EXPECT_NE(access(path.c_str(), F_OK), 0) << path << " left behind";
  EXPECT_EQ(One("boot"), "FAILboot: no image downloaded");
  auto sparse = SparseBuilder(4096).RawBlocks(1, 1).Build();
  ScriptedConnection s;
  s.Command("download:" + Hex8(sparse.size())).Data(sparse).Command("boot");
  EXPECT_EQ(Run(s).back(), "FAILboot: a sparse image cannot be booted");
}


TEST_F(SessionTest, RebootAndShutdownHooksGetTheEnvironment) {
  testing::TempDir dir;
  std::string out = dir / "env";
  std::string dump = "echo \"$FLASHPIPE_HOOK $* $FLASHPIPE_SLOT $FLASHPIPE_LOCKED $FLASHPIPE_PRODUCT\" >> " + out;
  Make({.product = "board9", .on_reboot = dump, .on_shutdown = dump});
  EXPECT_EQ(One("set_active:b"), "OKAY");
  EXPECT_EQ(One("reboot-recovery"), "OKAY");
  EXPECT_EQ(One("flashing lock"), "OKAY");
  EXPECT_EQ(One("shutdown"), "OKAY");
  auto text = testing::ReadFile(out);
  EXPECT_EQ(std::string(text.begin(), text.end()), "reboot recovery b 0 board9\nshutdown  b 1 board9\n");
}

// serve --mmc serves the boot areas by U-Boot's names; the kernel's node
// names reach them too, and nothing else is taken for one.
TEST_F(SessionTest, BootAreasAnswerToTheKernelsNamesToo) {
  parts_.push_back({"mmc0boot1", 0, 6 * kMiB, kMiB});
  mem_.Allow(6 * kMiB, kMiB);
  io::Geometry g{.size = mem_.disk().size(), .logical_block = 512, .physical_block = 4096,
                 .mem_align = 512, .offset_align = 512, .max_request = kMiB, .direct = false};
  device_ = std::make_unique<FastbootDevice>(DeviceConfig{.max_download_size = 2 * kMiB},
                                             Storage::ForQueue(&mem_, g, parts_), PersistentState::InMemory());
  EXPECT_EQ(One("getvar:partition-size:mmcblk0boot1"), "OKAY0x0000000000100000");
  EXPECT_EQ(One("getvar:partition-size:mmc0boot1"), "OKAY0x0000000000100000");
  EXPECT_EQ(One("getvar:partition-size:mmcblk0boot0"), "FAILpartition 'mmcblk0boot0' not found");
  EXPECT_EQ(One("getvar:partition-size:mmcblk0boot1x"), "FAILpartition 'mmcblk0boot1x' not found");
  EXPECT_EQ(One("getvar:partition-size:mmcblkboot1"), "FAILpartition 'mmcblkboot1' not found");
  auto image = SparseBuilder::RandomBytes(64 * 1024, 49);
  EXPECT_EQ(Flash("mmcblk0boot1", image), (std::vector<std::string>{"OKAY", "OKAY"}));
  auto got = Bytes(parts_.back());
  EXPECT_TRUE(std::equal(image.begin(), image.end(), got.begin()));
  ExpectGuardsIntact();
}

// --- stream-flash: the next download written while it arrives -----------------

TEST_F(SessionTest, StreamFlashWritesSparseAndRawImagesAsTheyArrive) {
  EXPECT_EQ(One("getvar:stream-flash"), "OKAYyes");
  for (bool write_behind : {false, true}) {
    Make({.write_behind = write_behind});
    SparseBuilder b(4096);
    b.RawBlocks(100, 41).Fill(4, 0x11223344).DontCare(2).RawBlocks(30, 42).Fill(20, 0).Crc();
    auto simg = b.Build();
    auto raw = SparseBuilder::RandomBytes(kMiB - 5000, 43);  // odd size: a staged tail
    ScriptedConnection t;
    t.SetMaxSlice(7777);
    t.Command("stream-flash:system").Command("download:" + Hex8(simg.size())).Data(simg).Command("flash:system")
        .Command("stream-flash:boot").Command("download:" + Hex8(raw.size())).Data(raw).Command("flash:boot")
        .Command("getvar:version");
    std::string queued = write_behind ? "OKAYqueued (write-behind)" : "OKAY";
    EXPECT_EQ(Run(t), (std::vector<std::string>{"OKAY", "OKAY", queued, "OKAY", "OKAY", queued, "OKAY0.4"}))
        << write_behind;
    auto got = Bytes(parts_[2]);
    const auto& want = b.expanded();
    EXPECT_TRUE(std::equal(want.begin(), want.begin() + 104 * 4096, got.begin()));
    EXPECT_TRUE(std::all_of(got.begin() + 104 * 4096, got.begin() + 106 * 4096, [](uint8_t x) { return x == kGuard; }))
        << "DONT_CARE must not be written";
    EXPECT_TRUE(std::equal(want.begin() + 106 * 4096, want.end(), got.begin() + 106 * 4096));
    auto boot = Bytes(parts_[0]);  // boot -> boot_a, the current slot
    EXPECT_TRUE(std::equal(raw.begin(), raw.end(), boot.begin()));
    EXPECT_EQ(mem_.unsynced_bytes(), 0u);
    ExpectGuardsIntact();
  }
}

// The proof that the bytes go out while the download arrives: a client that
// goes away half way leaves the half it sent written (as far as whole
// writes took it), and the next command hears how far the stream got.
TEST_F(SessionTest, StreamFlashOfAnAbandonedDownloadKeepsWhatArrivedAndSaysSo) {
  auto raw = SparseBuilder::RandomBytes(kMiB, 44);
  ScriptedConnection t;
  t.SetMaxSlice(64 * 1024);
  t.Command("stream-flash:system").Command("download:" + Hex8(raw.size()))
      .Data(std::vector<uint8_t>(raw.begin(), raw.begin() + kMiB / 2)).Close();
  Run(t);
  std::string next = testing::RunOne(device_.get(), "getvar:version", /*whole_fail=*/true);
  EXPECT_TRUE(next.starts_with("FAILstream-flash to 'system' failed")) << next;
  EXPECT_NE(next.find("written up to byte 524288 as it arrived"), std::string::npos) << next;
  EXPECT_EQ(mem_.bytes_written(), kMiB / 2);
  auto got = Bytes(parts_[2]);
  EXPECT_TRUE(std::equal(raw.begin(), raw.begin() + kMiB / 2, got.begin()));
  EXPECT_TRUE(std::all_of(got.begin() + kMiB / 2, got.end(), [](uint8_t x) { return x == kGuard; }));
  EXPECT_EQ(One("getvar:version"), "OKAY0.4");  // said once
  EXPECT_EQ(One("flash:system"), "FAILno image downloaded");
  ExpectGuardsIntact();
}

TEST_F(SessionTest, StreamFlashRefusesBeforeWritingWhatDoesNotFit) {
  auto before = mem_.disk();
  auto raw = SparseBuilder::RandomBytes(kMiB + 4096, 45);
  ScriptedConnection t;
  t.Command("stream-flash:boot_a").Command("download:" + Hex8(raw.size())).Data(raw).Command("flash:boot_a");
  auto r = Run(t);
  ASSERT_EQ(r.size(), 3u);
  EXPECT_TRUE(r[2].starts_with("FAILstream-flash to 'boot_a' failed")) << r[2];
  EXPECT_NE(testing::RunOne(device_.get(), "getvar:version"), "");
  SparseBuilder b(4096);
  b.RawBlocks(1, 1).DontCare(1000);  // its header says 4 MB: more than misc's 64 KiB
  auto simg = b.Build();
  ScriptedConnection u;
  u.Command("stream-flash:misc").Command("download:" + Hex8(simg.size())).Data(simg).Command("flash:misc");
  r = Run(u);
  ASSERT_EQ(r.size(), 3u);
  EXPECT_TRUE(r[2].starts_with("FAILstream-flash to 'misc' failed")) << r[2];
  std::string infos;
  for (const auto& line : u.Infos()) infos += line + " ";
  EXPECT_NE(infos.find("nothing written"), std::string::npos) << infos;
  EXPECT_EQ(mem_.disk(), before);
  EXPECT_EQ(mem_.bytes_written(), 0u);
}

// A stream checks the image as it writes: a bad chunk stops it there, and the
// FAIL says how far it got; nothing lands outside the partition.
TEST_F(SessionTest, StreamFlashOfACorruptImageStopsAtTheFaultAndSaysHowFar) {
  SparseBuilder b(4096);
  b.RawBlocks(64, 46).Chunk(sparse::kChunkRaw, 1, std::vector<uint8_t>(100, 1)).RawBlocks(1, 3);
  auto simg = b.Build();
  ScriptedConnection t;
  t.SetMaxSlice(4096);
  t.Command("stream-flash:system").Command("download:" + Hex8(simg.size())).Data(simg).Command("flash:system");
  auto r = Run(t);
  ASSERT_EQ(r.size(), 3u);
  EXPECT_TRUE(r[2].starts_with("FAIL")) << r[2];
  std::string said;
  for (const auto& line : t.Infos()) said += line + " ";
  said += r[2];
  EXPECT_NE(said.find("invalid"), std::string::npos) << said;
  EXPECT_NE(said.find("as it arrived"), std::string::npos) << said;
  auto got = Bytes(parts_[2]);
  auto first = SparseBuilder::RandomBytes(64 * 4096, 46);
  EXPECT_TRUE(std::equal(first.begin(), first.end(), got.begin()));
  ExpectGuardsIntact();
  EXPECT_EQ(One("getvar:version"), "OKAY0.4");  // the error was said once
}

TEST_F(SessionTest, StreamFlashWithAWrongCrc32FailsAfterTheLastByte) {
  SparseBuilder b(4096);
  b.RawBlocks(3, 1).Fill(4, 0x11223344).CrcValue(0x12345678).RawBlocks(1, 2);
  auto simg = b.Build();
  ScriptedConnection t;
  t.Command("stream-flash:system").Command("download:" + Hex8(simg.size())).Data(simg).Command("flash:system");
  auto r = Run(t);
  ASSERT_EQ(r.size(), 3u);
  EXPECT_TRUE(r[2].starts_with("FAILinvalid sparse image, written to 'system'")) << r[2];
}

TEST_F(SessionTest, StreamFlashNamesOnePartitionAndOneDownload) {
  Make({.critical = {"boot"}});
  EXPECT_EQ(One("stream-flash:nope"), "FAILpartition 'nope' not found");
  EXPECT_EQ(One("stream-flash:boot_a"), "FAILcritical partition 'boot_a': flashing unlock_critical");
  EXPECT_EQ(One("stream-flash:"), "FAILmissing partition name");
  auto a = SparseBuilder::RandomBytes(64 * 1024, 47), c = SparseBuilder::RandomBytes(64 * 1024, 48);
  ScriptedConnection t;
  // The flash must name the partition the stream went to; the stream request
  // holds for one download only, even a refused one.
  t.Command("stream-flash:system").Command("download:" + Hex8(a.size())).Data(a).Command("flash:misc")
      .Command("stream-flash:misc").Command("download:ffffffff").Command("download:" + Hex8(c.size())).Data(c)
      .Command("flash:misc");
  auto r = Run(t);
  ASSERT_EQ(r.size(), 7u);
  EXPECT_EQ(r[2], "FAILdownload went to 'system' (stream-flash), not 'misc'");
  EXPECT_TRUE(r[4].starts_with("FAILdownload of 4294967295 bytes")) << r[4];
  EXPECT_EQ(r[6], "OKAY");
  auto sys = Bytes(parts_[2]);
  EXPECT_TRUE(std::equal(a.begin(), a.end(), sys.begin()));  // as stream-flash:system asked
  auto misc = Bytes(parts_[3]);
  EXPECT_TRUE(std::equal(c.begin(), c.end(), misc.begin()));
  ExpectGuardsIntact();
}

TEST_F(SessionTest, StreamFlashIsRefusedWhileLocked) {
  EXPECT_EQ(One("flashing lock"), "OKAY");
  EXPECT_EQ(One("stream-flash:system"), "FAILstream-flash: locked (fastboot flashing unlock)");
  EXPECT_EQ(One("getvar:stream-flash"), "OKAYyes");
}

}  // namespace
}  // namespace flashpipe::fastboot
