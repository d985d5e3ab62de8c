#include "io/gpt.h"

#include <gtest/gtest.h>

#include <cstring>

#include "base/crc32.h"
#include "base/endian.h"

namespace flashpipe::io {
namespace {

constexpr uint32_t kSector = 512;
constexpr uint64_t kLbas = 2048;  // 1 MiB disk

struct Entry {
  std::u16string name;
  uint64_t first, last;
};

// A disk with a valid GPT (both copies), built by the rules, not by a tool.
class GptDisk {
 public:
  explicit GptDisk(std::vector<Entry> entries) : disk_(kLbas * kSector, 0) {
    std::vector<uint8_t> array(128 * 128, 0);
    for (size_t i = 0; i < entries.size(); ++i) {
      uint8_t* e = &array[i * 128];
      e[0] = 0xAF;  // any non-zero type GUID
      e[16] = static_cast<uint8_t>(i + 1);
      StoreLE<uint64_t>(e + 32, entries[i].first);
      StoreLE<uint64_t>(e + 40, entries[i].last);
      for (size_t k = 0; k < entries[i].name.size(); ++k) StoreLE<uint16_t>(e + 56 + 2 * k, entries[i].name[k]);
    }
    WriteCopy(1, kLbas - 1, 2, array);
    WriteCopy(kLbas - 1, 1, kLbas - 33, array);
  }
  std::vector<uint8_t>& bytes() { return disk_; }
  Result<GptTable> Read() {
    return ReadGpt([this](uint64_t off, std::span<uint8_t> out) -> Status {
      if (off + out.size() > disk_.size()) return IoError("beyond", EIO);
      std::memcpy(out.data(), disk_.data() + off, out.size());
      return Status::Ok();
    }, disk_.size());
  }
  uint8_t* Header(uint64_t lba) { return &disk_[lba * kSector]; }
  void Recrc(uint64_t lba) {
    uint8_t* h = Header(lba);
    StoreLE<uint32_t>(h + 16, 0);
    StoreLE<uint32_t>(h + 16, Crc32Update(0, h, 92));
  }

 private:
  void WriteCopy(uint64_t lba, uint64_t alt, uint64_t entries_lba, const std::vector<uint8_t>& array) {
    std::memcpy(&disk_[entries_lba * kSector], array.data(), array.size());
    uint8_t* h = &disk_[lba * kSector];
    std::memcpy(h, "EFI PART", 8);
    StoreLE<uint32_t>(h + 8, 0x00010000);
    StoreLE<uint32_t>(h + 12, 92);
    StoreLE<uint64_t>(h + 24, lba);
    StoreLE<uint64_t>(h + 32, alt);
    StoreLE<uint64_t>(h + 40, 34);
    StoreLE<uint64_t>(h + 48, kLbas - 34);
    StoreLE<uint64_t>(h + 72, entries_lba);
    StoreLE<uint32_t>(h + 80, 128);
    StoreLE<uint32_t>(h + 84, 128);
    StoreLE<uint32_t>(h + 88, Crc32Update(0, array.data(), array.size()));
    StoreLE<uint32_t>(h + 16, Crc32Update(0, h, 92));
  }
  std::vector<uint8_t> disk_;
};

GptDisk Standard() { return GptDisk({{u"boot_a", 40, 99}, {u"system", 100, 999}, {u"data\u00e9", 1000, 2000}}); }

TEST(GptTest, ReadsNamesAndRanges) {
  auto disk = Standard();
  auto t = disk.Read();
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_FALSE(t->from_backup);
  EXPECT_TRUE(t->warnings.empty());
  ASSERT_EQ(t->partitions.size(), 3u);
  EXPECT_EQ(t->partitions[0].name, "boot_a");
  EXPECT_EQ(t->partitions[1].first_lba, 100u);
  EXPECT_EQ(t->partitions[1].last_lba, 999u);
  EXPECT_EQ(t->partitions[2].name, "data\xc3\xa9");
}

TEST(GptTest, BadPrimaryHeaderCrcFallsBackToBackupWithWarning) {
  auto disk = Standard();
  disk.Header(1)[40] ^= 1;  // first usable LBA, CRC now wrong
  auto t = disk.Read();
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_TRUE(t->from_backup);
  ASSERT_EQ(t->warnings.size(), 1u);
  EXPECT_NE(t->warnings[0].find("CRC32"), std::string::npos) << t->warnings[0];
  EXPECT_EQ(t->partitions.size(), 3u);
}

TEST(GptTest, BadPrimaryEntryArrayFallsBackToBackup) {
  auto disk = Standard();
  disk.bytes()[2 * kSector + 60] ^= 0x40;  // a name byte in the primary array
  auto t = disk.Read();
  ASSERT_TRUE(t.ok());
  EXPECT_TRUE(t->from_backup);
  EXPECT_NE(t->warnings[0].find("entry array"), std::string::npos) << t->warnings[0];
  EXPECT_EQ(t->partitions[0].name, "boot_a");
}

TEST(GptTest, BadBackupIsOnlyAWarning) {
  auto disk = Standard();
  disk.Header(kLbas - 1)[0] = 'X';
  auto t = disk.Read();
  ASSERT_TRUE(t.ok());
  EXPECT_FALSE(t->from_backup);
  ASSERT_EQ(t->warnings.size(), 1u);
  EXPECT_NE(t->warnings[0].find("backup GPT unusable"), std::string::npos);
}

TEST(GptTest, BothBadIsAnError) {
  auto disk = Standard();
  disk.Header(1)[0] = 'X';
  disk.Header(kLbas - 1)[16] ^= 1;
  auto t = disk.Read();
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("primary GPT"), std::string::npos);
  EXPECT_NE(t.status().message().find("backup GPT"), std::string::npos);
}

TEST(GptTest, OverlappingEntriesRejected) {
  GptDisk disk({{u"a", 40, 200}, {u"b", 200, 300}});
  auto t = disk.Read();
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("overlap"), std::string::npos) << t.status().ToString();
}

// Names are text from the disk: in an error message their control
// characters are escaped, so they cannot forge lines in the daemon's log.
TEST(GptTest, ControlCharactersOfNamesAreEscapedInErrors) {
  GptDisk disk({{u"a\nserve: forged", 40, 200}, {u"b\x1b[2J", 200, 300}});
  auto t = disk.Read();
  ASSERT_FALSE(t.ok());
  std::string m = t.status().message();
  EXPECT_NE(m.find("'a\\x0aserve: forged' and 1 'b\\x1b[2J' overlap"), std::string::npos) << m;
  EXPECT_EQ(m.find_first_of("\n\x1b"), std::string::npos) << m;
  GptDisk outside({{u"x\ry", 40, kLbas - 2}});
  m = outside.Read().status().message();
  EXPECT_NE(m.find("'x\\x0dy'"), std::string::npos) << m;
}

TEST(GptTest, EntryOutsideUsableRangeRejected) {
  GptDisk disk({{u"a", 40, kLbas - 2}});
  auto t = disk.Read();
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("outside usable"), std::string::npos) << t.status().ToString();
}

TEST(GptTest, HostileSizesDoNotReadOutOfRange) {
  auto disk = Standard();
  StoreLE<uint32_t>(disk.Header(1) + 80, 0x7fffffff);  // entry count
  disk.Recrc(1);
  StoreLE<uint64_t>(disk.Header(kLbas - 1) + 72, kLbas + 5);  // entries beyond the disk
  disk.Recrc(kLbas - 1);
  auto t = disk.Read();
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("not supported"), std::string::npos) << t.status().ToString();
  EXPECT_NE(t.status().message().find("outside disk"), std::string::npos) << t.status().ToString();
}

TEST(GptTest, NoGptAtAll) {
  std::vector<uint8_t> zeros(kLbas * kSector, 0);
  auto t = ReadGpt([&](uint64_t off, std::span<uint8_t> out) {
    std::memcpy(out.data(), zeros.data() + off, out.size());
    return Status::Ok();
  }, zeros.size());
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("no 'EFI PART' signature"), std::string::npos);
}

TEST(GptTest, Utf16Names) {
  const uint8_t surrogate[] = {0x3d, 0xd8, 0x00, 0xde, 'a', 0, 0, 0, 'b', 0};
  EXPECT_EQ(Utf16LeToUtf8(surrogate), "\xf0\x9f\x98\x80" "a");
  const uint8_t lone[] = {0x00, 0xdc, 'x', 0};
  EXPECT_EQ(Utf16LeToUtf8(lone), "\xef\xbf\xbdx");
}

}  // namespace
}  // namespace flashpipe::io
