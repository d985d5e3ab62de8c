// `flash gpt` and `oem format` (session_table.cc) over a disk image file
// opened as serve opens it (Storage::OpenGpt): the table is written, the
// partition list is read again in the same session, refusals write nothing.
#include <gtest/gtest.h>

#include <filesystem>

#include "fastboot/session.h"
#include "partition/gpt_image.h"
#include "partition/uboot_string.h"
#include "testing/fastboot_fakes.h"
#include "testing/session_runner.h"
#include "testing/sparse_builder.h"
#include "testing/temp_dir.h"

namespace flashpipe::fastboot {
namespace {

using testing::ScriptedConnection;
using testing::SparseBuilder;
using Lines = std::vector<std::string>;

constexpr uint64_t kMiB = 1 << 20;
constexpr char kLayout[] = "name=boot,size=4MiB;name=system,size=8MiB;name=userdata,size=-;";

std::string Hex8(size_t n) { return fmt::format("{:08x}", n); }
std::vector<uint8_t> Bytes(std::string_view s) { return {s.begin(), s.end()}; }

class SessionTableTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = dir_ / "disk.img";
    testing::WriteFile(path_, {});
    std::filesystem::resize_file(path_, 64 * kMiB);
  }
  void Open(DeviceConfig config = {}) {
    device_.reset();
    std::vector<std::string> warnings;
    auto s = Storage::OpenGpt(path_, {}, &warnings);
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    config.max_download_size = 16 * kMiB;
    device_ = std::make_unique<FastbootDevice>(config, std::move(*s), PersistentState::InMemory());
  }
  // download + flash gpt; the final answers, the INFO lines in *infos.
  Lines FlashGpt(const std::vector<uint8_t>& source, Lines* infos = nullptr) {
    ScriptedConnection t;
    t.Command("download:" + Hex8(source.size())).Data(source).Command("flash:gpt");
    Lines finals = testing::RunSession(device_.get(), t);
    if (infos) *infos = t.Infos();
    return finals;
  }
  std::string One(const std::string& command) { return testing::RunOne(device_.get(), command); }

  testing::TempDir dir_;
  std::string path_;
  std::unique_ptr<FastbootDevice> device_;
};

TEST_F(SessionTableTest, BlankDiskThenFlashGptThenTheNewPartitionsAtOnce) {
  Open();
  EXPECT_TRUE(device_->storage().partitions().empty());
  EXPECT_EQ(One("getvar:partition-size:system"), "FAILpartition 'system' not found");
  Lines infos;
  Lines finals = FlashGpt(Bytes(kLayout), &infos);
  ASSERT_EQ(finals.size(), 2u);
  EXPECT_TRUE(finals[1].starts_with("OKAYtable written, 3 partitions")) << finals[1];
  EXPECT_EQ(infos[0], "added boot 4.0 MiB");
  EXPECT_EQ(infos[1], "added system 8.0 MiB");
  EXPECT_EQ(One("getvar:partition-size:system"), "OKAY0x0000000000800000");
  EXPECT_EQ(One("getvar:partition-type:system"), "OKAYext4");  // the GPT's linux type
  // The next flash lands in the new system: 1 MiB (alignment) + 4 MiB.
  auto image = SparseBuilder::RandomBytes(kMiB, 7);
  ScriptedConnection t;
  t.Command("download:" + Hex8(image.size())).Data(image).Command("flash:system");
  EXPECT_EQ(testing::RunSession(device_.get(), t), (Lines{"OKAY", "OKAY"}));
  auto disk = testing::ReadFile(path_);
  EXPECT_TRUE(std::equal(image.begin(), image.end(), disk.begin() + 5 * kMiB));
}

TEST_F(SessionTableTest, AGptImageAndWhatChanged) {
  Open();
  ASSERT_EQ(FlashGpt(Bytes(kLayout))[1].substr(0, 4), "OKAY");
  auto l = partition::ParseUbootString("name=boot,size=4MiB;name=system,size=16MiB;name=misc,size=1MiB;");
  ASSERT_TRUE(l.ok());
  auto table = partition::Resolve(*l, {.size = 64 * kMiB, .sector_size = 512});
  ASSERT_TRUE(table.ok());
  partition::GptImage g = partition::EncodeGpt(*table);
  std::vector<uint8_t> image = g.mbr;
  image.insert(image.end(), g.primary_header.begin(), g.primary_header.end());
  image.insert(image.end(), g.entries.begin(), g.entries.end());
  Lines infos;
  EXPECT_TRUE(FlashGpt(image, &infos)[1].starts_with("OKAYtable written, 3 partitions"));
  EXPECT_EQ(infos, (Lines{"resized system 8.0 MiB -> 16.0 MiB", "added misc 1.0 MiB", "removed userdata",
                          "1 unchanged"}));
  EXPECT_EQ(One("getvar:partition-size:system"), "OKAY0x0000000001000000");
  EXPECT_EQ(One("getvar:partition-size:userdata"), "FAILpartition 'userdata' not found");
}

TEST_F(SessionTableTest, RefusalsWriteNothingAndKeepThePartitions) {
  Open();
  ASSERT_EQ(FlashGpt(Bytes(kLayout))[1].substr(0, 4), "OKAY");
  const auto before = testing::ReadFile(path_);
  EXPECT_EQ(FlashGpt(Bytes("name=big,size=1GiB;"))[1].substr(0, 4), "FAIL");
  EXPECT_EQ(FlashGpt({0x00, 0x01, 0x02, 0x03})[1],
            "FAILflash gpt: neither a GPT image nor a layout text (no 'EFI...");
  ASSERT_TRUE(device_->state().SetLocked(true).ok());
  EXPECT_EQ(One("oem format"), "FAILoem format: locked (fastboot flashing unlock)");
  ScriptedConnection t;
  t.Command("flash:gpt");
  EXPECT_EQ(testing::RunSession(device_.get(), t), (Lines{"FAILflash: locked (fastboot flashing unlock)"}));
  EXPECT_EQ(testing::ReadFile(path_), before);
  EXPECT_EQ(One("getvar:partition-size:system"), "OKAY0x0000000000800000");
}

TEST_F(SessionTableTest, OemFormatWritesTheConfiguredLayout) {
  Open();
  EXPECT_EQ(One("oem format"), "FAILoem format: no layout (start serve with --layout FILE)");
  Open({.layout = "label: gpt\nsize=2MiB, name=misc\nname=system\n", .layout_name = "board.sfdisk"});
  EXPECT_EQ(One("oem format extra"), "FAILoem format: takes no argument (serve --layout FILE)");
  EXPECT_TRUE(One("oem format").starts_with("OKAYtable written, 2 partitions")) << One("getvar:version");
  EXPECT_EQ(One("getvar:partition-size:misc"), "OKAY0x0000000000200000");
}

// A write-behind flash queued before the table change is on the disk
// before the table is: it went where the old table said.
TEST_F(SessionTableTest, WriteBehindFlashesAreDrainedFirst) {
  Open({.write_behind = true});
  ASSERT_EQ(FlashGpt(Bytes(kLayout))[1].substr(0, 4), "OKAY");
  auto image = SparseBuilder::RandomBytes(2 * kMiB, 9);
  auto layout = Bytes("name=boot,size=4MiB;name=userdata,size=-;");
  ScriptedConnection t;
  t.Command("download:" + Hex8(image.size())).Data(image).Command("flash:system")
      .Command("download:" + Hex8(layout.size())).Data(layout).Command("flash:gpt");
  Lines finals = testing::RunSession(device_.get(), t);
  ASSERT_EQ(finals.size(), 4u);
  EXPECT_EQ(finals[1], "OKAYqueued (write-behind)");
  EXPECT_TRUE(finals[3].starts_with("OKAYtable written, 2 partitions")) << finals[3];
  auto disk = testing::ReadFile(path_);
  EXPECT_TRUE(std::equal(image.begin(), image.end(), disk.begin() + 5 * kMiB));
  EXPECT_EQ(device_->storage().Find("system"), nullptr);
}

TEST_F(SessionTableTest, PartitionFilesHaveNoTable) {
  testing::WriteFile(dir_ / "boot.img", std::vector<uint8_t>(kMiB));
  auto s = Storage::OpenSpecs({{.name = "boot", .path = dir_ / "boot.img"}}, {});
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  device_ = std::make_unique<FastbootDevice>(DeviceConfig{}, std::move(*s), PersistentState::InMemory());
  auto finals = FlashGpt(Bytes(kLayout));
  EXPECT_TRUE(finals[1].starts_with("FAILthe partitions are --partition files")) << finals[1];
}

}  // namespace
}  // namespace flashpipe::fastboot

namespace flashpipe::fastboot {
namespace {

TEST_F(SessionTableTest, CriticalPartitionsKeepTheirPlaceWhileLocked) {
  Open({.critical = {"boot"}});
  ASSERT_EQ(FlashGpt(Bytes(kLayout))[1].substr(0, 4), "OKAY");  // no old table: nothing to keep
  const auto before = testing::ReadFile(path_);
  EXPECT_EQ(FlashGpt(Bytes("name=boot,size=8MiB;name=system,size=-;"))[1],
            "FAILcritical partition 'boot': flashing unlock_critical (the...");
  EXPECT_EQ(FlashGpt(Bytes("name=system,size=-;"))[1].substr(0, 4), "FAIL");
  EXPECT_EQ(testing::ReadFile(path_), before);
  // boot kept: the rest may change.
  EXPECT_TRUE(FlashGpt(Bytes("name=boot,size=4MiB;name=system,size=-;"))[1].starts_with("OKAYtable written"));
  ASSERT_TRUE(device_->state().SetCriticalLocked(false).ok());
  EXPECT_TRUE(FlashGpt(Bytes("name=boot,size=8MiB;name=system,size=-;"))[1].starts_with("OKAYtable written"));
}

}  // namespace
}  // namespace flashpipe::fastboot
