#include "powercut/crash_states.h"

#include <gtest/gtest.h>

#include <set>

namespace flashpipe::powercut {
namespace {

constexpr uint64_t kSector = 512;

// A write of `sectors` sectors filled with `value` at sector `at`.
void Write(WriteLog& log, uint64_t at, uint8_t value, uint64_t sectors = 1, uint64_t flags = 0) {
  std::vector<uint8_t> data(sectors * kSector, value);
  log.AddWrite(at * kSector, data, flags);
}

// The value of each sector's first byte.
std::vector<uint8_t> Sectors(std::span<const uint8_t> device) {
  std::vector<uint8_t> out;
  for (uint64_t i = 0; i < device.size() / kSector; ++i) out.push_back(device[i * kSector]);
  return out;
}

TEST(CrashStatesTest, SmallWindowGetsEverySubsetOnce) {
  WriteLog log;
  Write(log, 0, 1);
  Write(log, 1, 2);
  Write(log, 2, 3);
  log.AddFlush();
  auto en = EnumerateCrashStates(log, Budget{});
  ASSERT_EQ(en.states.size(), 9u);  // 2^3 before the flush, one after it
  EXPECT_EQ(en.windows, 2u);
  EXPECT_EQ(en.largest_window, 3u);
  DeviceReplay replay(log, std::vector<uint8_t>(4 * kSector, 0));
  std::set<std::vector<uint8_t>> contents;
  for (const auto& s : en.states) {
    if (s.flush_index == 0) contents.insert(Sectors(replay.Build(s)));
  }
  EXPECT_EQ(contents.size(), 8u);  // every combination of the three sectors
  EXPECT_TRUE(contents.contains(std::vector<uint8_t>({0, 2, 0, 0})));
  const CrashState& last = en.states.back();
  EXPECT_EQ(last.flush_index, 1u);
  EXPECT_EQ(last.volatile_writes, 0u);
  EXPECT_EQ(Sectors(replay.Build(last)), std::vector<uint8_t>({1, 2, 3, 0}));
}

TEST(CrashStatesTest, AFlushMakesEverythingBeforeItDurable) {
  WriteLog log;
  Write(log, 0, 1);
  log.AddFlush();
  Write(log, 0, 2);
  auto en = EnumerateCrashStates(log, Budget{});
  DeviceReplay replay(log, std::vector<uint8_t>(kSector, 0));
  std::set<uint8_t> after_flush;
  for (const auto& s : en.states) {
    if (s.flush_index == 1) after_flush.insert(replay.Build(s)[0]);
  }
  EXPECT_EQ(after_flush, std::set<uint8_t>({1, 2}));  // never 0 again
}

TEST(CrashStatesTest, FuaWritesAlwaysLandAndVolatileOnesMayNot) {
  WriteLog log;
  Write(log, 0, 1);
  Write(log, 1, 2, 1, kFua);
  auto en = EnumerateCrashStates(log, Budget{});
  DeviceReplay replay(log, std::vector<uint8_t>(2 * kSector, 0));
  std::set<std::vector<uint8_t>> at_end;
  for (const auto& s : en.states) {
    if (s.cut == 2) at_end.insert(Sectors(replay.Build(s)));
  }
  EXPECT_EQ(at_end, (std::set<std::vector<uint8_t>>{{0, 2}, {1, 2}}));
}

TEST(CrashStatesTest, StatesAfterAMarkCountItAsAcknowledged) {
  WriteLog log;
  Write(log, 0, 1);
  log.AddMark("step 1");
  Write(log, 1, 2);
  auto en = EnumerateCrashStates(log, Budget{});
  size_t before = 0, after = 0;
  for (const auto& s : en.states) (s.acks == 0 ? before : after)++;
  // Before: {} and {w0}; after the mark: {} and {w0} again, then those with w1.
  EXPECT_EQ(before, 2u);
  EXPECT_EQ(after, 2u + 2u);
}

TEST(CrashStatesTest, LargeWindowsAreSampledWithinTheBudget) {
  WriteLog log;
  for (uint8_t i = 0; i < 40; ++i) Write(log, i, static_cast<uint8_t>(i + 1));
  log.AddMark("done");
  Budget b;
  b.random_subsets = 10;
  b.tears = 0;
  auto en = EnumerateCrashStates(log, b);
  // The initial state, an ordered state per write, then at the cut before
  // the mark and after it: empty, ordered and 10 random subsets each.
  EXPECT_EQ(en.states.size(), 1u + 40u + 2u * 11u + 1u);
  b.max_states = 20;
  auto cut = EnumerateCrashStates(log, b);
  EXPECT_EQ(cut.states.size(), 20u);
  EXPECT_EQ(cut.generated, en.states.size());
  size_t anchors = 0;
  for (const auto& s : cut.states) anchors += s.anchor;
  EXPECT_GE(anchors, 4u);  // initial, ordered and empty at the mark
  EXPECT_TRUE(std::is_sorted(cut.states.begin(), cut.states.end(),
                             [](const CrashState& a, const CrashState& b) { return a.cut < b.cut; }));
}

TEST(CrashStatesTest, TornWritesLandInWholeSectors) {
  WriteLog log;
  Write(log, 0, 9, 8);
  Budget b;
  b.tears = 4;
  auto en = EnumerateCrashStates(log, b);
  DeviceReplay replay(log, std::vector<uint8_t>(8 * kSector, 0));
  size_t torn = 0;
  for (const auto& s : en.states) {
    if (s.torn == SIZE_MAX) continue;
    ++torn;
    auto got = Sectors(replay.Build(s));
    size_t landed = std::count(got.begin(), got.end(), 9);
    EXPECT_GT(landed, 0u) << s.Describe();
    EXPECT_LT(landed, 8u) << s.Describe();
    auto bytes = replay.Build(s);
    for (uint64_t i = 0; i < 8; ++i) {  // each sector all old or all new
      EXPECT_EQ(std::count(bytes.begin() + i * kSector, bytes.begin() + (i + 1) * kSector, bytes[i * kSector]),
                static_cast<long>(kSector));
    }
  }
  EXPECT_EQ(torn, 4u);
}

TEST(CrashStatesTest, ATearUnitKeepsWritesInsideOneUnitWhole) {
  WriteLog log;
  Write(log, 2, 9, 2);   // 1 KiB at byte 1024: inside the first 4 KiB
  Write(log, 6, 8, 4);   // 2 KiB at byte 3072: across two 4 KiB units
  Budget b;
  b.tears = 8;
  b.tear_unit = 4096;
  auto en = EnumerateCrashStates(log, b);
  DeviceReplay replay(log, std::vector<uint8_t>(16 * kSector, 0));
  size_t torn = 0;
  for (const auto& s : en.states) {
    if (s.torn == SIZE_MAX) continue;
    ++torn;
    EXPECT_EQ(s.torn, 1u) << s.Describe();
    auto got = Sectors(replay.Build(s));
    // Sectors 6-7 (unit 0) and 8-9 (unit 1) land or not together.
    EXPECT_EQ(got[6], got[7]) << s.Describe();
    EXPECT_EQ(got[8], got[9]) << s.Describe();
    EXPECT_NE(got[6], got[8]) << s.Describe();
  }
  EXPECT_GT(torn, 0u);
}

TEST(CrashStatesTest, DescribeNamesTheCutAndWhatLanded) {
  WriteLog log;
  Write(log, 0, 1);
  Write(log, 1, 2);
  log.AddFlush();
  Write(log, 2, 3);
  Write(log, 3, 4);
  auto en = EnumerateCrashStates(log, Budget{});
  const CrashState* pick = nullptr;
  for (const auto& s : en.states) {
    if (s.cut == 5 && s.landed.size() == 1) pick = &s;
  }
  ASSERT_NE(pick, nullptr);
  EXPECT_EQ(pick->Describe(),
            "cut after 5 log entries (write 4, flush 1, 0 acks): 1 of 2 writes since the last flush landed (entries 4)");
}

}  // namespace
}  // namespace flashpipe::powercut
