#include "powercut/write_log.h"

#include <gtest/gtest.h>

#include <cstring>

#include "base/endian.h"

namespace flashpipe::powercut {
namespace {

// A log device laid out as drivers/md/dm-log-writes.c writes it.
class LogBuilder {
 public:
  explicit LogBuilder(uint32_t ss = 512) : ss_(ss), bytes_(ss, 0) {}
  LogBuilder& Entry(uint64_t sector, uint64_t nr, uint64_t flags, std::string_view mark = "", uint8_t fill = 0) {
    std::vector<uint8_t> h(ss_, 0);
    StoreLE<uint64_t>(h.data(), sector);
    StoreLE<uint64_t>(h.data() + 8, nr);
    StoreLE<uint64_t>(h.data() + 16, flags);
    StoreLE<uint64_t>(h.data() + 24, mark.size());
    std::memcpy(h.data() + 32, mark.data(), mark.size());
    bytes_.insert(bytes_.end(), h.begin(), h.end());
    if ((flags & (kDiscard | kMark)) == 0) bytes_.insert(bytes_.end(), nr * ss_, fill);
    ++count_;
    return *this;
  }
  std::vector<uint8_t> Build(uint64_t count_override = UINT64_MAX) const {
    std::vector<uint8_t> out = bytes_;
    StoreLE<uint64_t>(out.data(), kLogMagic);
    StoreLE<uint64_t>(out.data() + 8, kLogVersion);
    StoreLE<uint64_t>(out.data() + 16, count_override == UINT64_MAX ? count_ : count_override);
    StoreLE<uint32_t>(out.data() + 24, ss_);
    return out;
  }

 private:
  uint32_t ss_;
  std::vector<uint8_t> bytes_;
  uint64_t count_ = 0;
};

TEST(WriteLogTest, ParsesWritesFlushesMarksAndDiscards) {
  auto bytes = LogBuilder()
                   .Entry(8, 2, 0, "", 0xAA)
                   .Entry(0, 0, kFlush)
                   .Entry(0, 0, kMark, "step 1")
                   .Entry(4, 1, kFua, "", 0xBB)
                   .Entry(16, 8, kDiscard)
                   .Entry(2, 1, kFlush | kFua, "", 0xCC)
                   .Entry(0, 0, kMark, "dm-log-writes-end")
                   .Build();
  auto log = WriteLog::Parse(bytes, 1 << 20);
  ASSERT_TRUE(log.ok()) << log.status().ToString();
  const auto& e = log->entries();
  ASSERT_EQ(e.size(), 6u);
  EXPECT_EQ(e[0].offset, 8u * 512);
  EXPECT_EQ(e[0].length, 1024u);
  EXPECT_EQ(log->data(e[0]).size(), 1024u);
  EXPECT_EQ(log->data(e[0])[1023], 0xAA);
  EXPECT_TRUE(e[1].has_flush());
  EXPECT_FALSE(e[1].changes_medium());
  EXPECT_EQ(e[2].mark, "step 1");
  EXPECT_TRUE(e[3].is_fua());
  EXPECT_EQ(log->data(e[3])[0], 0xBB);
  EXPECT_TRUE(e[4].is_discard());
  EXPECT_TRUE(e[4].changes_medium());
  EXPECT_TRUE(log->data(e[4]).empty());
  EXPECT_EQ(log->data(e[5])[511], 0xCC);
  EXPECT_EQ(log->writes(), 4u);
  EXPECT_EQ(log->flushes(), 2u);
  EXPECT_EQ(log->marks(), 1u);
}

TEST(WriteLogTest, SectorsAreInUnitsOfTheLogSectorSize) {
  auto log = WriteLog::Parse(LogBuilder(4096).Entry(3, 2, 0, "", 1).Build(), 1 << 20);
  ASSERT_TRUE(log.ok()) << log.status().ToString();
  EXPECT_EQ(log->sector_size(), 4096u);
  EXPECT_EQ(log->entries()[0].offset, 3u * 4096);
  EXPECT_EQ(log->entries()[0].length, 8192u);
}

TEST(WriteLogTest, RefusesWhatIsNotALog) {
  auto bytes = LogBuilder().Entry(0, 1, 0).Build();
  bytes[0] ^= 1;
  EXPECT_EQ(WriteLog::Parse(bytes, 1 << 20).status().message(), "log: no dm-log-writes magic at byte 0");
  EXPECT_EQ(WriteLog::Parse(std::vector<uint8_t>(10), 1 << 20).status().code(), Code::kCorrupt);
}

TEST(WriteLogTest, EveryEntryMustLieInsideTheLogAndTheDevice) {
  auto past_log = LogBuilder().Entry(0, 1, 0).Build(5);
  EXPECT_EQ(WriteLog::Parse(past_log, 1 << 20).status().code(), Code::kCorrupt);
  auto outside = LogBuilder().Entry(2047, 2, 0).Build();
  auto s = WriteLog::Parse(outside, 1 << 20).status();
  EXPECT_EQ(s.message(), "log entry 0 at byte 0x200: 2 sectors at sector 2047 lie outside the device of 1048576 bytes");
  auto cut = LogBuilder().Entry(0, 4, 0).Build();
  cut.resize(cut.size() - 1);
  EXPECT_EQ(WriteLog::Parse(cut, 1 << 20).status().message(),
            "log entry 0: its 2048 bytes of data run past the end of the log");
}

TEST(WriteLogTest, TheModelBuildsTheSameEntries) {
  WriteLog log;
  std::vector<uint8_t> data(1024, 7);
  log.AddWrite(4096, data);
  log.AddFlush();
  log.AddMark("done");
  log.AddDiscard(8192, 512);
  ASSERT_EQ(log.entries().size(), 4u);
  EXPECT_EQ(log.data(log.entries()[0])[5], 7);
  EXPECT_EQ(log.writes(), 2u);
  EXPECT_EQ(log.entries()[2].mark, "done");
}

}  // namespace
}  // namespace flashpipe::powercut
