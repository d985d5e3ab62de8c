// Reading back through a session: fetch, upload after oem stage or fetch,
// oem digest; bounds, lock, read errors and clients gone mid-phase, over the
// scripted transport and an in-memory disk.
#include "fastboot/readback.h"

#include <gtest/gtest.h>
#include <openssl/sha.h>

#include <random>
#include <thread>

#include "fastboot/session.h"
#include "testing/fastboot_fakes.h"
#include "testing/session_runner.h"
#include "testing/fault_queue.h"

namespace flashpipe::fastboot {
namespace {

using testing::MemQueue;
using testing::ScriptedConnection;

constexpr uint64_t kMiB = 1 << 20;

// The reference: OpenSSL's one-shot SHA256 over the bytes, as hex.
std::string OpenSslSha256(std::span<const uint8_t> bytes) {
  uint8_t md[SHA256_DIGEST_LENGTH];
  ::SHA256(bytes.data(), bytes.size(), md);
  std::string hex;
  for (uint8_t b : md) hex += fmt::format("{:02x}", b);
  return hex;
}

class ReadbackTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::mt19937 rng(42);
    for (auto& b : mem_.disk()) b = static_cast<uint8_t>(rng());
    Make({});
  }

  void Make(WriteOptions options, io::IoQueue* queue = nullptr, bool direct = false) {
    parts_ = {{"boot_a", 0, 1 * kMiB, kMiB},
              {"boot_b", 0, 2 * kMiB, kMiB},
              {"system", 0, 3 * kMiB, 2 * kMiB},
              {"misc", 0, 5 * kMiB + 4096, 64 * 1024}};
    for (const auto& p : parts_) mem_.Allow(p.offset, p.size);
    io::Geometry g{.size = mem_.disk().size(), .logical_block = 512, .physical_block = 4096,
                   .mem_align = 512, .offset_align = 512, .max_request = kMiB, .direct = direct};
    DeviceConfig config;
    config.max_download_size = 2 * kMiB;
    device_ = std::make_unique<FastbootDevice>(config, Storage::ForQueue(queue ? queue : &mem_, g, parts_, options),
                                               PersistentState::InMemory());
  }

  std::vector<std::string> Run(ScriptedConnection& t) { return testing::RunSession(device_.get(), t); }
  // The final response; a FAIL's whole reason (sent ahead as INFO lines).
  std::string One(const std::string& command) { return testing::RunOne(device_.get(), command, /*whole_fail=*/true); }
  std::string Bytes(const std::string& part, uint64_t offset, uint64_t size) {
    for (const auto& p : parts_) {
      if (p.name == part) return std::string(mem_.disk().begin() + p.offset + offset,
                                             mem_.disk().begin() + p.offset + offset + size);
    }
    ADD_FAILURE() << "no partition " << part;
    return {};
  }
  std::span<const uint8_t> Span(const std::string& s) { return {reinterpret_cast<const uint8_t*>(s.data()), s.size()}; }
  // Every read of the medium stayed inside partition `part`.
  void ExpectReadsInside(const std::string& part) {
    for (const auto& p : parts_) {
      if (p.name != part) continue;
      for (auto [begin, end] : mem_.reads()) {
        EXPECT_GE(begin, p.offset) << part;
        EXPECT_LE(end, p.offset + p.size) << part;
      }
    }
  }
  // The digest a session answered: the two "sha256 i/2" INFO lines.
  static std::string DigestOf(const ScriptedConnection& t) {
    std::string hex;
    for (const auto& info : t.Infos()) {
      if (info.starts_with("sha256 1/2 ") || info.starts_with("sha256 2/2 ")) hex += info.substr(11);
    }
    return hex;
  }

  MemQueue mem_{6 * kMiB};
  std::vector<Partition> parts_;
  std::unique_ptr<FastbootDevice> device_;
};

TEST_F(ReadbackTest, FetchSendsTheRangeAsOneDataPhase) {
  struct Case {
    std::string command, part;
    uint64_t offset, size;
  } cases[] = {
      {"fetch:system", "system", 0, 2 * kMiB},
      {"fetch:system:0x1000:0x2000", "system", 0x1000, 0x2000},
      {"fetch:system:4096:8192", "system", 4096, 8192},
      {"fetch:misc:1:7", "misc", 1, 7},              // inside one block
      {"fetch:system:0x1ff000", "system", 0x1ff000, 0x1000},  // to the end
      {"fetch:boot", "boot_a", 0, kMiB},             // the current slot
  };
  for (const auto& c : cases) {
    mem_.ClearReads();
    ScriptedConnection t;
    t.Command(c.command);
    EXPECT_EQ(Run(t), std::vector<std::string>{"OKAY"}) << c.command;
    EXPECT_EQ(t.sent().front(), fmt::format("DATA{:08x}", c.size)) << c.command;
    EXPECT_EQ(t.data_phases(), 1);
    EXPECT_TRUE(t.data() == Bytes(c.part, c.offset, c.size)) << c.command;
    ExpectReadsInside(c.part);
  }
}

// With O_DIRECT, an offset inside a block is read from the block's start:
// still never outside the partition, and only the asked bytes are sent.
TEST_F(ReadbackTest, UnalignedRangeWithDirectIoStaysInsideThePartition) {
  Make({}, nullptr, /*direct=*/true);
  ScriptedConnection t;
  t.Command("fetch:misc:0x3:0xfffd");  // to the partition's last byte
  EXPECT_EQ(Run(t), std::vector<std::string>{"OKAY"});
  EXPECT_TRUE(t.data() == Bytes("misc", 3, 0xfffd));
  ASSERT_FALSE(mem_.reads().empty());
  EXPECT_EQ(mem_.reads().front().first, 5 * kMiB + 4096);  // the block's start
  ExpectReadsInside("misc");
}

TEST_F(ReadbackTest, RangesOutsideThePartitionFailWithTheReason) {
  EXPECT_EQ(One("fetch:system:0x200001"), "FAILoffset 0x200001 is past the end of 'system' (0x200000 bytes)");
  EXPECT_EQ(One("fetch:system:0x1ff000:0x1001"), "FAIL0x1ff000+0x1001 runs past the end of 'system' (0x200000 bytes)");
  EXPECT_EQ(One("fetch:system:0xffffffffffffffff:2"), "FAILoffset 0xffffffffffffffff is past the end of 'system' (0x200000 bytes)");
  EXPECT_EQ(One("fetch:system:1:0xffffffffffffffff"), "FAIL0x1+0xffffffffffffffff runs past the end of 'system' (0x200000 bytes)");
  EXPECT_EQ(One("fetch:nope"), "FAILpartition 'nope' not found");
  EXPECT_EQ(One("fetch:"), "FAILmissing partition name");
  EXPECT_EQ(One("fetch:system:010"), "FAILoffset '010': decimal with a leading 0 (octal?)");
  EXPECT_EQ(One("fetch:system:0x"), "FAILoffset '0x': not a number (decimal or 0x hex)");
  EXPECT_EQ(One("fetch:system:12z"), "FAILoffset '12z': not a number (decimal or 0x hex)");
  EXPECT_EQ(One("fetch:system:0:1:2"), "FAILexpected PARTITION[:OFFSET[:SIZE]]");
  EXPECT_EQ(One("fetch:system:99999999999999999999"), "FAILoffset '99999999999999999999': more than 64 bits");
  EXPECT_TRUE(mem_.reads().empty());
}

TEST_F(ReadbackTest, EmptyRangeIsOkayWithoutDataPhase) {  // as fastbootd
  ScriptedConnection t;
  t.Command("fetch:system:0x200000").Command("fetch:system:0:0");
  EXPECT_EQ(Run(t), (std::vector<std::string>{"OKAYread 0 bytes", "OKAYread 0 bytes"}));
  EXPECT_EQ(t.data_phases(), 0);
}

// A host reads a phase in one read: no more than max-download-size, nor
// than the transport carries (UDP: 1 MiB); getvar says the limit.
TEST_F(ReadbackTest, MaxFetchSizeFollowsTheDownloadLimitAndTheTransport) {
  EXPECT_EQ(One("getvar:max-fetch-size"), "OKAY0x00200000");
  ScriptedConnection t;
  t.SetMaxData(kMiB);
  t.Command("getvar:max-fetch-size").Command("fetch:system").Command("fetch:system:0:0x100000");
  auto r = Run(t);
  ASSERT_EQ(r.size(), 3u);
  EXPECT_EQ(r[0], "OKAY0x00100000");
  EXPECT_EQ(r[1], "FAIL0x200000 bytes > max-fetch-size 0x100000: fetch in parts");
  EXPECT_EQ(r[2], "OKAY");
  EXPECT_EQ(t.data().size(), kMiB);
  ScriptedConnection none;
  none.SetMaxData(0);
  none.Command("getvar:max-fetch-size");
  EXPECT_EQ(Run(none), std::vector<std::string>{"FAILfetch is not supported over this transport"});
}

TEST_F(ReadbackTest, LockedDeviceGivesOutNothing) {
  ASSERT_EQ(One("flashing lock"), "OKAY");
  ScriptedConnection t;
  t.Command("fetch:system:0:16").Command("upload").Command("oem stage:system:0:16").Command("oem digest:misc:0:1");
  auto r = Run(t);
  ASSERT_EQ(r.size(), 4u);
  EXPECT_EQ(r[0], "FAILfetch: locked (fastboot flashing unlock)");
  EXPECT_EQ(r[1], "FAILupload: locked (fastboot flashing unlock)");
  EXPECT_EQ(r[2], "FAILoem stage: locked (fastboot flashing unlock)");
  EXPECT_EQ(r[3], "FAILoem digest: locked (fastboot flashing unlock)");
  EXPECT_EQ(t.data_phases(), 0);
  EXPECT_EQ(DigestOf(t), "");
  EXPECT_TRUE(mem_.reads().empty());
}

// upload (fastboot get_staged) sends what oem stage or the last fetch named,
// as it reads back when uploaded, also in a later session (29.0.6 stages
// and uploads in two runs).
TEST_F(ReadbackTest, UploadSendsTheStagedRangeReadNow) {
  ScriptedConnection t;
  t.Command("upload").Command("oem stage:system:0x1000:0x3000").Command("upload");
  auto r = Run(t);
  // The whole reason went out as INFO lines; the FAIL keeps its first part.
  EXPECT_EQ(r, (std::vector<std::string>{"FAILnothing staged: oem stage PARTITION[:OFFSET[:SIZE]] or...", "OKAY", "OKAY"}));
  EXPECT_EQ(t.Infos().front(), "nothing staged: oem stage PARTITION[:OFFSET[:SIZE]] or fetch");
  EXPECT_EQ(t.Infos().back(), "staged 0x3000 bytes of 'system' for upload");
  EXPECT_TRUE(t.data() == Bytes("system", 0x1000, 0x3000));

  mem_.disk()[3 * kMiB + 0x1000] ^= 0xff;  // changed behind the daemon's back
  ScriptedConnection next_session;
  next_session.Command("upload");
  EXPECT_EQ(Run(next_session), std::vector<std::string>{"OKAY"});
  EXPECT_TRUE(next_session.data() == Bytes("system", 0x1000, 0x3000));

  ScriptedConnection again;
  again.Command("oem stage system 4096 12288").Command("upload").Command("fetch:misc:16:32").Command("upload");
  EXPECT_EQ(Run(again), (std::vector<std::string>{"OKAY", "OKAY", "OKAY", "OKAY"}));
  EXPECT_TRUE(again.data() == Bytes("system", 0x1000, 0x3000) + Bytes("misc", 16, 32) + Bytes("misc", 16, 32));
  EXPECT_EQ(One("oem stage:system:0:0"), "FAILoem stage: 0 bytes");

  ASSERT_EQ(One("oem stage:system:0:0x180000"), "OKAY");
  ScriptedConnection udp_like;  // a staged range too large for this transport
  udp_like.SetMaxData(kMiB);
  udp_like.Command("upload");
  EXPECT_EQ(Run(udp_like), std::vector<std::string>{"FAILstaged 0x180000 bytes > max-fetch-size 0x100000"});
  EXPECT_EQ(udp_like.data_phases(), 0);
}

// The medium fails part way: the host still gets every announced byte (zeros
// for the rest, so it is not left waiting), then a FAIL naming the place.
TEST_F(ReadbackTest, ReadErrorMidPhaseCompletesThePhaseThenFails) {
  testing::FaultQueue faulty(&mem_);
  faulty.FailReads(3 * kMiB + 0x40000, EIO);
  Make({.request_size = 64 << 10}, &faulty);
  ScriptedConnection t;
  t.Command("fetch:system:0:0x80000").Command("getvar:version");
  auto r = Run(t);
  ASSERT_EQ(r.size(), 2u);
  EXPECT_TRUE(r[0].starts_with("FAILpartition 'system'")) << r[0];
  EXPECT_EQ(r[1], "OKAY0.4");  // the session goes on
  ASSERT_EQ(t.data().size(), 0x80000u);
  EXPECT_TRUE(t.data().substr(0, 0x30000) == Bytes("system", 0, 0x30000));
  EXPECT_EQ(t.data().substr(0x40000), std::string(0x40000, '\0'));
  std::string said;
  for (const auto& i : t.Infos()) said += i;
  EXPECT_NE(said.find("Input/output error"), std::string::npos) << said;
}

TEST_F(ReadbackTest, ClientGoneMidPhaseEndsTheSession) {
  ScriptedConnection t;
  t.SetDataGoneAfter(100000);
  t.Command("fetch:system").Command("getvar:version");
  EXPECT_TRUE(Session(device_.get(), &t).Run().ok());
  EXPECT_EQ(t.Finals(), std::vector<std::string>{});  // nothing after DATA
  EXPECT_LE(t.data().size(), 100000u);
}

TEST_F(ReadbackTest, DigestMatchesOpenSsl) {
  struct Case {
    std::string command, part;
    uint64_t offset, size;
  } cases[] = {
      {"oem digest:system", "system", 0, 2 * kMiB},
      {"oem digest:system:0x1000:0x2000", "system", 0x1000, 0x2000},
      {"oem digest system 3 1000000", "system", 3, 1000000},
      {"oem digest:misc:0x10000", "misc", 0x10000, 0},  // nothing: SHA-256 of no bytes
      {"oem digest:boot_b", "boot_b", 0, kMiB},
  };
  for (const auto& c : cases) {
    mem_.ClearReads();
    ScriptedConnection t;
    t.Command(c.command);
    EXPECT_EQ(Run(t), std::vector<std::string>{"OKAY"}) << c.command;
    EXPECT_EQ(DigestOf(t), OpenSslSha256(Span(Bytes(c.part, c.offset, c.size)))) << c.command;
    EXPECT_EQ(t.data_phases(), 0);
    ExpectReadsInside(c.part);
  }
  EXPECT_EQ(One("oem digest:system:0x1ff000:0x1001"), "FAIL0x1ff000+0x1001 runs past the end of 'system' (0x200000 bytes)");
  EXPECT_EQ(One("oem digest"), "FAILmissing partition name");
}

TEST_F(ReadbackTest, DigestSeesAByteChangedBehindTheDaemon) {
  ScriptedConnection t;
  t.Command("oem digest:system:0:0x100000");
  Run(t);
  std::string before = DigestOf(t);
  mem_.disk()[3 * kMiB + 0x12345] ^= 0x01;
  ScriptedConnection t2;
  t2.Command("oem digest:system:0:0x100000");
  Run(t2);
  EXPECT_NE(DigestOf(t2), before);
  EXPECT_EQ(DigestOf(t2), OpenSslSha256(Span(Bytes("system", 0, 0x100000))));
}

// A long digest keeps the client waiting with INFO progress lines, about one
// a second, before the digest itself.
TEST_F(ReadbackTest, LongDigestSendsKeepalives) {
  testing::FaultQueue slow(&mem_);
  slow.OnSubmit([](const io::IoOp& op) {
    if (op.kind == io::OpKind::kRead) std::this_thread::sleep_for(std::chrono::milliseconds(40));
  });
  Make({.request_size = 64 << 10}, &slow);
  ScriptedConnection t;
  t.Command("oem digest:system");  // 32 reads of 64 KiB, 1.3 s
  EXPECT_EQ(Run(t), std::vector<std::string>{"OKAY"});
  auto infos = t.Infos();
  ASSERT_GE(infos.size(), 3u);
  EXPECT_TRUE(infos[0].starts_with("digest 'system' ")) << infos[0];
  EXPECT_TRUE(infos[infos.size() - 2].starts_with("sha256 1/2 "));
  EXPECT_EQ(DigestOf(t), OpenSslSha256(Span(Bytes("system", 0, 2 * kMiB))));
}

// Write-behind: fetch and digest wait for the queued write, so they read
// what was flashed.
TEST_F(ReadbackTest, ReadsWaitForWriteBehind) {
  DeviceConfig config;
  config.max_download_size = 2 * kMiB;
  config.write_behind = true;
  io::Geometry g{.size = mem_.disk().size(), .direct = false};
  for (const auto& p : parts_) mem_.Allow(p.offset, p.size);
  device_ = std::make_unique<FastbootDevice>(config, Storage::ForQueue(&mem_, g, parts_), PersistentState::InMemory());
  std::string image(64 * 1024, 'W');
  mem_.Hold();
  std::thread release([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    mem_.Release();
  });
  ScriptedConnection t;
  t.Command("download:00010000").Data(image).Command("flash:misc").Command("fetch:misc:0:0x10000");
  auto r = Run(t);
  release.join();
  EXPECT_EQ(r.back(), "OKAY");
  EXPECT_TRUE(t.data() == image);
}

TEST(ReadbackParseTest, RangeArguments) {
  auto a = ParseRangeArg("boot");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->partition, "boot");
  EXPECT_FALSE(a->offset.has_value());
  auto b = ParseRangeArg("boot:0x00001000:16");
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(*b->offset, 0x1000u);
  EXPECT_EQ(*b->size, 16u);
  EXPECT_EQ(*ParseRangeArg("boot:0")->offset, 0u);
  EXPECT_FALSE(ParseRangeArg("boot:").ok());
  EXPECT_FALSE(ParseRangeArg("boot:1:").ok());
  EXPECT_FALSE(ParseRangeArg(":1").ok());
  EXPECT_FALSE(ParseRangeArg("boot:-1").ok());
}

}  // namespace
}  // namespace flashpipe::fastboot
